with

source as (

    select * from {{ source('bronze', 'quarantine') }}

),

final as (

    select
        cast(source_file as string) as source_file,
        cast(source_sha256 as string) as source_sha256,
        cast(line_number as bigint) as line_number,
        cast(raw_line as string) as raw_line,
        cast(reason as string) as reason,
        raw_bytes is not null as is_invalid_utf8,
        cast(ingest_id as bigint) as ingest_id,
        cast(ingested_at as timestamp) as ingested_at
    from source

)

select * from final
