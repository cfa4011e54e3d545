{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
        emptied_partitions={
            'keys': ['input_index', 'seq', 'emission_index'],
            'time_column': 'ts_ms',
            'where': "row_kind = 'emission'",
        },
    )
}}
{#-
    Contract §4: every output of every StatusWatermarkValve (W1-W4, S1-S3), per task input, fed
    its watermark and watermark_status events in seq order. Incremental runs rewrite the
    (job_id, hour_at, minute_slice) partitions holding rows this run recomputed: the recomputed rows
    plus the partitions' other rows as they were (docs/decisions/0005-valve-incremental.md).
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
        {{ tidemark_hour_at('ts_ms') }} as hour_at,
        {{ tidemark_minute_slice('ts_ms') }} as minute_slice
    from valve_outputs
    where row_kind = 'emission'

),

runs as (  -- noqa: ST03

    -- Each task this run fed, and the seq after which its outputs were recomputed.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        resumed_after_seq,
        recompute_from_ms
    from valve_outputs
    where row_kind = 'state'

),

final as (

-- A fed task's outputs after its resume point are replaced, and the partitions that held
-- them rewritten; a build from scratch needs a run that fed every task from its first event
-- (int_valve_outputs_computed makes one when a watermark mart is missing). An output lies at
-- its event's ts_ms, and every event after the resume point is fed again: the replaced rows
-- lie from the smallest ts_ms fed on.
    {{ tidemark_incremental_tail(
        replaced='runs', since='kept.seq > replaced.resumed_after_seq',
        jobs='runs', rewrite_replaced=true,
        plan="valve_outputs where row_kind = 'state'",
        replaced_from='min(recompute_from_ms)',
    ) }}

)

select * from final
