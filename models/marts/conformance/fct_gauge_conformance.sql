{{ config(materialized='view') }}
{#-
    Per captured round and gauge: tidemark's value next to what Flink published (decision 0006).
    A view over fct_subtask_flink_gauges: costs nothing at build time, always current.
-#}

with

flink_gauges as (

    select * from {{ ref('fct_subtask_flink_gauges') }}
    where round_source = 'captured'

),

per_gauge as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        update_ms,
        is_exact,
        stack(
            3,
            'idleTimeMsPerSecond', idle_time_ms_per_second, published_idle_time_ms_per_second,
            'softBackPressuredTimeMsPerSecond', soft_back_pressured_time_ms_per_second,
            published_soft_back_pressured_time_ms_per_second,
            'hardBackPressuredTimeMsPerSecond', hard_back_pressured_time_ms_per_second,
            published_hard_back_pressured_time_ms_per_second
        ) as (flink_metric, tidemark_value, published_value)
    from flink_gauges

),

final as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        update_ms,
        flink_metric,
        tidemark_value,
        published_value,
        case
            when published_value is null then 'not_captured'
            when not is_exact then 'not_exact'
            when tidemark_value = published_value then 'match'
            else 'mismatch'
        end as outcome
    from per_gauge
    -- A gauge the task does not have (no update records at all) is not a comparison.
    where tidemark_value is not null or published_value is not null

)

select * from final
