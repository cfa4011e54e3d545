{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
    )
}}
{#-
    Contract §4: what Flink's own task gauges would have published at each view update round.

    Captured rounds (round_source = 'captured'): a task with `update` records takes its rounds
    from them, replayed gauge by gauge in int_timer_rounds_replayed and grouped into passes in
    int_timer_passes_carried. One view updater pass (V2,
    V3) updates the task's gauges within moments of each other, passes at least 5 s apart, so a
    round is a run of the task's updates in time order with less than 2.5 s between neighbours
    (time, not seq: the capture writes an update of a gauge that was not measuring when it
    notices it, up to one pass later, with the reading of its pass, decision 0006);
    update_ms is the latest reading in it. Each value is the one its gauge computed at its own
    update; published_* hold what the capture saw Flink publish (fct_gauge_conformance).

    Epoch rounds (round_source = 'epoch', V1, V4): every epoch multiple of 5000 ms from the first at or after the task's smallest
    ts_ms through its horizon. A round at the same millisecond as an event happens before it. Each
    round's slot (T4, T10) is the time measured since the previous round, which is exactly the sum
    of the task's fct_subtask_seconds over the five seconds before the round (the first slot takes
    every second before the first round): time is split at the round, never counted twice. The
    published value (T5, T6, T12) is the sum of the last k slots divided by 5k, truncated and
    clamped to [0, 1000], k = the slots written so far, at most span / 5.
-#}
{%- set slots = tidemark_gauge_window_slots() | int -%}

with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

gauge_rounds as (

    select * from {{ ref('int_timer_rounds_replayed') }}

),

gap_ranges as (

    select * from {{ ref('int_capture_gaps_spanned') }}

),

captured_rounds as (

    select * from {{ ref('int_timer_passes_carried') }}

),

captured_tasks as (

    select distinct
        job_id,
        vertex_id,
        subtask_index,
        attempt
    from gauge_rounds

),

subtask_seconds as (

    select * from {{ ref('fct_subtask_seconds') }}

),

tasks as (

    select
        planned.job_id,
        planned.vertex_id,
        planned.subtask_index,
        planned.attempt,
        planned.first_ts_ms,
        planned.is_busy_time_enabled,
        planned.first_ts_ms + pmod(-planned.first_ts_ms, 5000) as first_update_ms,
        {{ tidemark_floor_ms('planned.horizon_ms', 5000) }} as last_update_ms,
        {% if is_incremental() -%}
        -- The first round whose slot holds a replayed second.
        case
            when planned.is_replayed_from_start
                then planned.first_ts_ms + pmod(-planned.first_ts_ms, 5000)
            else greatest(
                planned.first_ts_ms + pmod(-planned.first_ts_ms, 5000),
                {{ tidemark_floor_ms('planned.recompute_from_ms', 5000) }} + 5000
            )
        end as recompute_from_ms
        {%- else -%}
        planned.first_ts_ms + pmod(-planned.first_ts_ms, 5000) as recompute_from_ms
        {%- endif %}
    from planned
    left anti join captured_tasks
        on
            {{ tidemark_same_task('planned', 'captured_tasks') }}
    {% if is_incremental() -%}
    where planned.is_changed
    {%- endif %}

),

window_tasks as (

    -- The earliest round a recomputed round's window reaches back to.
    select
        tasks.*,
        greatest(tasks.first_update_ms, tasks.recompute_from_ms - {{ (slots - 1) * 5000 }})
            as window_from_update_ms
    from tasks

),

rounds as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        first_ts_ms,
        first_update_ms,
        recompute_from_ms,
        is_busy_time_enabled,
        explode(
            sequence(window_from_update_ms, last_update_ms, cast(5000 as bigint))
        ) as update_ms
    from window_tasks
    where window_from_update_ms <= last_update_ms

),

slot_seconds as (

    select
        subtask_seconds.job_id,
        subtask_seconds.vertex_id,
        subtask_seconds.subtask_index,
        subtask_seconds.attempt,
        -- The round right after the second: a second ending on a round belongs to it.
        {{ tidemark_floor_ms('subtask_seconds.second_start_ms', 5000) }} + 5000 as update_ms,
        subtask_seconds.idle_ms,
        subtask_seconds.soft_backpressured_ms,
        subtask_seconds.hard_backpressured_ms
    from subtask_seconds
    left semi join window_tasks  -- noqa: AL04
        on
            {{ tidemark_same_task('subtask_seconds', 'window_tasks') }}
            and subtask_seconds.second_start_ms >= window_tasks.window_from_update_ms - 5000
    {% if is_incremental() -%}
    -- Only the recent partitions (a build from scratch reads them all).
    where
        {{ tidemark_partitions_from(
            'subtask_seconds', '(select min(window_from_update_ms) from window_tasks) - 5000'
        ) }}
    {%- endif %}

),

