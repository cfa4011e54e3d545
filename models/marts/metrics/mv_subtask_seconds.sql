{#- Spark metric view of semantic model subtask_seconds: busy, idle and back-pressure ratios and
    the milliseconds behind them, by job, vertex (name) and subtask, per second, minute and hour.
    Generated from _semantic_layer.yml (tidemark_metric_view_yaml); the refs name what it reads. -#}
{{ tidemark_metric_view_yaml(
    'subtask_seconds', [ref('fct_subtask_seconds'), ref('dim_vertices')]
) }}
