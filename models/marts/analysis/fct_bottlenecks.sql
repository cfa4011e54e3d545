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

window_figures as (

    -- each vertex of the job over the incident's window
    select
        incidents.job_id,
        incidents.vertex_id as backpressured_vertex_id,
        incidents.incident_start_ms,
        vertex_seconds.vertex_id,
        avg(vertex_seconds.max_backpressure_ratio) as mean_backpressure_ratio,
        avg(vertex_seconds.max_busy_ms) / 1000 as mean_busy_ratio,
        avg(vertex_seconds.busy_skew_pct) as mean_busy_skew_pct
    from incidents
    inner join vertex_seconds
        on
            incidents.job_id = vertex_seconds.job_id
            and vertex_seconds.second_start_ms >= incidents.incident_start_ms
            and vertex_seconds.second_start_ms < incidents.incident_end_ms
    group by
        incidents.job_id,
        incidents.vertex_id,
        incidents.incident_start_ms,
        vertex_seconds.vertex_id

),

walk_1 as (

    select
        incidents.job_id,
        incidents.vertex_id as backpressured_vertex_id,
        incidents.incident_start_ms,
        edges.to_vertex_id as vertex_id,
        1 as depth,
        array(edges.to_vertex_id) as path_vertex_ids
    from incidents
    inner join edges
        on
            incidents.job_id = edges.job_id
            and incidents.vertex_id = edges.from_vertex_id

),

{% for depth in range(2, max_depth + 1) %}
walk_{{ depth }} as (

    -- through a downstream vertex that is back-pressured itself, one edge further
    select
        walk_{{ depth - 1 }}.job_id,
        walk_{{ depth - 1 }}.backpressured_vertex_id,
        walk_{{ depth - 1 }}.incident_start_ms,
        edges.to_vertex_id as vertex_id,
        {{ depth }} as depth,
        concat(walk_{{ depth - 1 }}.path_vertex_ids, array(edges.to_vertex_id)) as path_vertex_ids
    from walk_{{ depth - 1 }}
    inner join window_figures
        on
            walk_{{ depth - 1 }}.job_id = window_figures.job_id
            and walk_{{ depth - 1 }}.backpressured_vertex_id = window_figures.backpressured_vertex_id
            and walk_{{ depth - 1 }}.incident_start_ms = window_figures.incident_start_ms
            and walk_{{ depth - 1 }}.vertex_id = window_figures.vertex_id
    inner join edges
        on
            walk_{{ depth - 1 }}.job_id = edges.job_id
            and walk_{{ depth - 1 }}.vertex_id = edges.from_vertex_id
    where
        window_figures.mean_backpressure_ratio > 0.10
        and not array_contains(walk_{{ depth - 1 }}.path_vertex_ids, edges.to_vertex_id)

),
{% endfor %}

walked as (

    {% for depth in range(1, max_depth + 1) -%}
    select * from walk_{{ depth }}
    {% if not loop.last %}union all{% endif %}
    {% endfor %}

),

judged as (

    select
        walked.*,
        window_figures.mean_backpressure_ratio,
        window_figures.mean_busy_ratio,
        window_figures.mean_busy_skew_pct,
        window_figures.vertex_id is null as is_without_metrics,
        coalesce(
            window_figures.mean_backpressure_ratio <= 0.10
            and window_figures.mean_busy_ratio >= {{ var('bottleneck_busy_ratio') }},
            false
        ) as is_bottleneck
    from walked
    left join window_figures
        on
            walked.job_id = window_figures.job_id
            and walked.backpressured_vertex_id = window_figures.backpressured_vertex_id
            and walked.incident_start_ms = window_figures.incident_start_ms
            and walked.vertex_id = window_figures.vertex_id

),

ranked as (

    -- the first vertex found (fewest edges away); among equals the busiest
    select
        judged.*,
        row_number() over (
            partition by job_id, backpressured_vertex_id, incident_start_ms
            order by depth, mean_busy_ratio desc, vertex_id
        ) as candidate_rank
    from judged
    where is_bottleneck

),

named as (

    select * from ranked where candidate_rank = 1

),