slots as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        update_ms,
        sum(idle_ms) as idle_ms,
        sum(soft_backpressured_ms) as soft_backpressured_ms,
        sum(hard_backpressured_ms) as hard_backpressured_ms
    from slot_seconds
    group by job_id, vertex_id, subtask_index, attempt, update_ms

),

round_slots as (

    select
        rounds.job_id,
        rounds.vertex_id,
        rounds.subtask_index,
        rounds.attempt,
        rounds.update_ms,
        rounds.first_ts_ms,
        rounds.first_update_ms,
        rounds.recompute_from_ms,
        rounds.is_busy_time_enabled,
        coalesce(slots.idle_ms, 0) as idle_ms,
        coalesce(slots.soft_backpressured_ms, 0) as soft_backpressured_ms,
        coalesce(slots.hard_backpressured_ms, 0) as hard_backpressured_ms
    from rounds
    left join slots
        on
            {{ tidemark_same_task('rounds', 'slots') }}
            and rounds.update_ms = slots.update_ms

),

{% if is_incremental() %}

previous_rounds as (  -- noqa: ST03

    -- The accumulated counts (T9) published at the round before the first recomputed one.
    select
        existing.job_id,
        existing.vertex_id,
        existing.subtask_index,
        existing.attempt,
        existing.accumulated_idle_time_ms,
        existing.accumulated_back_pressured_time_ms
    from {{ this }} as existing
    left semi join tasks  -- noqa: AL04
        on
            {{ tidemark_same_task('existing', 'tasks') }}
            and existing.update_ms = tasks.recompute_from_ms - 5000
    where
        {{ tidemark_partitions_from(
            'existing', '(select min(recompute_from_ms) from tasks) - 5000'
        ) }}

),

{% endif %}

windowed as (

    select
        round_slots.*,
        -- T6: the slots written so far, at most the ring's size.
        least(
            (round_slots.update_ms - round_slots.first_update_ms) div 5000 + 1, {{ slots }}
        ) as written_slots,
        sum(round_slots.idle_ms) over ring as idle_ring_ms,
        sum(round_slots.soft_backpressured_ms) over ring as soft_backpressured_ring_ms,
        sum(round_slots.hard_backpressured_ms) over ring as hard_backpressured_ring_ms,
        sum(
            case
                when round_slots.update_ms >= round_slots.recompute_from_ms
                    then round_slots.idle_ms
            end
        ) over task_so_far as idle_recomputed_ms,
        sum(
            case
                when round_slots.update_ms >= round_slots.recompute_from_ms
                    then round_slots.soft_backpressured_ms + round_slots.hard_backpressured_ms
            end
        ) over task_so_far as back_pressured_recomputed_ms
    from round_slots
    window
        ring as (
            partition by
                round_slots.job_id,
                round_slots.vertex_id,
                round_slots.subtask_index,
                round_slots.attempt
            order by round_slots.update_ms
            rows between {{ slots - 1 }} preceding and current row
        ),
        task_so_far as (
            partition by
                round_slots.job_id,
                round_slots.vertex_id,
                round_slots.subtask_index,
                round_slots.attempt
            order by round_slots.update_ms
            rows between unbounded preceding and current row
        )

),

published as (

    select
        windowed.job_id,
        windowed.vertex_id,
        windowed.subtask_index,
        windowed.attempt,
        windowed.update_ms,
        windowed.first_ts_ms,
        windowed.is_busy_time_enabled,
        -- T6/T12: truncating division by 5k, clamped to [0, 1000].
        least(greatest(windowed.idle_ring_ms div (5 * windowed.written_slots), 0), 1000)
            as idle_time_ms_per_second,
        least(
            greatest(windowed.soft_backpressured_ring_ms div (5 * windowed.written_slots), 0), 1000
        ) as soft_back_pressured_time_ms_per_second,
        least(
            greatest(windowed.hard_backpressured_ring_ms div (5 * windowed.written_slots), 0), 1000
        ) as hard_back_pressured_time_ms_per_second,
        {% if is_incremental() -%}
        coalesce(previous_rounds.accumulated_idle_time_ms, 0)
        {%- else -%}
        0
        {%- endif %} + windowed.idle_recomputed_ms as accumulated_idle_time_ms,
        {% if is_incremental() -%}
        coalesce(previous_rounds.accumulated_back_pressured_time_ms, 0)
        {%- else -%}
        0
        {%- endif %} + windowed.back_pressured_recomputed_ms as accumulated_back_pressured_time_ms
    from windowed
    {% if is_incremental() -%}
    left join previous_rounds
        on
            {{ tidemark_same_task('windowed', 'previous_rounds') }}
    {%- endif %}
    where windowed.update_ms >= windowed.recompute_from_ms

),

