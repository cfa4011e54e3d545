with

source as (

    select * from {{ source('bronze', 'timer_events') }}

),

final as (

    select
        cast(job_id as string) as job_id,
        cast(vertex_id as string) as vertex_id,
        cast(subtask_index as int) as subtask_index,
        cast(attempt as int) as attempt,
        cast(seq as bigint) as seq,
        cast(ts_ms as bigint) as ts_ms,
        cast(timer as string) as timer,
        -- Flink <= 1.14's single gauge `backpressured` is the soft gauge (contract §1, M3).
        case
            when timer = 'backpressured' then 'soft_backpressured'
            else cast(timer as string)
        end as gauge,
        cast(action as string) as action,
        -- NULL for `update` (a view round, V3), which starts or ends nothing.
        case when action != 'update' then action = 'start' end as is_start,
        cast(published as bigint) as published,
        cast(ingest_id as bigint) as ingest_id,
        cast(ingested_at as timestamp) as ingested_at,
        data_file
    from source

)

select * from final
