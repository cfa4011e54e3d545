{{ config(materialized='ephemeral') }}
{#-
    The job graph's edges the other way round: a `vertex` record lists the vertices upstream of
    it; the walk to a bottleneck, a sink's role (B1) and dim_vertices need each vertex's
    downstream ones. One row per vertex that some vertex of its job lists upstream.
-#}

with

vertices as (

    select * from {{ ref('stg_bronze__vertices') }}

),

edges as (

    select
        vertices.job_id,
        upstream.vertex_id as upstream_vertex_id,
        vertices.vertex_id as downstream_vertex_id
    from vertices
        lateral view explode(vertices.upstream_vertex_ids) upstream as vertex_id

),

final as (

    select
        job_id,
        upstream_vertex_id as vertex_id,
        array_sort(collect_set(downstream_vertex_id)) as downstream_vertex_ids
    from edges
    where upstream_vertex_id is not null
    group by job_id, upstream_vertex_id

)

select * from final
