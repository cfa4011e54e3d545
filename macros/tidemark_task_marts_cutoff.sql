{#-
    The start of the first day the task marts keep, as SQL for the gauge plan: a scalar subquery
    over `cutoffs` (source previous_run.retention_cutoffs, which `tidemark maintain` writes) when
    that table exists, else a NULL bigint (maintain never expired them). Asked while compiling,
    from dbt's relation cache (docs/decisions/0019-retention.md,
    0022-compile-time-questions.md); a unit test gives the SQL (`overrides: macros:`).
-#}
{% macro tidemark_task_marts_cutoff(cutoffs) -%}
    {%- if execute and load_relation(cutoffs) is not none -%}
        {{- return('(select max(task_marts_cutoff_ms) from ' ~ cutoffs ~ ')') -}}
    {%- endif -%}
    {{- return('cast(null as bigint)') -}}
{%- endmacro %}
