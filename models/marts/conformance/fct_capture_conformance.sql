{{ config(materialized='table') }}
{#-
    One row per task, minute and check: how many of a capture's comparisons matched Flink, how
    many did not, how many could not be checked. The number to chart and alert on: mismatched > 0
    means tidemark's figures for that task are not what Flink computed (decision 0006).
-#}

with

gauges as (

    select * from {{ ref('fct_gauge_conformance') }}

),

valves as (

    select * from {{ ref('fct_valve_conformance') }}

),

outcomes as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        update_ms as at_ms,
        'gauges' as check_name,
        outcome
    from gauges
    union all
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        ts_ms as at_ms,
        'valves' as check_name,
        outcome
    from valves

),

final as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        {{ tidemark_floor_ms('coalesce(at_ms, 0)', 60000) }} as minute_start_ms,
        check_name,
        count(*) as compared,
        count_if(outcome = 'match') as matched,
        count_if(outcome in ('mismatch', 'missing_in_tidemark', 'missing_in_flink'))
            as mismatched,
        count_if(outcome = 'not_exact') as not_checked
    from outcomes
    group by
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        {{ tidemark_floor_ms('coalesce(at_ms, 0)', 60000) }},
        check_name

)

select * from final
