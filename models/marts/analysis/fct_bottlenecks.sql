{#-
    For each back pressure incident, the vertex that causes it, found on the job graph as Flink's
    documentation and operators' run-books advise: walk downstream from the back-pressured vertex
    to the first vertex that is not back-pressured (mean ratio <= 0.10, B6 `ok`) and busy (mean
    busy ratio >= `bottleneck_busy_ratio`); through vertices that are back-pressured themselves,
    the walk goes on, up to `bottleneck_max_depth` edges.
-#}
{%- set max_depth = var('bottleneck_max_depth') | int -%}

with

measured as (

    select * from {{ ref('int_backpressure_incidents_measured') }}

),

vertices as (

    select * from {{ ref('stg_bronze__vertices') }}

),

downstream_edges as (

    select * from {{ ref('int_vertex_edges_reversed') }}

),

graphs as (

    select
        job_id,
        map_from_entries(collect_list(struct(vertex_id, downstream_vertex_ids)))
            as downstream_by_vertex
    from downstream_edges
    group by job_id

),

incidents as (

    -- each incident with its vertices' figures by vertex id
    select
        measured.*,
        map_from_entries(transform(
            measured.vertex_figures, figures -> struct(figures.vertex_id, figures)
        )) as figures_by_vertex
    from measured

),

walks as (

    -- Breadth first, one edge per step, up to `bottleneck_max_depth` edges. A path (the vertices
    -- after the back-pressured one) goes one edge further only from a vertex that is
    -- back-pressured itself in the window (mean ratio > 0.10) and never into a vertex it already
    -- holds. The paths are kept as arrays: one expression, not a join per step.
    select
        incidents.job_id,
        incidents.vertex_id as backpressured_vertex_id,
        incidents.incident_start_ms,
        incidents.incident_end_ms,
        incidents.peak_backpressure_ratio,
        incidents.mean_backpressure_ratio,
        aggregate(
            sequence(1, {{ max_depth }}),
            named_struct(
                'walked', cast(array() as array<array<string>>),
                'frontier', array(cast(array() as array<string>))
            ),
            (walk, step) -> named_struct(
                'walked', concat(walk.walked, walk.frontier),
                'frontier', flatten(transform(
                    filter(
                        walk.frontier,
                        path -> size(path) = 0
                        or coalesce(
                            incidents.figures_by_vertex[
                                try_element_at(path, -1)
                            ].mean_backpressure_ratio > {{ tidemark_backpressure_ok_max() }},
                            false
                        )
                    ),
                    path -> transform(
                        filter(
                            coalesce(
                                graphs.downstream_by_vertex[
                                    coalesce(try_element_at(path, -1), incidents.vertex_id)
                                ],
                                cast(array() as array<string>)
                            ),
                            next_vertex_id -> not array_contains(path, next_vertex_id)
                        ),
                        next_vertex_id -> concat(path, array(next_vertex_id))
                    )
                ))
            ),
            walk -> filter(concat(walk.walked, walk.frontier), path -> size(path) > 0)
        ) as paths,
        incidents.figures_by_vertex
    from incidents
    left join graphs on incidents.job_id = graphs.job_id

),

judged as (

    -- each walked path with its last vertex's figures (NULL: no metrics in the window) and
    -- whether that vertex is the bottleneck: not back-pressured (B6 `ok`) and busy
    select
        job_id,
        backpressured_vertex_id,
        incident_start_ms,
        incident_end_ms,
        peak_backpressure_ratio,
        mean_backpressure_ratio,
        transform(
            paths,
            path -> named_struct(
                'vertex_id', element_at(path, -1),
                'depth', size(path),
                'path_vertex_ids', path,
                'figures', figures_by_vertex[element_at(path, -1)],
                'is_bottleneck', coalesce(
                    figures_by_vertex[element_at(path, -1)].mean_backpressure_ratio
                    <= {{ tidemark_backpressure_ok_max() }}
                    and figures_by_vertex[element_at(path, -1)].mean_busy_ratio
                    >= {{ var('bottleneck_busy_ratio') }},
                    false
                )
            )
        ) as candidates
    from walks

),

named as (

    select
        job_id,
        backpressured_vertex_id,
        incident_start_ms,
        incident_end_ms,
        peak_backpressure_ratio,
        mean_backpressure_ratio,
        -- the first vertex found (fewest edges away); among equals the busiest
        array_min(transform(
            filter(candidates, candidate -> candidate.is_bottleneck),
            candidate -> named_struct(
                'depth', candidate.depth,
                'busiest_first', -candidate.figures.mean_busy_ratio,
                'vertex_id', candidate.vertex_id,
                'candidate', candidate
            )
        )).candidate as bottleneck,
        size(candidates) > 0 as has_walked,
        exists(candidates, candidate -> candidate.figures is null) as has_vertex_without_metrics,
        exists(
            candidates,
            candidate -> coalesce(
                candidate.depth = {{ max_depth }}
                and not candidate.is_bottleneck
                and candidate.figures.mean_backpressure_ratio
                > {{ tidemark_backpressure_ok_max() }},
                false
            )
        ) as is_cut_at_max_depth
    from judged

),

known_vertices as (

    select
        job_id,
        vertex_id,
        true as is_known
    from vertices

),

final as (

    select
        named.job_id,
        named.incident_start_ms,
        named.incident_end_ms,
        named.backpressured_vertex_id,
        named.bottleneck.vertex_id as bottleneck_vertex_id,
        named.bottleneck.figures.hottest_subtask_index as bottleneck_subtask_index,
        named.peak_backpressure_ratio as backpressured_peak_ratio,
        named.mean_backpressure_ratio as backpressured_mean_ratio,
        named.bottleneck.figures.mean_busy_ratio as bottleneck_busy_ratio,
        named.bottleneck.figures.mean_backpressure_ratio as bottleneck_backpressure_ratio,
        named.bottleneck.figures.mean_busy_skew_pct as bottleneck_busy_skew_pct,
        named.bottleneck.figures.hottest_subtask_busy_ratio as bottleneck_subtask_busy_ratio,
        named.bottleneck.path_vertex_ids,
        case
            when named.bottleneck is null then 'none'
            when
                known_vertices.is_known is null
                or named.has_vertex_without_metrics
                then 'low'
            else 'high'
        end as confidence,
        case
            when known_vertices.is_known is null
                then 'job graph incomplete: no vertex record for the back-pressured vertex'
            when not named.has_walked
                then 'job graph incomplete: no downstream vertex recorded'
            when named.is_cut_at_max_depth
                then 'walk stopped after {{ max_depth }} edges (bottleneck_max_depth)'
            when named.has_vertex_without_metrics
                then 'a downstream vertex has no metrics in the incident window'
            when named.bottleneck is null
                then 'no downstream vertex was both not back-pressured and busy'
        end as confidence_note
    from named
    left join known_vertices
        on
            named.job_id = known_vertices.job_id
            and named.backpressured_vertex_id = known_vertices.vertex_id

)

select * from final
