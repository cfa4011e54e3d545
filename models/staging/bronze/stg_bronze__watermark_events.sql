with

source as (

    select * from {{ source('bronze', 'watermark_events') }}

),

final as (

    select
        cast(job_id as string) as job_id,
        cast(vertex_id as string) as vertex_id,
        cast(subtask_index as int) as subtask_index,
        cast(attempt as int) as attempt,
        cast(seq as bigint) as seq,
        cast(ts_ms as bigint) as ts_ms,
        cast(event_type as string) as event_type,
        cast(input_index as int) as input_index,
        cast(channel_index as int) as channel_index,
        cast(num_channels as int) as num_channels,
        cast(watermark_ms as bigint) as watermark_ms,
        cast(status as string) as status,
        cast(ingest_id as bigint) as ingest_id,
        cast(ingested_at as timestamp) as ingested_at,
        data_file
    from source

)

select * from final
