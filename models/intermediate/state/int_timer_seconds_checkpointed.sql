{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
        publish=true,
    )
}}
-- After the gauge marts (the two below follow fct_subtask_seconds, the legacy one follows
-- int_backpressure_samples_counted): dbt orders a model only by what it reads.
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
        hour_at,
        minute_slice
    from replayed_seconds

),

final as (

    -- A changed task's rows from the second its replay starts are replaced; a build from
    -- scratch needs a plan that replays every task from its first event.
    {{ tidemark_incremental_tail() }}

)

select * from final
