{{ config(materialized='ephemeral') }}
{#-
    Each back pressure incident with the figures of every vertex of its job over the incident's
    window: the vertex's mean back pressure and busy ratios and busy skew (fct_vertex_seconds,
    U1) and its hottest subtask (fct_subtask_seconds). fct_bottlenecks walks the job graph
    through them.
-#}

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

    -- per incident, every vertex's figures over its window, in vertex order
    select
        vertex_figures.job_id,
        vertex_figures.backpressured_vertex_id,
        vertex_figures.incident_start_ms,
        array_sort(collect_list(named_struct(
            'vertex_id', vertex_figures.vertex_id,
            'mean_backpressure_ratio', vertex_figures.mean_backpressure_ratio,
            'mean_busy_ratio', vertex_figures.mean_busy_ratio,
            'mean_busy_skew_pct', vertex_figures.mean_busy_skew_pct,
            'hottest_subtask_index', hottest_subtasks.hottest.subtask_index,
            'hottest_subtask_busy_ratio', hottest_subtasks.hottest.mean_busy_ratio
        ))) as vertex_figures
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

final as (

    select
        incidents.job_id,
        incidents.vertex_id,
        incidents.incident_start_ms,
        incidents.incident_end_ms,
        incidents.peak_backpressure_ratio,
        incidents.mean_backpressure_ratio,
        figures_by_incident.vertex_figures
    from incidents
    left join figures_by_incident
        on
            incidents.job_id = figures_by_incident.job_id
            and incidents.vertex_id = figures_by_incident.backpressured_vertex_id
            and incidents.incident_start_ms = figures_by_incident.incident_start_ms

)

select * from final
