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

    The same integration counts what the events change of the back-pressured samples in the
    second (B1; int_backpressure_samples_counted counts the samples, B2-B3): sample instants in
    [c, E) instead of milliseconds (tidemark_backpressure_samples_before), and "the soft or the
    hard gauge measures" instead of one gauge (their states after each event).
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
                recompute_from_ms,
                {{ tidemark_floor_ms('horizon_ms', 1000) }},
                cast(1000 as bigint)
            )
        ) as second_start_ms
    from planned

),

event_changes as (

    -- Per event, what it changes from its clock to the end of its second or the horizon: its
    -- gauge's milliseconds, and the back-pressured sample instants (B1: added by an event that
    -- opens the first of the soft and hard gauges, removed by one that closes the last).
    select
        task_key,
        second_start_ms,
        seq,
        ts_ms,
        clock_ms,
        gauge,
        is_idle_open_after,
        is_soft_backpressured_open_after,
        is_hard_backpressured_open_after,
        open_change * (second_end_ms - clock_ms) as change_ms,
        (
            case when backpressure_open_count > 0 then 1 else 0 end
            - case when backpressure_open_count - backpressure_open_change > 0 then 1 else 0 end
        ) * (
            {{ tidemark_backpressure_samples_before('second_end_ms') }}
            - {{ tidemark_backpressure_samples_before('clock_ms') }}
        ) as backpressured_samples_change
    from (
        select
            sequenced_events.*,
            {{ tidemark_floor_ms('sequenced_events.clock_ms', 1000) }} as second_start_ms,
            least(
                {{ tidemark_floor_ms('sequenced_events.clock_ms', 1000) }} + 1000,
                planned.horizon_ms
            ) as second_end_ms,
            case
                when sequenced_events.gauge in ('soft_backpressured', 'hard_backpressured')
                    then sequenced_events.open_change
                else 0
            end as backpressure_open_change,
            case when sequenced_events.is_soft_backpressured_open_after then 1 else 0 end
            + case when sequenced_events.is_hard_backpressured_open_after then 1 else 0 end
                as backpressure_open_count
        from sequenced_events
        inner join planned
            on sequenced_events.task_key = planned.task_key
    ) as events

),

task_second_rows as (

    select
        task_key,
        second_start_ms,
        cast(null as bigint) as seq,
        cast(null as bigint) as ts_ms,
        cast(null as bigint) as clock_ms,
        cast(null as string) as gauge,
        cast(null as boolean) as is_idle_open_after,
        cast(null as boolean) as is_soft_backpressured_open_after,
        cast(null as boolean) as is_hard_backpressured_open_after,
        cast(0 as bigint) as change_ms,
        cast(0 as bigint) as backpressured_samples_change
    from seconds_grid

    union all

    select * from event_changes

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
        sum(backpressured_samples_change) as backpressured_samples_change,
        max(seq) as last_seq,
        max(clock_ms) as last_clock_ms,
        -- The smallest ts_ms placed in the second: a later replay from before it reads no older.
        min(ts_ms) as min_ts_ms,
        -- The gauges' states after the second's last event (T2, T3: int_timer_events_sequenced).
        max_by(is_idle_open_after, seq) as is_idle_open_at_last_event,
        max_by(is_soft_backpressured_open_after, seq) as is_soft_backpressured_open_at_last_event,
        max_by(is_hard_backpressured_open_after, seq) as is_hard_backpressured_open_at_last_event
    from task_second_rows
    group by task_key, second_start_ms

),

end_states as (

    -- The state after every event with a clock before the end of the second.
    select
        per_second.*,
        -- Before the task's first replayed event: the anchor's seq (none from the first, -1).
        coalesce(
            last_value(per_second.last_seq, true) over task_so_far,
            nullif(planned.resume_after_seq, -1)
        ) as end_seq,
        coalesce(
            last_value(per_second.last_clock_ms, true) over task_so_far, planned.replay_clock_ms
        ) as end_clock_ms,
        coalesce(
            last_value(per_second.is_idle_open_at_last_event, true) over task_so_far,
            planned.is_idle_open_at_anchor
        ) as is_idle_open,
        coalesce(
            last_value(per_second.is_soft_backpressured_open_at_last_event, true) over task_so_far,
            planned.is_soft_backpressured_open_at_anchor
        ) as is_soft_backpressured_open,
        coalesce(
            last_value(per_second.is_hard_backpressured_open_at_last_event, true) over task_so_far,
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
        coalesce(lag(end_states.is_idle_open) over task_seconds, end_states.is_idle_open_at_anchor)
            as is_idle_open_at_start,
        coalesce(
            lag(end_states.is_soft_backpressured_open) over task_seconds,
            end_states.is_soft_backpressured_open_at_anchor
        ) as is_soft_backpressured_open_at_start,
        coalesce(
            lag(end_states.is_hard_backpressured_open) over task_seconds,
            end_states.is_hard_backpressured_open_at_anchor
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
        second_length_ms,
        -- B1: whether a sample at the second's start is back-pressured, and the events' change.
        coalesce(is_soft_backpressured_open_at_start or is_hard_backpressured_open_at_start, false)
            as is_backpressured_at_start,
        backpressured_samples_change,
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
        {{ tidemark_hour_at('second_start_ms') }} as hour_at,
        {{ tidemark_minute_slice('second_start_ms') }} as minute_slice
    from start_states

)

select * from final
