{#-
    Whether a plan may resume from the previous run's state: not a --full-refresh, and every one of
    `checkpoints` (source('previous_run', ...) relations) exists. Otherwise the plan replays every
    task from its first event. One metastore lookup per checkpoint, from dbt's relation cache
    (docs/decisions/0022-compile-time-questions.md).
-#}
{% macro tidemark_resumes(checkpoints) -%}
    {%- if not execute or flags.FULL_REFRESH -%}
        {{- return(false) -}}
    {%- endif -%}
    {%- for checkpoint in checkpoints -%}
        {%- if load_relation(checkpoint) is none -%}
            {{- return(false) -}}
        {%- endif -%}
    {%- endfor -%}
    {{- return(true) -}}
{%- endmacro %}
