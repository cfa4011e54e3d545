-- The metric view mv_watermark_seconds (contract §7, decision 0016) answers the watermark lag's
-- maximum and mean by job, vertex and hour as plain SQL over fct_watermark_seconds does.
-- Returns mismatches (means within 1e-9). tests/e2e/test_metric_views.py holds every measure
-- by more groupings through the Thrift server.
{%- set recent = tidemark_recent_hours(ref('fct_watermark_seconds')) %}
-- The view is read last: dbt-project-evaluator counts a singular test for the last model it reads.
with

from_mart as (

    select
        job_id,
        vertex_id,
        hour_at,
        avg(watermark_lag_ms) as watermark_lag_ms,
        max(watermark_lag_ms) as watermark_lag_ms_max
    from {{ ref('fct_watermark_seconds') }}
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
        measure(watermark_lag_ms) as watermark_lag_ms,
        measure(watermark_lag_ms_max) as watermark_lag_ms_max
    from {{ ref('mv_watermark_seconds') }}
    {%- if recent %}
    where {{ recent }}
    {%- endif %}
    group by job_id, vertex_id, hour_at

)

select
    from_mart.*,
    from_view.watermark_lag_ms as view_watermark_lag_ms
from from_mart
full outer join from_view
    on
        from_mart.job_id = from_view.job_id
        and from_mart.vertex_id = from_view.vertex_id
        and from_mart.hour_at = from_view.hour_at
where not (
    from_mart.watermark_lag_ms_max <=> from_view.watermark_lag_ms_max
    and coalesce(
        abs(from_mart.watermark_lag_ms - from_view.watermark_lag_ms) <= 1e-9,
        from_mart.watermark_lag_ms is null and from_view.watermark_lag_ms is null
    )
)
