{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at'],
    )
}}
-- depends_on: {{ ref('fct_subtask_seconds') }}
-- depends_on: {{ ref('fct_subtask_flink_gauges') }}
-- depends_on: {{ ref('fct_vertex_seconds') }}
{#
    Per task and second, the task's state after every event whose clock falls before the end of
    the second: the next run's plan resumes a task from the latest such state that no new event
    can change. Built after the marts, like int_timer_tasks_checkpointed.
#}

with

replayed_seconds as (

    select * from {{ ref('int_timer_seconds_replayed') }}

),

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

recomputed as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        second_start_ms,
        end_seq,
        end_clock_ms,
        min_ts_ms,
        is_idle_open,
        is_soft_backpressured_open,
        is_hard_backpressured_open,
        hour_at
    from replayed_seconds

),

{% if is_incremental() %}

replayed_tasks as (

    select * from planned
    where is_changed

),

touched_partitions as (

    select distinct job_id, hour_at
    from recomputed

),

kept as (

    select existing.*
    from {{ this }} as existing
    left semi join touched_partitions
        on
            existing.job_id = touched_partitions.job_id
            and existing.hour_at = touched_partitions.hour_at
    left anti join replayed_tasks
        on
            existing.job_id = replayed_tasks.job_id
            and existing.vertex_id = replayed_tasks.vertex_id
            and existing.subtask_index = replayed_tasks.subtask_index
            and existing.attempt = replayed_tasks.attempt
            and existing.second_start_ms >= replayed_tasks.replay_from_second_ms

),

final as (

    select * from recomputed
    union all
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        second_start_ms,
        end_seq,
        end_clock_ms,
        min_ts_ms,
        is_idle_open,
        is_soft_backpressured_open,
        is_hard_backpressured_open,
        hour_at
    from kept

)

{% else %}

final as (

    select recomputed.*
    from recomputed
    where (
        select assert_true(
            coalesce(bool_and(is_replayed_from_start), true),
            'int_timer_seconds_checkpointed is being rebuilt, but this run replays only part of '
            || 'the tasks: rebuild the gauge models together, e.g. dbt build --full-refresh '
            || '--select int_timer_tasks_planned+'
        )
        from planned
    ) is null

)

{% endif %}

select * from final
