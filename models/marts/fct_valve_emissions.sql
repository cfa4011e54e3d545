{%- set drop_emptied_partitions -%}{% raw %}
    {{- tidemark_drop_emptied_partitions(
        ['input_index', 'seq', 'emission_index'], 'ts_ms', "row_kind = 'emission'"
    ) -}}
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

final as (

    {{ tidemark_rows_to_write(
        'recomputed', 'runs', ['job_id', 'vertex_id', 'subtask_index', 'attempt'],
        'kept.seq > replaced.resumed_after_seq',
        existing='existing', touched=['recomputed', 'replaced'],
        columns=['job_id', 'vertex_id', 'subtask_index', 'attempt', 'input_index', 'seq',
            'ts_ms', 'emission_index', 'kind', 'watermark_ms', 'status', 'hour_at'],
    ) }}

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