walk_summary as (

    select
        job_id,
        backpressured_vertex_id,
        incident_start_ms,
        count(*) as walked_vertices,
        max(cast(is_without_metrics as int)) = 1 as has_vertex_without_metrics,
        max(depth) as deepest_step,
        max(
            case
                when depth = {{ max_depth }} and not is_bottleneck
                    and mean_backpressure_ratio > 0.10 then 1
                else 0
            end
        ) = 1 as is_cut_at_max_depth
    from judged
    group by job_id, backpressured_vertex_id, incident_start_ms

),

known_vertices as (

    select
        job_id,
        vertex_id,
        true as is_known
    from vertices

),

hottest_subtasks as (

    select
        named.job_id,
        named.backpressured_vertex_id,
        named.incident_start_ms,
        subtask_seconds.subtask_index,
        avg(subtask_seconds.busy_ms) / 1000 as mean_busy_ratio,
        row_number() over (
            partition by
                named.job_id, named.backpressured_vertex_id, named.incident_start_ms
            order by avg(subtask_seconds.busy_ms) desc, subtask_seconds.subtask_index
        ) as heat_rank
    from named
    inner join incidents
        on
            named.job_id = incidents.job_id
            and named.backpressured_vertex_id = incidents.vertex_id
            and named.incident_start_ms = incidents.incident_start_ms
    inner join subtask_seconds
        on
            named.job_id = subtask_seconds.job_id
            and named.vertex_id = subtask_seconds.vertex_id
            and subtask_seconds.second_start_ms >= incidents.incident_start_ms
            and subtask_seconds.second_start_ms < incidents.incident_end_ms
    where subtask_seconds.busy_ms is not null
    group by
        named.job_id,
        named.backpressured_vertex_id,
        named.incident_start_ms,
        subtask_seconds.subtask_index

),

final as (

    select
        incidents.job_id,
        incidents.incident_start_ms,
        incidents.incident_end_ms,
        incidents.vertex_id as backpressured_vertex_id,
        named.vertex_id as bottleneck_vertex_id,
        hottest_subtasks.subtask_index as bottleneck_subtask_index,
        incidents.peak_backpressure_ratio as backpressured_peak_ratio,
        incidents.mean_backpressure_ratio as backpressured_mean_ratio,
        named.mean_busy_ratio as bottleneck_busy_ratio,
        named.mean_backpressure_ratio as bottleneck_backpressure_ratio,
        named.mean_busy_skew_pct as bottleneck_busy_skew_pct,
        hottest_subtasks.mean_busy_ratio as bottleneck_subtask_busy_ratio,
        named.path_vertex_ids,
        case
            when named.vertex_id is null then 'none'
            when
                known_vertices.is_known is null
                or walk_summary.has_vertex_without_metrics
                then 'low'
            else 'high'
        end as confidence,
        case
            when known_vertices.is_known is null
                then 'job graph incomplete: no vertex record for the back-pressured vertex'
            when walk_summary.walked_vertices is null
                then 'job graph incomplete: no downstream vertex recorded'
            when walk_summary.is_cut_at_max_depth
                then 'walk stopped after {{ max_depth }} edges (bottleneck_max_depth)'
            when walk_summary.has_vertex_without_metrics
                then 'a downstream vertex has no metrics in the incident window'
            when named.vertex_id is null
                then 'no downstream vertex was both not back-pressured and busy'
        end as confidence_note
    from incidents
    left join named
        on
            incidents.job_id = named.job_id
            and incidents.vertex_id = named.backpressured_vertex_id
            and incidents.incident_start_ms = named.incident_start_ms
    left join hottest_subtasks
        on
            named.job_id = hottest_subtasks.job_id
            and named.backpressured_vertex_id = hottest_subtasks.backpressured_vertex_id
            and named.incident_start_ms = hottest_subtasks.incident_start_ms
            and hottest_subtasks.heat_rank = 1
    left join walk_summary
        on
            incidents.job_id = walk_summary.job_id
            and incidents.vertex_id = walk_summary.backpressured_vertex_id
            and incidents.incident_start_ms = walk_summary.incident_start_ms
    left join known_vertices
        on
            incidents.job_id = known_vertices.job_id
            and incidents.vertex_id = known_vertices.vertex_id

)

select * from final
