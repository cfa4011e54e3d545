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
        -- What the event is for the UDTF (udfs/spark.py: its input arrays hold no NULLs):
        -- -1 a watermark (W1-W4), 0 IDLE and 1 ACTIVE (S1-S3), 2 a status that is neither,
        -- 3 a watermark without its value. The valve refuses 2 and 3, naming task and seq.
        case
            when event_type = 'watermark' and watermark_ms is not null then -1
            when event_type = 'watermark' then 3
            when status = 'IDLE' then 0
            when status = 'ACTIVE' then 1
            else 2
        end as input_code,
        ingest_id
    from watermark_events

)

select * from final