recomputed as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        update_ms,
        idle_time_ms_per_second,
        soft_back_pressured_time_ms_per_second,
        hard_back_pressured_time_ms_per_second,
        -- From the published values.
        {{ tidemark_gauge_figures(
            'idle_time_ms_per_second',
            'soft_back_pressured_time_ms_per_second',
            'hard_back_pressured_time_ms_per_second',
            'is_busy_time_enabled',
            back_pressured='back_pressured_time_ms_per_second',
            busy='busy_time_ms_per_second',
        ) }},
        -- T9/M6: running sums since the task's first event, never windowed or clamped.
        accumulated_idle_time_ms,
        accumulated_back_pressured_time_ms,
        {{ tidemark_accumulated_busy_ms(
            'update_ms', 'first_ts_ms', 'accumulated_idle_time_ms',
            'accumulated_back_pressured_time_ms', 'is_busy_time_enabled',
        ) }} as accumulated_busy_time_ms,
        'epoch' as round_source,
        cast(null as bigint) as published_idle_time_ms_per_second,
        cast(null as bigint) as published_soft_back_pressured_time_ms_per_second,
        cast(null as bigint) as published_hard_back_pressured_time_ms_per_second,
        update_ms - {{ slots * 5000 }} as window_from_ms,
        {{ tidemark_hour_at('update_ms') }} as hour_at,
        {{ tidemark_minute_slice('update_ms') }} as minute_slice
    from published

),

all_rounds as (

    select * from recomputed
    union all
    select * from captured_rounds

),

task_gap_ranges as (

    {{ tidemark_gaps_by_task('gap_ranges') }}

),

rounds_checked as (

    select
        all_rounds.job_id,
        all_rounds.vertex_id,
        all_rounds.subtask_index,
        all_rounds.attempt,
        all_rounds.update_ms,
        all_rounds.idle_time_ms_per_second,
        all_rounds.soft_back_pressured_time_ms_per_second,
        all_rounds.hard_back_pressured_time_ms_per_second,
        all_rounds.back_pressured_time_ms_per_second,
        all_rounds.busy_time_ms_per_second,
        all_rounds.backpressure_ratio,
        all_rounds.backpressure_level,
        all_rounds.accumulated_idle_time_ms,
        all_rounds.accumulated_back_pressured_time_ms,
        all_rounds.accumulated_busy_time_ms,
        all_rounds.round_source,
        -- Exact unless the round's window (T6) reaches into a range of lost timer events.
        {{ tidemark_is_exact(
            'task_gap_ranges', 'all_rounds.window_from_ms', 'all_rounds.update_ms + 1'
        ) }} as is_exact,
        all_rounds.published_idle_time_ms_per_second,
        all_rounds.published_soft_back_pressured_time_ms_per_second,
        all_rounds.published_hard_back_pressured_time_ms_per_second,
        all_rounds.hour_at,
        all_rounds.minute_slice
    from all_rounds
    left join task_gap_ranges
        on
            {{ tidemark_same_task('all_rounds', 'task_gap_ranges') }}

),

replaced_tasks as (  -- noqa: ST03

    -- Captured tasks are recomputed from their first round.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        recompute_from_ms
    from tasks
    union all
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        -9223372036854775807 as recompute_from_ms
    from captured_tasks

),

final as (

-- A recomputed task's rounds from its first dirty one are replaced, a captured task's all.
-- A build from scratch needs a plan that replays every task from its first event: a captured
-- task that int_timer_rounds_replayed did not replay would get epoch rounds instead.
    {{ tidemark_incremental_tail(
        'rounds_checked', 'replaced_tasks', 'kept.update_ms >= replaced.recompute_from_ms',
        replaced_from='min(recompute_from_ms)',
    ) }}

)

select * from final
