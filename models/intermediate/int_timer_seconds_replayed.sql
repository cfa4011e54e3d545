{#-
    The task-seconds this run recomputes: for every changed task, each second from the first
    replayed one through the second of its horizon, with the milliseconds of that second inside
    effective measurements of each gauge, and the task's state after the events whose clock falls
    before the end of the second (what the next run's plan may resume from).

    Milliseconds by integration, exact to the millisecond: a gauge's time in second S, up to
    E = min(S + 1000, horizon), is (measuring at S ? E - S : 0) plus, for every effective event
    in S at clock c, (E - c) for a start and -(E - c) for an end. A measurement still open at the
    horizon so counts up to it (contract §4), and one spanning many seconds needs no row per
    second. One pass over the events, one over the seconds.

    A table rebuilt every run: the work of one run, written once and read by the marts and the
    checkpoint. In a full plan it holds every task-second.
-#}

with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}
    where is_changed

),

sequenced_events as (

    select * from {{ ref('int_timer_events_sequenced') }}

),

seconds_grid as (

    -- Every second, with or without events (contract §4: no gaps).
    select
        task_key,
        explode(
            sequence(
                replay_from_second_ms,
                {{ tidemark_floor_ms('horizon_ms', 1000) }},
                cast(1000 as bigint)
            )
        ) as second_start_ms
    from planned

),

event_changes as (

    select
        sequenced_events.task_key,
        {{ tidemark_floor_ms('sequenced_events.clock_ms', 1000) }} as second_start_ms,
        sequenced_events.seq,
        sequenced_events.ts_ms,
        sequenced_events.clock_ms,
        sequenced_events.gauge,
        sequenced_events.is_start,
        -- The change's share of its second: from the event to the end of the second or horizon.
        sequenced_events.open_change * (
            least(
                {{ tidemark_floor_ms('sequenced_events.clock_ms', 1000) }} + 1000,
                planned.horizon_ms
            )
            - sequenced_events.clock_ms
        ) as change_ms
    from sequenced_events
    inner join planned
        on sequenced_events.task_key = planned.task_key

),

task_second_rows as (

    select
        task_key,
        second_start_ms,
        cast(null as bigint) as seq,
        cast(null as bigint) as ts_ms,
        cast(null as bigint) as clock_ms,
        cast(null as string) as gauge,
        cast(null as boolean) as is_start,
        cast(0 as bigint) as change_ms
    from seconds_grid

    union all

    select
        task_key,
        second_start_ms,
        seq,
        ts_ms,
        clock_ms,
        gauge,
        is_start,
        change_ms
    from event_changes

),

per_second as (

    select
        task_key,
        second_start_ms,
        coalesce(sum(change_ms) filter (where gauge = 'idle'), 0) as idle_change_ms,
        coalesce(sum(change_ms) filter (where gauge = 'soft_backpressured'), 0)
            as soft_backpressured_change_ms,
        coalesce(sum(change_ms) filter (where gauge = 'hard_backpressured'), 0)
            as hard_backpressured_change_ms,
        max(seq) as last_seq,
        max(clock_ms) as last_clock_ms,
        -- The smallest ts_ms placed in the second: a later replay from before it reads no older.
        min(ts_ms) as min_ts_ms,
        -- A gauge is measuring after its latest event iff that was a start (T2, T3).
        max_by(is_start, seq) filter (where gauge = 'idle') as idle_last_is_start,
        max_by(is_start, seq) filter (where gauge = 'soft_backpressured')
            as soft_backpressured_last_is_start,
        max_by(is_start, seq) filter (where gauge = 'hard_backpressured')
            as hard_backpressured_last_is_start
    from task_second_rows
    group by task_key, second_start_ms

),

end_states as (

    -- The state after every event with a clock before the end of the second.
    select
        per_second.*,
        coalesce(last_value(per_second.last_seq, true) over task_so_far, planned.replay_after_seq)
            as end_seq,
        coalesce(
            last_value(per_second.last_clock_ms, true) over task_so_far, planned.replay_clock_ms
        ) as end_clock_ms,
        coalesce(
            last_value(per_second.idle_last_is_start, true) over task_so_far,
            planned.is_idle_open_at_anchor
        ) as is_idle_open,
        coalesce(
            last_value(per_second.soft_backpressured_last_is_start, true) over task_so_far,
            planned.is_soft_backpressured_open_at_anchor
        ) as is_soft_backpressured_open,
        coalesce(
            last_value(per_second.hard_backpressured_last_is_start, true) over task_so_far,
            planned.is_hard_backpressured_open_at_anchor
        ) as is_hard_backpressured_open,
        planned.is_idle_open_at_anchor,
        planned.is_soft_backpressured_open_at_anchor,
        planned.is_hard_backpressured_open_at_anchor,
        planned.job_id,
        planned.vertex_id,
        planned.subtask_index,
        planned.attempt,
        least(per_second.second_start_ms + 1000, planned.horizon_ms)
        - per_second.second_start_ms as second_length_ms,
        planned.first_ts_ms,
        planned.horizon_ms,
        planned.is_busy_time_enabled,
        planned.is_replayed_from_start,
        planned.processed_ingest_id
    from per_second
    inner join planned
        on per_second.task_key = planned.task_key
    window task_so_far as (
        partition by per_second.task_key
        order by per_second.second_start_ms
        rows between unbounded preceding and current row
    )

),

start_states as (

    -- Measuring at the start of a second = at the end of the one before (or at the anchor).
    select
        end_states.*,
        coalesce(lag(is_idle_open) over task_seconds, is_idle_open_at_anchor)
            as is_idle_open_at_start,
        coalesce(
            lag(is_soft_backpressured_open) over task_seconds,
            is_soft_backpressured_open_at_anchor
        ) as is_soft_backpressured_open_at_start,
        coalesce(
            lag(is_hard_backpressured_open) over task_seconds,
            is_hard_backpressured_open_at_anchor
        ) as is_hard_backpressured_open_at_start
    from end_states
    window task_seconds as (
        partition by task_key
        order by second_start_ms
    )

),

final as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        second_start_ms,
        case when is_idle_open_at_start then second_length_ms else 0 end
        + idle_change_ms as idle_ms,
        case when is_soft_backpressured_open_at_start then second_length_ms else 0 end
        + soft_backpressured_change_ms as soft_backpressured_ms,
        case when is_hard_backpressured_open_at_start then second_length_ms else 0 end
        + hard_backpressured_change_ms as hard_backpressured_ms,
        end_seq,
        end_clock_ms,
        min_ts_ms,
        is_idle_open,
        is_soft_backpressured_open,
        is_hard_backpressured_open,
        first_ts_ms,
        horizon_ms,
        is_busy_time_enabled,
        is_replayed_from_start,
        processed_ingest_id,
        {{ tidemark_hour_at('second_start_ms') }} as hour_at
    from start_states

)

select * from final
