{#- By job, so that `tidemark maintain` can drop the tasks the task marts no longer hold through
    SQL (a job's partition rewritten and published). Published, as the marts are: the table is
    replaced in one metastore step, so a kill never leaves the commit point missing (0023). -#}
{{ config(materialized='table', partition_by=['job_id'], publish=true) }}
-- The commit point of a gauge run: after the seconds' checkpoint, itself after the marts.
-- depends_on: {{ ref('int_timer_seconds_checkpointed') }}
{#
    What the gauge marts have applied: per task, its summary as of the bronze commit
    `processed_ingest_id`. Built last, so a run that dies part-way leaves the previous checkpoint
    and the next run plans from it again, reading it as source('previous_run', ...)
    (docs/decisions/0004-gauge-incremental.md).
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
