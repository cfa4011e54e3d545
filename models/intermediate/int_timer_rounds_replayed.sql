{#-
    Captured view rounds (contract §4, docs/decisions/0006): for every changed task with `update`
    records, each TimerGauge replayed exactly as Flink ran it, with the gauge's own clock readings:
    raw ts_ms, so a clock that runs backwards lowers a slot as in Flink (T13), where
    fct_subtask_seconds holds the clock instead. One row per (task, gauge, round): round k is the
    gauge's k-th `update` (V3), its slot every increment counted since update k - 1 (T4, T10).

    State machine (T2, T3, T11): after a `start` the gauge measures and after an `end` it does not,
    whatever it did before, except a `start` at clock 0 (T1). So the state before an event is the
    last start/end before it, and the time an `end` or `update` adds while measuring is its ts_ms
    minus the anchor (updTS): the last effective `start` or `update` before it. Before FLINK-35764
    (Flink 1.15 to 1.18, flink-semantics.md 2.4) an `end` adds the time since the last effective
    `start` instead, so a measurement spanning an update counts its part before the update twice.

    Value (T5, T6, T12): the sum of the last min(k, N) slots divided by 5 * min(k, N), truncated,
    clamped to [0, 1000]. N and the `end` rule follow each job's Flink release
    (int_job_releases_resolved: N = 1 before 1.17, which had no ring). A changed task replays all
    its events: a round depends on every event before it (the ring, the open measurement), and
    captured tasks are few next to their events.
-#}
{%- set slots = tidemark_gauge_window_slots() | int -%}

with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}
    where is_changed

),

update_tasks as (

    -- Tasks with any `update` record in bronze: a cheap filter (row groups without one are
    -- skipped), so that the windows below read only tasks that may have rounds.
    select distinct
        job_id,
        vertex_id,
        subtask_index,
        attempt
    from {{ ref('stg_bronze__timer_events') }}
    where action = 'update'

),

job_releases as (

    select * from {{ ref('int_job_releases_resolved') }}

),

planned_with_updates as (

    select planned.*
    from planned
    left semi join update_tasks
        on
            {{ tidemark_same_task('planned', 'update_tasks') }}

),

staged_timer_events as (

    -- Every event of each task: a task here has an `update` among them (update_tasks).
    {{ tidemark_timer_events_of('planned_with_updates') }}

),

gauge_events as (

    select
        staged_timer_events.job_id,
        staged_timer_events.vertex_id,
        staged_timer_events.subtask_index,
        staged_timer_events.attempt,
        staged_timer_events.gauge,
        staged_timer_events.seq,
        staged_timer_events.ts_ms,
        staged_timer_events.action,
        staged_timer_events.published,
        job_releases.gauge_window_slots as window_slots,
        job_releases.is_end_counted_from_start
    from staged_timer_events
    inner join job_releases
        on staged_timer_events.job_id = job_releases.job_id

),

with_state as (

    select
        gauge_events.*,
        -- T1/T2/T3/T11: measuring after the last start (not at clock 0), not after an end.
        coalesce(
            last_value(
                case
                    when gauge_events.action = 'start' then gauge_events.ts_ms != 0
                    when gauge_events.action = 'end' then false
                end,
                true
            ) over earlier_events,
            false
        ) as was_measuring,
        -- The round this event's increment is counted in: one more than the updates before it.
        coalesce(
            count(case when gauge_events.action = 'update' then 1 end) over earlier_events, 0
        ) + 1 as round_no
    from gauge_events
    window earlier_events as (
        partition by job_id, vertex_id, subtask_index, attempt, gauge
        order by seq
        rows between unbounded preceding and 1 preceding
    )

),

with_anchor as (

    select
        with_state.*,
        -- updTS (T2, T4): the last effective start or the last update before this event.
        last_value(
            case
                when
                    with_state.action = 'update'
                    or (with_state.action = 'start' and not with_state.was_measuring)
                    then with_state.ts_ms
            end,
            true
        ) over earlier_events as anchor_ms,
        -- startTS: the last effective start before this event (an `end`'s anchor before
        -- FLINK-35764).
        last_value(
            case
                when
                    with_state.action = 'start' and not with_state.was_measuring
                    then with_state.ts_ms
            end,
            true
        ) over earlier_events as start_anchor_ms
    from with_state
    window earlier_events as (
        partition by job_id, vertex_id, subtask_index, attempt, gauge
        order by seq
        rows between unbounded preceding and 1 preceding
    )

),

increments as (

    select
        *,
        -- T3/T4/T10/T13: what an end or update adds while measuring; negative if the clock ran
        -- back.
        case
            when was_measuring and action = 'end' and is_end_counted_from_start
                then ts_ms - start_anchor_ms
            when was_measuring and action in ('end', 'update') then ts_ms - anchor_ms
            else 0
        end as increment_ms
    from with_anchor

),

slots as (

    -- One row per update: its round's slot. Increments after the last update wait for the next.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        gauge,
        round_no,
        max(window_slots) as window_slots,
        sum(increment_ms) as slot_ms,
        max(case when action = 'update' then seq end) as update_seq,
        max(case when action = 'update' then ts_ms end) as update_ms,
        max(case when action = 'update' then published end) as published
    from increments
    group by job_id, vertex_id, subtask_index, attempt, gauge, round_no
    having count(case when action = 'update' then 1 end) = 1

),

windowed as (

    select
        slots.*,
        -- T6: the slots written so far, at most the ring's size.
        least(slots.round_no, slots.window_slots) as written_slots,
        -- A ring of window_slots: the span's, or 1 (no ring, T5) before Flink 1.17.
        case
            when slots.window_slots = 1 then slots.slot_ms else sum(slots.slot_ms) over ring
        end as ring_ms,
        -- T9: never windowed, never clamped.
        sum(slots.slot_ms) over (
            partition by
                slots.job_id, slots.vertex_id, slots.subtask_index, slots.attempt, slots.gauge
            order by slots.round_no
            rows between unbounded preceding and current row
        ) as accumulated_ms
    from slots
    window ring as (
        partition by job_id, vertex_id, subtask_index, attempt, gauge
        order by round_no
        rows between {{ slots - 1 }} preceding and current row
    )

),

final as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        gauge,
        round_no,
        update_seq,
        update_ms,
        slot_ms,
        window_slots,
        written_slots,
        -- T6/T12: truncating division by 5k, clamped to [0, 1000].
        least(greatest(ring_ms div (5 * written_slots), 0), 1000) as value_ms_per_second,
        published,
        accumulated_ms
    from windowed

)

select * from final
