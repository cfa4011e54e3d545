{{ config(materialized='table') }}
-- depends_on: {{ ref('fct_subtask_seconds') }}
-- depends_on: {{ ref('fct_subtask_flink_gauges') }}
-- depends_on: {{ ref('fct_vertex_seconds') }}
-- depends_on: {{ ref('fct_vertex_sampled_backpressure') }}
-- depends_on: {{ ref('int_timer_seconds_checkpointed') }}
{#
    What the gauge marts have applied: per task, its summary as of the bronze commit
    `processed_ingest_id`. Built last (after the marts and int_timer_seconds_checkpointed, see the depends_on lines), so a run that
    dies part-way leaves the previous checkpoint and the next run plans from it again. The next
    run's plan reads it without ref() (docs/decisions/0004-gauge-incremental.md).
#}

with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

final as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        first_ts_ms,
        horizon_ms,
        max_seq,
        is_busy_time_enabled,
        processed_ingest_id
    from planned

)

select * from final
