{{ config(materialized='table') }}
{#-
    Per captured round and gauge: tidemark's value next to what Flink published (decision 0006).
    Rebuilt each run from the captured rows of fct_subtask_flink_gauges.
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
            when not is_exact then 'not_exact'
            when tidemark_value <=> published_value then 'match'
            else 'mismatch'
        end as outcome,
        -- NULL where no claim is made (not_exact).
        case when is_exact then tidemark_value <=> published_value end as is_match
    from per_gauge
    -- Only where the capture saw the value published: a gauge updated in that pass whose
    -- value the capture read (decision 0006: a later update may read it first).
    where published_value is not null

)

select * from final
