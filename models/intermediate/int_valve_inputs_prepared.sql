{{ config(materialized='ephemeral') }}
{#-
    Ephemeral, not the intermediate folder's table: it only selects and encodes staging rows, and
    Spark forbids persistent views over the temporary views that expose bronze.
-#}

with

watermark_events as (

    select * from {{ ref('stg_bronze__watermark_events') }}

),

final as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        input_index,
        seq,
        ts_ms,
        event_type,
        channel_index,
        num_channels,
        watermark_ms,
        status,
        {{ tidemark_valve_input_code() }} as input_code,
        ingest_id,
        data_file
    from watermark_events

)

select * from final
