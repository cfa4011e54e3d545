{%- set drop_emptied_partitions -%}{% raw %}
    {#- insert_overwrite rewrites only the partitions the model's rows land in, so a touched
        partition whose rows were all replaced by nothing would keep them: drop it. After the
        insert, a row of a fed task after its resume point that this run did not write is such
        a stale row, and every partition holding one holds nothing else. -#}
    {%- if is_incremental() -%}
        {%- set emptied -%}
            select distinct
                concat(
                    "job_id = '", replace(existing.job_id, "'", "\\'"),
                    "', hour_at = timestamp'", date_format(existing.hour_at, 'yyyy-MM-dd HH:mm:ss'), "'"
                ) as partition_spec
            from {{ this }} as existing
            inner join (
                select job_id, vertex_id, subtask_index, attempt, resumed_after_seq
                from {{ ref('int_valve_outputs_computed') }}
                where row_kind = 'state'
            ) as runs
                on
                    existing.job_id = runs.job_id
                    and existing.vertex_id = runs.vertex_id
                    and existing.subtask_index = runs.subtask_index
                    and existing.attempt = runs.attempt
            left anti join (
                select
                    job_id, vertex_id, subtask_index, attempt, input_index, seq, emission_index,
                    {{ tidemark_hour_at('ts_ms') }} as hour_at
                from {{ ref('int_valve_outputs_computed') }}
                where row_kind = 'emission'
            ) as fresh
                on
                    existing.job_id = fresh.job_id
                    and existing.vertex_id = fresh.vertex_id
                    and existing.subtask_index = fresh.subtask_index
                    and existing.attempt = fresh.attempt
                    and existing.input_index = fresh.input_index
                    and existing.seq = fresh.seq
                    and existing.emission_index = fresh.emission_index
                    and existing.hour_at = fresh.hour_at
            where existing.seq > runs.resumed_after_seq
        {%- endset -%}
        {%- for row in run_query(emptied).rows -%}
            {%- do run_query('alter table ' ~ this ~ ' drop if exists partition (' ~ row[0] ~ ')') -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endraw %}{%- endset -%}
{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at'],
        post_hook=[drop_emptied_partitions],
    )
}}
{#-
    Contract §4: every output of every StatusWatermarkValve (W1-W4, S1-S3), per task input, fed
    its watermark and watermark_status events in seq order. Incremental runs rewrite the
    (job_id, hour_at) partitions holding rows this run recomputed: the recomputed rows plus the
    partitions' other rows as they were (docs/decisions/0005-valve-incremental.md).
-#}

with

valve_outputs as (

    select * from {{ ref('int_valve_outputs_computed') }}

),

recomputed as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        input_index,
        seq,
        ts_ms,
        emission_index,
        kind,
        watermark_ms,
        status,
        {{ tidemark_hour_at('ts_ms') }} as hour_at
    from valve_outputs
    where row_kind = 'emission'

),

{% if is_incremental() %}

runs as (

    -- Each task this run fed, and the seq after which its outputs were recomputed.
    select job_id, vertex_id, subtask_index, attempt, resumed_after_seq
    from valve_outputs
    where row_kind = 'state'

),

existing as (

    select * from {{ this }}
    where job_id in (select job_id from runs)

),

replaced as (

    select existing.*
    from existing
    inner join runs
        on
            existing.job_id = runs.job_id
            and existing.vertex_id = runs.vertex_id
            and existing.subtask_index = runs.subtask_index
            and existing.attempt = runs.attempt
    where existing.seq > runs.resumed_after_seq

),

touched_partitions as (

    select job_id, hour_at from recomputed
    union
    select job_id, hour_at from replaced

),

kept as (

    select existing.*
    from existing
    left semi join touched_partitions
        on
            existing.job_id = touched_partitions.job_id
            and existing.hour_at = touched_partitions.hour_at
    left anti join runs
        on
            existing.job_id = runs.job_id
            and existing.vertex_id = runs.vertex_id
            and existing.subtask_index = runs.subtask_index
            and existing.attempt = runs.attempt
            and existing.seq > runs.resumed_after_seq

),

final as (

    select
        job_id, vertex_id, subtask_index, attempt, input_index, seq, ts_ms, emission_index,
        kind, watermark_ms, status, hour_at
    from recomputed
    union all
    select
        job_id, vertex_id, subtask_index, attempt, input_index, seq, ts_ms, emission_index,
        kind, watermark_ms, status, hour_at
    from kept

)

{% else %}

final as (

    -- Built from scratch: this run's valve outputs must then cover every task from its first
    -- event (int_valve_outputs_computed makes a full run when a watermark mart is missing).
    select recomputed.*
    from recomputed
    where (
        select assert_true(
            coalesce(bool_and(resumed_after_seq = -1), true),
            'fct_valve_emissions is being rebuilt, but this run computed only part of the '
            || 'tasks: rebuild the watermark models together, e.g. dbt build --full-refresh '
            || '--select int_valve_outputs_computed+'
        )
        from valve_outputs
        where row_kind = 'state'
    ) is null

)

{% endif %}

select * from final
