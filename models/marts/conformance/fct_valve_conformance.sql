{{ config(materialized='table') }}
{#-
    Per captured valve: tidemark's emissions (fct_valve_emissions) next to what Flink's
    StatusWatermarkValve emitted (`valve_output`, decision 0006), matched on the input event that
    caused them and their order within it.

    A captured output's cause is the latest watermark or watermark_status event of the same task
    and input with a smaller seq (contract §1: its seq follows the input event that caused it);
    its emission_index is its rank among the outputs of that cause. Without any captured output in
    bronze (no capture of valves) neither the input events nor the emissions are read
    (tidemark_has_rows).
-#}
{%- set any_captured = tidemark_has_rows(source('bronze', 'valve_outputs')) %}

with

captured_outputs as (

    select * from {{ ref('stg_bronze__valve_outputs') }}

),

input_events as (

    select * from {{ ref('stg_bronze__watermark_events') }}
    {%- if not any_captured %}
    where false
    {%- endif %}

),

emissions as (

    select * from {{ ref('fct_valve_emissions') }}
    {%- if not any_captured %}
    where false
    {%- endif %}

),

capture_gaps as (

    select * from {{ ref('stg_bronze__capture_gaps') }}

),

captured_valves as (

    select distinct
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        input_index
    from captured_outputs

),

timeline as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        input_index,
        input_events.seq,
        input_events.ts_ms,
        cast(null as string) as kind,
        cast(null as bigint) as watermark_ms,
        cast(null as string) as status,
        true as is_input
    from input_events
    left semi join captured_valves
        using (job_id, vertex_id, subtask_index, attempt, input_index)
    union all
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        input_index,
        seq,
        ts_ms,
        kind,
        watermark_ms,
        status,
        false as is_input
    from captured_outputs

),

caused as (

    select
        *,
        last_value(case when is_input then seq end, true) over (
            partition by job_id, vertex_id, subtask_index, attempt, input_index
            order by seq
            rows between unbounded preceding and 1 preceding
        ) as cause_seq
    from timeline

),

flink_outputs as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        input_index,
        cause_seq as seq,
        seq as output_seq,
        ts_ms as output_ts_ms,
        row_number() over (
            partition by job_id, vertex_id, subtask_index, attempt, input_index, cause_seq
            order by seq
        ) - 1 as emission_index,
        kind,
        watermark_ms,
        status
    from caused
    where not is_input

),

tidemark_outputs as (

    select emissions.*
    from emissions
    left semi join captured_valves
        using (job_id, vertex_id, subtask_index, attempt, input_index)

),

compared as (

    select
        coalesce(tidemark_outputs.job_id, flink_outputs.job_id) as job_id,
        coalesce(tidemark_outputs.vertex_id, flink_outputs.vertex_id) as vertex_id,
        coalesce(tidemark_outputs.subtask_index, flink_outputs.subtask_index) as subtask_index,
        coalesce(tidemark_outputs.attempt, flink_outputs.attempt) as attempt,
        coalesce(tidemark_outputs.input_index, flink_outputs.input_index) as input_index,
        coalesce(tidemark_outputs.seq, flink_outputs.seq) as seq,
        coalesce(tidemark_outputs.emission_index, flink_outputs.emission_index)
            as emission_index,
        coalesce(tidemark_outputs.ts_ms, flink_outputs.output_ts_ms) as ts_ms,
        flink_outputs.output_seq,
        tidemark_outputs.kind as tidemark_kind,
        tidemark_outputs.watermark_ms as tidemark_watermark_ms,
        tidemark_outputs.status as tidemark_status,
        flink_outputs.kind as flink_kind,
        flink_outputs.watermark_ms as flink_watermark_ms,
        flink_outputs.status as flink_status
    from tidemark_outputs
    full outer join flink_outputs
        on
            {{ tidemark_same_task('tidemark_outputs', 'flink_outputs') }}
            and tidemark_outputs.input_index = flink_outputs.input_index
            and tidemark_outputs.seq = flink_outputs.seq
            and tidemark_outputs.emission_index = flink_outputs.emission_index

),

first_gaps as (

    -- A lost event anywhere before an output leaves the valve's state unknown to the end of
    -- the attempt, which starts a fresh valve (decision 0006).
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min(seq) as from_seq
    from capture_gaps
    group by job_id, vertex_id, subtask_index, attempt

),

outcomes as (

    select
        compared.*,
        case
            when first_gaps.from_seq is not null then 'not_exact'
            when compared.tidemark_kind is null then 'missing_in_tidemark'
            when compared.flink_kind is null then 'missing_in_flink'
            when
                compared.tidemark_kind = compared.flink_kind
                and compared.tidemark_watermark_ms <=> compared.flink_watermark_ms
                and compared.tidemark_status <=> compared.flink_status
                then 'match'
            else 'mismatch'
        end as outcome
    from compared
    left join first_gaps
        on
            {{ tidemark_same_task('compared', 'first_gaps') }}
            and coalesce(compared.output_seq, compared.seq) >= first_gaps.from_seq

),

final as (

    select
        *,
        -- NULL where no claim is made (not_exact).
        case when outcome != 'not_exact' then outcome = 'match' end as is_match
    from outcomes

)

select * from final
