{#-
    Where tidemark's figures are not exact because a capture lost events (docs/decisions/
    0006-capture-from-flink.md, `capture_gap` records): per task, time ranges, merged where they
    overlap: from the gap's first missing event (ts_ms) until every timer gauge of the task has shown
    its state again. The capture writes effective transitions only (T2, T3 via the listener, T14),
    so after the last missing event a gauge keeps its state until its next captured `start` or
    `end`, and from that event on tidemark's replay agrees with Flink again: a `start` proves the
    gauge was closed before it (the replay, if it missed the end, still thinks it open and ignores
    the start, T11, but is open from there on like Flink), an `end` that it was open (when it
    opened is unknown, so the replay, which ignores that end, is wrong up to it). A gauge with no
    `start` or `end` after the gap stays unknown up to the task's horizon. The gauges of a task are
    those with any timer record (start, end, update) in it, so Flink <= 1.14's single back pressure
    gauge counts once and a capture without the reporter has no range. (Valves: a gap loses the
    valve's state to the end of the attempt; fct_valve_conformance reads the gaps directly.)

    Timer events are read from the bronze source, filtered to the tasks with gaps
    (tidemark_timer_events_of); with no gap in bronze at all (a capture that lost nothing) they are
    not read (tidemark_has_rows).
-#}
{%- set any_gaps = tidemark_has_rows(source('bronze', 'capture_gaps')) %}

with

gaps as (

    select * from {{ ref('stg_bronze__capture_gaps') }}

),

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

gap_tasks as (

    select distinct
        job_id,
        vertex_id,
        subtask_index,
        attempt
    from gaps

),

timer_events as (

    -- With the gauge each drives (M3).
    {{ tidemark_timer_events_of('gap_tasks') }}
    {%- if not any_gaps %}
    where false
    {%- endif %}

),

gaps_with_horizon as (

    select
        gaps.job_id,
        gaps.vertex_id,
        gaps.subtask_index,
        gaps.attempt,
        gaps.seq,
        gaps.to_seq,
        gaps.ts_ms,
        gaps.to_ts_ms,
        gaps.dropped,
        -- A gap of a task without events has no horizon: then it ends with its last missing event.
        coalesce(planned.horizon_ms, gaps.to_ts_ms) as horizon_ms
    from gaps
    left join planned
        on
            {{ tidemark_same_task('gaps', 'planned') }}

),

gauge_resyncs as (

    -- Per gap and gauge of its task (a gauge with any timer record in it): the ts_ms of the
    -- gauge's first start or end after the gap, or the task's horizon when there is none.
    select
        gaps_with_horizon.job_id,
        gaps_with_horizon.vertex_id,
        gaps_with_horizon.subtask_index,
        gaps_with_horizon.attempt,
        gaps_with_horizon.seq,
        gaps_with_horizon.ts_ms,
        gaps_with_horizon.to_ts_ms,
        gaps_with_horizon.dropped,
        timer_events.gauge,
        coalesce(
            min_by(timer_events.ts_ms, timer_events.seq) filter (
                where
                timer_events.action in ('start', 'end')
                and timer_events.seq > gaps_with_horizon.to_seq
            ),
            max(gaps_with_horizon.horizon_ms)
        ) as resync_ms
    from gaps_with_horizon
    inner join timer_events
        on
            {{ tidemark_same_task('gaps_with_horizon', 'timer_events') }}
    group by
        gaps_with_horizon.job_id,
        gaps_with_horizon.vertex_id,
        gaps_with_horizon.subtask_index,
        gaps_with_horizon.attempt,
        gaps_with_horizon.seq,
        gaps_with_horizon.ts_ms,
        gaps_with_horizon.to_ts_ms,
        gaps_with_horizon.dropped,
        timer_events.gauge

),

timer_ranges as (

    -- Until the last gauge is back; at least through the last missing event, so the second
    -- holding a gap is never shown as exact (and a clock read backwards cannot empty the range).
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        seq as from_seq,
        ts_ms as not_exact_from_ms,
        greatest(max(resync_ms), to_ts_ms + 1) as not_exact_to_ms,
        dropped
    from gauge_resyncs
    group by job_id, vertex_id, subtask_index, attempt, seq, ts_ms, to_ts_ms, dropped

),

ranges as (

    select * from timer_ranges

),

islands as (

    -- Overlapping or touching ranges of one task are merged: a range starts a new
    -- island when it begins after every earlier one has ended.
    select
        ordered.*,
        sum(case when ordered.not_exact_from_ms <= ordered.previous_to_ms then 0 else 1 end) over (
            partition by ordered.job_id, ordered.vertex_id, ordered.subtask_index, ordered.attempt
            order by ordered.not_exact_from_ms, ordered.from_seq
            rows between unbounded preceding and current row
        ) as island
    from (
        select
            ranges.*,
            max(ranges.not_exact_to_ms) over (
                partition by ranges.job_id, ranges.vertex_id, ranges.subtask_index, ranges.attempt
                order by ranges.not_exact_from_ms, ranges.from_seq
                rows between unbounded preceding and 1 preceding
            ) as previous_to_ms
        from ranges
    ) as ordered

),

final as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min(not_exact_from_ms) as not_exact_from_ms,
        max(not_exact_to_ms) as not_exact_to_ms,
        min(from_seq) as from_seq,
        count(*) as gap_count,
        sum(dropped) as dropped
    from islands
    group by job_id, vertex_id, subtask_index, attempt, island

)

select * from final
