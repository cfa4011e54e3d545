{#-
    Whether this run of the timer gauge models can work incrementally: not a --full-refresh, and the
    checkpoints, all three gauge marts and the sampled back pressure counts exist. Otherwise the
    plan replays every task from its first event and every gauge model is rebuilt from it.
-#}
{% macro tidemark_gauge_is_incremental() -%}
    {%- if not execute or flags.FULL_REFRESH -%}
        {{- return(false) -}}
    {%- endif -%}
    {%- for model_name in [
        'int_timer_tasks_checkpointed',
        'int_timer_seconds_checkpointed',
        'fct_subtask_seconds',
        'fct_subtask_flink_gauges',
        'fct_vertex_seconds',
        'int_backpressure_samples_counted',
    ] -%}
        {%- if tidemark_model_relation(model_name) is none -%}
            {{- return(false) -}}
        {%- endif -%}
    {%- endfor -%}
    {{- return(true) -}}
{%- endmacro %}
