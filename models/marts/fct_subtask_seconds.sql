{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
    )
}}
{#-
    Contract §4: per task and second, the milliseconds inside effective TimerGauge measurements
    and what they add up to. Incremental runs rewrite the (job_id, hour_at, minute_slice) partitions
    holding replayed seconds: the replayed rows plus the partitions' other rows as they were.
-#}

with

replayed_seconds as (

    select * from {{ ref('int_timer_seconds_replayed') }}

),

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

not_exact_ranges as (

    select * from {{ ref('int_capture_gaps_spanned') }}

),

task_gap_ranges as (

    -- Where the capture lost timer events (int_capture_gaps_spanned). A gap landed after its
    -- seconds were published makes the plan replay the task from before the gap
    -- (int_timer_tasks_planned), so they are recomputed here.
    {{ tidemark_gaps_by_task('not_exact_ranges') }}

),

recomputed as (

    select
        replayed_seconds.job_id,
        replayed_seconds.vertex_id,
        replayed_seconds.subtask_index,
        replayed_seconds.attempt,
        replayed_seconds.second_start_ms,
        replayed_seconds.idle_ms,
        replayed_seconds.soft_backpressured_ms,
        replayed_seconds.hard_backpressured_ms,
        {{ tidemark_gauge_figures(
            'replayed_seconds.idle_ms',
            'replayed_seconds.soft_backpressured_ms',
            'replayed_seconds.hard_backpressured_ms',
            'replayed_seconds.is_busy_time_enabled',
            back_pressured='backpressured_ms',
            busy='busy_ms',
        ) }},
        replayed_seconds.second_start_ms + 1000 <= replayed_seconds.horizon_ms as is_complete,
        -- Not exact where a capture gap leaves a gauge's state unknown (int_capture_gaps_spanned).
        {{ tidemark_is_exact(
            'task_gap_ranges',
            'replayed_seconds.second_start_ms',
            'replayed_seconds.second_start_ms + 1000'
        ) }} as is_exact,
        replayed_seconds.hour_at,
        replayed_seconds.minute_slice
    from replayed_seconds
    left join task_gap_ranges
        on
            {{ tidemark_same_task('replayed_seconds', 'task_gap_ranges') }}

),

final as (

    -- A changed task's rows from the second its replay starts are replaced; a build from
    -- scratch needs a plan that replays every task from its first event.
    {{ tidemark_incremental_tail() }}

)

select * from final
