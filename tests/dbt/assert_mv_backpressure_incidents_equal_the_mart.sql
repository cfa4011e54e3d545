-- The metric view mv_backpressure_incidents (contract §7, decision 0016) answers the incidents'
-- count and durations by job and vertex as plain SQL over fct_backpressure_incidents does.
-- Returns mismatches. tests/e2e/test_metric_views.py holds every measure by more groupings
-- through the Thrift server.
-- The view is read last: dbt-project-evaluator counts a singular test for the last model it reads.
with

from_mart as (

    select
        job_id,
        vertex_id,
        count(*) as incident_count,
        sum(duration_s) as incident_duration_s,
        max(duration_s) as incident_duration_s_max
    from {{ ref('fct_backpressure_incidents') }}
    group by job_id, vertex_id

),

from_view as (

    select
        job_id,
        vertex_id,
        measure(incident_count) as incident_count,
        measure(incident_duration_s) as incident_duration_s,
        measure(incident_duration_s_max) as incident_duration_s_max
    from {{ ref('mv_backpressure_incidents') }}
    group by job_id, vertex_id

)

select
    from_mart.*,
    from_view.incident_count as view_incident_count
from from_mart
full outer join from_view
    on
        from_mart.job_id = from_view.job_id
        and from_mart.vertex_id = from_view.vertex_id
where not (
    from_mart.incident_count <=> from_view.incident_count
    and from_mart.incident_duration_s <=> from_view.incident_duration_s
    and from_mart.incident_duration_s_max <=> from_view.incident_duration_s_max
)
