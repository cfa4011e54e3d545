{#- Spark metric view of semantic model backpressure_incidents: incidents, their duration and
    mean duration by job and vertex (name), per second, minute and hour of their start. Generated
    from _semantic_layer.yml (tidemark_metric_view_yaml); the refs name what it reads. -#}
{{ tidemark_metric_view_yaml(
    'backpressure_incidents', [ref('fct_backpressure_incidents'), ref('dim_vertices')]
) }}
