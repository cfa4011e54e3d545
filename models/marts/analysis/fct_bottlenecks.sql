{#-
    For each back pressure incident, the vertex that causes it, found on the job graph as Flink's
    documentation and operators' run-books advise: walk downstream from the back-pressured vertex
    to the first vertex that is not back-pressured (mean ratio <= 0.10, B6 `ok`) and busy (mean
    busy ratio >= `bottleneck_busy_ratio`); through vertices that are back-pressured themselves,
    the walk goes on, up to `bottleneck_max_depth` edges.
-#}
{%- set max_depth = var('bottleneck_max_depth') | int -%}

with

incidents as (

    select * from {{ ref('fct_backpressure_incidents') }}

),

vertex_seconds as (

    select * from {{ ref('fct_vertex_seconds') }}

),

subtask_seconds as (

    select * from {{ ref('fct_subtask_seconds') }}

),

vertices as (

    select * from {{ ref('stg_bronze__vertices') }}

),

edges as (

    select
        job_id,
        upstream_vertex_id as from_vertex_id,
        vertex_id as to_vertex_id
    from vertices
        lateral view explode(upstream_vertex_ids) exploded as upstream_vertex_id

),

incident_hours as (

    -- each incident once per hour it touches, to join the marts' seconds by (job, hour)
    select
        incidents.job_id,
        incidents.vertex_id,
        incidents.incident_start_ms,
        incidents.incident_end_ms,
        spanned.hour_at
    from incidents
        lateral view explode(
            {{ tidemark_hours_spanned('incidents.incident_start_ms', 'incidents.incident_end_ms') }}
        ) spanned as hour_at

),

vertex_figures as (

    -- each vertex of the job over the incident's window
    select
        incident_hours.job_id,
        incident_hours.vertex_id as backpressured_vertex_id,
        incident_hours.incident_start_ms,
        vertex_seconds.vertex_id,
        -- Ratios from integer milliseconds, one division each, so that a constant 100 ms is
        -- exactly the bound 0.10 rather than an ulp above it.
        sum(vertex_seconds.max_backpressured_ms)
        / (count(vertex_seconds.max_backpressured_ms) * 1000) as mean_backpressure_ratio,
        sum(vertex_seconds.max_busy_ms)
        / (count(vertex_seconds.max_busy_ms) * 1000) as mean_busy_ratio,
        avg(vertex_seconds.busy_skew_pct) as mean_busy_skew_pct
    from incident_hours
    inner join vertex_seconds
        on
            incident_hours.job_id = vertex_seconds.job_id
            and incident_hours.hour_at = vertex_seconds.hour_at
            and vertex_seconds.second_start_ms >= incident_hours.incident_start_ms
            and vertex_seconds.second_start_ms < incident_hours.incident_end_ms
    group by
        incident_hours.job_id,
        incident_hours.vertex_id,
        incident_hours.incident_start_ms,
        vertex_seconds.vertex_id

),

subtask_figures as (

    -- each subtask of the job over the incident's window
    select
        incident_hours.job_id,
        incident_hours.vertex_id as backpressured_vertex_id,
        incident_hours.incident_start_ms,
        subtask_seconds.vertex_id,
        subtask_seconds.subtask_index,
        sum(subtask_seconds.busy_ms) / (count(subtask_seconds.busy_ms) * 1000) as mean_busy_ratio,
        avg(subtask_seconds.busy_ms) as mean_busy_ms
    from incident_hours
    inner join subtask_seconds
        on
            incident_hours.job_id = subtask_seconds.job_id
            and incident_hours.hour_at = subtask_seconds.hour_at
            and subtask_seconds.second_start_ms >= incident_hours.incident_start_ms
            and subtask_seconds.second_start_ms < incident_hours.incident_end_ms
    where subtask_seconds.busy_ms is not null
    group by
        incident_hours.job_id,
        incident_hours.vertex_id,
        incident_hours.incident_start_ms,
        subtask_seconds.vertex_id,
        subtask_seconds.subtask_index

),

hottest_subtasks as (

    -- each vertex's subtask with the highest mean busy time; among equals the lowest index
    select
        job_id,
        backpressured_vertex_id,
        incident_start_ms,
        vertex_id,
        max_by(
            named_struct('subtask_index', subtask_index, 'mean_busy_ratio', mean_busy_ratio),
            named_struct('mean_busy_ms', mean_busy_ms, 'lower_index', -subtask_index)
        ) as hottest
    from subtask_figures
    group by job_id, backpressured_vertex_id, incident_start_ms, vertex_id

),

figures_by_incident as (

    -- per incident, every vertex's figures over its window, by vertex id
    select
        vertex_figures.job_id,
        vertex_figures.backpressured_vertex_id,
        vertex_figures.incident_start_ms,
        map_from_entries(collect_list(struct(
            vertex_figures.vertex_id,
            named_struct(
                'mean_backpressure_ratio', vertex_figures.mean_backpressure_ratio,
                'mean_busy_ratio', vertex_figures.mean_busy_ratio,
                'mean_busy_skew_pct', vertex_figures.mean_busy_skew_pct,
                'hottest_subtask_index', hottest_subtasks.hottest.subtask_index,
                'hottest_subtask_busy_ratio', hottest_subtasks.hottest.mean_busy_ratio
            )
        ))) as figures_by_vertex
    from vertex_figures
    left join hottest_subtasks
        on
            vertex_figures.job_id = hottest_subtasks.job_id
            and vertex_figures.backpressured_vertex_id = hottest_subtasks.backpressured_vertex_id
            and vertex_figures.incident_start_ms = hottest_subtasks.incident_start_ms
            and vertex_figures.vertex_id = hottest_subtasks.vertex_id
    group by
        vertex_figures.job_id,
        vertex_figures.backpressured_vertex_id,
        vertex_figures.incident_start_ms

),

downstream as (

    select
        job_id,
        from_vertex_id,
        collect_list(to_vertex_id) as to_vertex_ids
    from edges
    where from_vertex_id is not null
    group by job_id, from_vertex_id

),

graphs as (

    select
        job_id,
        map_from_entries(collect_list(struct(from_vertex_id, to_vertex_ids)))
            as downstream_by_vertex
    from downstream
    group by job_id

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
        figures_by_incident.figures_by_vertex,
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
                            figures_by_incident.figures_by_vertex[
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
        ) as paths
    from incidents
    inner join graphs on incidents.job_id = graphs.job_id
    left join figures_by_incident
        on
            incidents.job_id = figures_by_incident.job_id
            and incidents.vertex_id = figures_by_incident.backpressured_vertex_id
            and incidents.incident_start_ms = figures_by_incident.incident_start_ms

),

judged as (

    -- each walked path with its last vertex's figures (NULL: no metrics in the window) and
    -- whether that vertex is the bottleneck: not back-pressured (B6 `ok`) and busy
    select
        job_id,
        backpressured_vertex_id,
        incident_start_ms,
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
        incidents.job_id,
        incidents.incident_start_ms,
        incidents.incident_end_ms,
        incidents.vertex_id as backpressured_vertex_id,
        named.bottleneck.vertex_id as bottleneck_vertex_id,
        named.bottleneck.figures.hottest_subtask_index as bottleneck_subtask_index,
        incidents.peak_backpressure_ratio as backpressured_peak_ratio,
        incidents.mean_backpressure_ratio as backpressured_mean_ratio,
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
            when not coalesce(named.has_walked, false)
                then 'job graph incomplete: no downstream vertex recorded'
            when named.is_cut_at_max_depth
                then 'walk stopped after {{ max_depth }} edges (bottleneck_max_depth)'
            when named.has_vertex_without_metrics
                then 'a downstream vertex has no metrics in the incident window'
            when named.bottleneck is null
                then 'no downstream vertex was both not back-pressured and busy'
        end as confidence_note
    from incidents
    left join named
        on
            incidents.job_id = named.job_id
            and incidents.vertex_id = named.backpressured_vertex_id
            and incidents.incident_start_ms = named.incident_start_ms
    left join known_vertices
        on
            incidents.job_id = known_vertices.job_id
            and incidents.vertex_id = known_vertices.vertex_id

)

select * from final
