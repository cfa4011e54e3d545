{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
        pre_hook="{{ tidemark_add_columns('flink_release string, flink_release_source string') }}",
    )
}}
{#-
    Contract §4: what Flink's own task gauges would have published at each view update round.

    Captured rounds (round_source = 'captured'): a task with `update` records takes its rounds
    from them, replayed gauge by gauge in int_timer_rounds_replayed and grouped into passes in
    int_timer_passes_carried. One view updater pass (V2, V3) updates the task's gauges within
    moments of each other, passes at least 5 s apart, so a round is a run of the task's updates
    in time order with less than 2.5 s between neighbours
    (time, not seq: the capture writes an update of a gauge that was not measuring when it
    notices it, up to one pass later, with the reading of its pass, decision 0006);
    update_ms is the latest reading in it. Each value is the one its gauge computed at its own
    update; published_* hold what the capture saw Flink publish (fct_gauge_conformance).

    Epoch rounds (round_source = 'epoch', V1, V4): the other tasks' rounds at every epoch
    multiple of 5000 ms through their horizon, from int_timer_epochs_windowed's slots. The
    published value (T5, T6, T12) is the sum of the last k slots divided by 5k, truncated and
    clamped to [0, 1000], k = the slots written so far, at most span / 5 (1 before Flink 1.17);
    the accumulated counts (T9) add the slots since the first recomputed round to this table's
    round before. flink_release*: whose rules (a table from before gains them: pre_hook). -#}
with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

job_releases as (

    select * from {{ ref('int_job_releases_resolved') }}

),

gap_ranges as (

    select * from {{ ref('int_capture_gaps_spanned') }}

),

captured_rounds as (

    select * from {{ ref('int_timer_passes_carried') }}

),

windowed as (

    select * from {{ ref('int_timer_epochs_windowed') }}

),

tasks as (

    -- The changed tasks from their first recomputed epoch round on (a captured task's rounds
    -- are replaced from its first: replaced_tasks).
    select
        planned.job_id,
        planned.vertex_id,
        planned.subtask_index,
        planned.attempt,
        {{ tidemark_epoch_recompute_from_ms('planned') }} as recompute_from_ms
    from planned
    where planned.is_changed

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

published as (

    -- T9: the accumulated counts, the round's before the first recomputed one plus the time since.
    select
        windowed.*,
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
        update_ms - gauge_window_slots * 5000 as window_from_ms,
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
        job_releases.flink_release,
        job_releases.flink_release_source,
        all_rounds.hour_at,
        all_rounds.minute_slice
    from all_rounds
    inner join job_releases
        on all_rounds.job_id = job_releases.job_id
    left join task_gap_ranges
        on
            {{ tidemark_same_task('all_rounds', 'task_gap_ranges') }}

),

replaced_tasks as (  -- noqa: ST03

    -- Captured tasks (every task with rounds in int_timer_passes_carried) are recomputed from
    -- their first round.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        recompute_from_ms
    from tasks
    union all
    select distinct
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        -9223372036854775807 as recompute_from_ms
    from captured_rounds

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
