-- The metric view mv_watermark_seconds (contract §7, decision 0016) answers the watermark lag's
-- maximum and mean by job, vertex and hour as plain SQL over fct_watermark_seconds does.
-- Returns mismatches (means within 1e-9). tests/e2e/test_metric_views.py holds every measure
-- by more groupings through the Thrift server. The view is named last: dbt-project-evaluator
-- counts a singular test for the last model it reads.
{{ tidemark_measures_equal_the_mart(
    mart=ref('fct_watermark_seconds'),
    view=ref('mv_watermark_seconds'),
    keys=['job_id', 'vertex_id', 'hour_at'],
    measures={
        'watermark_lag_ms': 'avg(watermark_lag_ms)',
        'watermark_lag_ms_max': 'max(watermark_lag_ms)',
    },
    tolerances={'watermark_lag_ms': '1e-9'},
    recent=true,
) }}
