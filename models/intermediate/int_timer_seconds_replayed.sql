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

    The same integration counts the samples of Flink <= 1.12's sampled back pressure (B1-B3,
    int_backpressure_samples_counted): instead of milliseconds in [c, E) it counts the sample
    instants there (tidemark_backpressure_samples_before), and instead of one gauge it follows
    "the soft or the hard gauge measures" (the two gauges' states after each event,
    int_timer_events_sequenced).

    A table rebuilt every run: the work of one run, written once and read by the marts and the
    checkpoint. In a full plan it holds every task-second.
-#}
{%- set sampling = tidemark_backpressure_sampling() %}

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

    select
        sequenced_events.task_key,
        {{ tidemark_floor_ms('sequenced_events.clock_ms', 1000) }} as second_start_ms,
        sequenced_events.seq,
        sequenced_events.ts_ms,
        sequenced_events.clock_ms,
        sequenced_events.gauge,
        sequenced_events.is_idle_open_after,
        sequenced_events.is_soft_backpressured_open_after,
        sequenced_events.is_hard_backpressured_open_after,
        -- The change's share of its second: from the event to the end of the second or horizon.
        sequenced_events.open_change * (
            least(
                {{ tidemark_floor_ms('sequenced_events.clock_ms', 1000) }} + 1000,
                planned.horizon_ms
            )
            - sequenced_events.clock_ms
        ) as change_ms,
        -- The second's end, and how many of the soft and hard gauges measure after the event.
        least(
            {{ tidemark_floor_ms('sequenced_events.clock_ms', 1000) }} + 1000, planned.horizon_ms
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

),

event_sample_changes as (

    -- B1: a sample is back-pressured while the soft or the hard gauge measures (counted once
    -- when both do). An event that opens the first of them adds the sample instants from its
    -- clock to the end of its second, one that closes the last removes them.
    select
        event_changes.*,
        (
            case when event_changes.backpressure_open_count > 0 then 1 else 0 end
            - case
                when
                    event_changes.backpressure_open_count - event_changes.backpressure_open_change
                    > 0
                    then 1
                else 0
            end
        ) * (
            {{ tidemark_backpressure_samples_before('second_end_ms') }}
            - {{ tidemark_backpressure_samples_before('clock_ms') }}
        ) as backpressured_samples_change
    from event_changes

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
        change_ms,
        backpressured_samples_change
    from event_sample_changes

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

sampled_seconds as (

    -- B2/B3: the second's samples belong to the sampling that starts at its refresh interval
    -- (tidemark_backpressure_sampling: one at most). The task takes them only when it was
    -- already running when that sampling started (B2: else no sampling at all) and, within
    -- the second, before its horizon (samples after the task stopped are not taken).
    select
        start_states.*,
        {{ tidemark_floor_ms('start_states.second_start_ms', sampling.refresh_ms) }}
            as sampling_start_ms,
        case
            when
                {{ tidemark_floor_ms('start_states.second_start_ms', sampling.refresh_ms) }}
                >= start_states.first_ts_ms
                then {{ tidemark_backpressure_samples_before(
                    'start_states.second_start_ms + start_states.second_length_ms'
                ) }} - {{ tidemark_backpressure_samples_before('start_states.second_start_ms') }}
            else 0
        end as samples_taken
    from start_states

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
        sampling_start_ms,
        samples_taken,
        -- B1: the samples at instants inside the soft or the hard measurements.
        case
            when samples_taken = 0 then 0
            when is_soft_backpressured_open_at_start or is_hard_backpressured_open_at_start
                then samples_taken + backpressured_samples_change
            else backpressured_samples_change
        end as backpressured_samples,
        -- The instant of the second's last sample (B3 end-timestamp), NULL without samples.
        case
            when samples_taken > 0 then sampling_start_ms + (
                least(
                    {{ sampling.num_samples }},
                    (
                        second_start_ms + second_length_ms - sampling_start_ms
                        + {{ sampling.delay_ms - 1 }}
                    ) div {{ sampling.delay_ms }}
                ) - 1
            ) * {{ sampling.delay_ms }}
        end as last_sample_ms,
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
    from sampled_seconds

)

select * from final
