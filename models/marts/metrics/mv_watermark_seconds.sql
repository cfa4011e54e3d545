{#- Spark metric view of semantic model watermark_seconds: mean and worst watermark lag by job,
    vertex (name) and subtask, per second, minute and hour. Generated from _semantic_layer.yml
    (tidemark_metric_view_yaml); the refs name what it reads. -#}
{{ tidemark_metric_view_yaml(
    'watermark_seconds', [ref('fct_watermark_seconds'), ref('dim_vertices')]
) }}
