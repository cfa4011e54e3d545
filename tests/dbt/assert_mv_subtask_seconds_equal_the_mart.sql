-- The metric view mv_subtask_seconds (contract §7, decision 0016) answers its millisecond sums
-- by job, vertex and hour as plain SQL over fct_subtask_seconds does (M3-M5). Returns mismatches.
-- tests/e2e/test_metric_views.py holds every measure by more groupings through the Thrift server.
{%- set recent = tidemark_recent_hours(ref('fct_subtask_seconds')) %}
-- The view is read last: dbt-project-evaluator counts a singular test for the last model it reads.
with

from_mart as (

    select
        job_id,
        vertex_id,
        hour_at,
        sum(busy_ms) as busy_ms,
        sum(idle_ms) as idle_ms,
        sum(backpressured_ms) as backpressured_ms,
        1000 * count(*) as measured_ms
    from {{ ref('fct_subtask_seconds') }}
    {%- if recent %}
    where {{ recent }}
    {%- endif %}
    group by job_id, vertex_id, hour_at

),

from_view as (

    select
        job_id,
        vertex_id,
        hour_at,
        measure(busy_ms) as busy_ms,
        measure(idle_ms) as idle_ms,
        measure(backpressured_ms) as backpressured_ms,
        measure(measured_ms) as measured_ms
    from {{ ref('mv_subtask_seconds') }}
    {%- if recent %}
    where {{ recent }}
    {%- endif %}
    group by job_id, vertex_id, hour_at

)

select
    from_mart.*,
    from_view.busy_ms as view_busy_ms
from from_mart
full outer join from_view
    on
        from_mart.job_id = from_view.job_id
        and from_mart.vertex_id = from_view.vertex_id
        and from_mart.hour_at = from_view.hour_at
where not (
    from_mart.busy_ms <=> from_view.busy_ms
    and from_mart.idle_ms <=> from_view.idle_ms
    and from_mart.backpressured_ms <=> from_view.backpressured_ms
    and from_mart.measured_ms <=> from_view.measured_ms
)
