{{ config(materialized='table') }}
{#-
    The job graph a person reads: one row per (job_id, vertex_id), the latest `vertex` record
    landed for it (stg_bronze__vertices), with its downstream edges and role. BI tools join it on
    (job_id, vertex_id) to show vertex names instead of ids.
-#}

with

vertices as (

    select * from {{ ref('stg_bronze__vertices') }}

),

downstream as (

    select * from {{ ref('int_vertex_edges_reversed') }}

),

final as (

    select
        vertices.job_id,
        vertices.vertex_id,
        vertices.vertex_name,
        vertices.parallelism,
        coalesce(vertices.upstream_vertex_ids, array()) as upstream_vertex_ids,
        coalesce(downstream.downstream_vertex_ids, array()) as downstream_vertex_ids,
        size(coalesce(vertices.upstream_vertex_ids, array())) = 0 as is_source,
        downstream.vertex_id is null as is_sink,
        -- M5: only legacy SourceFunction sources run with busy time disabled.
        not vertices.is_busy_time_enabled as is_legacy_source,
        vertices.ingested_at as updated_at
    from vertices
    left join downstream
        on
            vertices.job_id = downstream.job_id
            and vertices.vertex_id = downstream.vertex_id

)

select * from final
