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
-- depends_on: {{ ref('fct_vertex_sampled_backpressure') }}
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

final as (

    {{ tidemark_rows_to_write(
        'recomputed', 'replayed_tasks', ['job_id', 'vertex_id', 'subtask_index', 'attempt'],
        'kept.second_start_ms >= replaced.replay_from_second_ms',
        columns=['job_id', 'vertex_id', 'subtask_index', 'attempt', 'second_start_ms', 'end_seq',
            'end_clock_ms', 'min_ts_ms', 'is_idle_open', 'is_soft_backpressured_open',
            'is_hard_backpressured_open', 'hour_at'],
    ) }}

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
