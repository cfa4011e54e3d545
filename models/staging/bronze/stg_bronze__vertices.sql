with

source as (

    select * from {{ source('bronze', 'vertices') }}

),

ranked as (

    select
        source.*,
        row_number() over (
            partition by source.job_id, source.vertex_id
            order by source.ingest_id desc, source.line_number desc
        ) as recency_rank
    from source

),

final as (

    select
        cast(job_id as string) as job_id,
        cast(vertex_id as string) as vertex_id,
        cast(vertex_name as string) as vertex_name,
        cast(parallelism as int) as parallelism,
        cast(busy_time_enabled as boolean) as is_busy_time_enabled,
        cast(upstream_vertex_ids as array<string>) as upstream_vertex_ids,
        cast(flink_version as string) as flink_version,
        cast(max_parallelism as int) as max_parallelism,
        cast(input_ship_strategies as array<string>) as input_ship_strategies,
        cast(ingest_id as bigint) as ingest_id,
        cast(ingested_at as timestamp) as ingested_at
    from ranked
    where recency_rank = 1

)

select * from final
