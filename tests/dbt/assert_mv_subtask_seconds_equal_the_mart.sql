-- The metric view mv_subtask_seconds (contract §7, decision 0016) answers its millisecond sums
-- by job, vertex and hour as plain SQL over fct_subtask_seconds does (M3-M5). Returns mismatches.
-- tests/e2e/test_metric_views.py holds every measure by more groupings through the Thrift server.
-- The view is named last: dbt-project-evaluator counts a singular test for the last model it reads.
{{ tidemark_measures_equal_the_mart(
    mart=ref('fct_subtask_seconds'),
    view=ref('mv_subtask_seconds'),
    keys=['job_id', 'vertex_id', 'hour_at'],
    measures={
        'busy_ms': 'sum(busy_ms)',
        'idle_ms': 'sum(idle_ms)',
        'backpressured_ms': 'sum(backpressured_ms)',
        'measured_ms': '1000 * count(*)',
    },
    recent=true,
) }}
