with

source as (

    select * from {{ source('bronze', 'capture_gaps') }}

),

final as (

    select
        cast(job_id as string) as job_id,
        cast(vertex_id as string) as vertex_id,
        cast(subtask_index as int) as subtask_index,
        cast(attempt as int) as attempt,
        cast(seq as bigint) as seq,
        cast(to_seq as bigint) as to_seq,
        cast(ts_ms as bigint) as ts_ms,
        cast(to_ts_ms as bigint) as to_ts_ms,
        cast(dropped as bigint) as dropped,
        cast(reason as string) as reason,
        cast(ingest_id as bigint) as ingest_id,
        cast(ingested_at as timestamp) as ingested_at,
        data_file
    from source

)

select * from final
