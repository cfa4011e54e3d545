{#-
    The newest bronze commit (`ingest_id`) that a checkpoint of the previous run accounts for,
    -1 for none: read once while compiling by both plans, so that it reaches their bronze scans
    as a literal (tidemark_bronze_reach; docs/decisions/0022-compile-time-questions.md).
-#}
{% macro tidemark_progress(checkpoint) -%}
    {%- set answer = run_query('select coalesce(max(processed_ingest_id), -1) from ' ~ checkpoint) -%}
    {{- return(answer.columns[0].values()[0] | int) -}}
{%- endmacro %}
