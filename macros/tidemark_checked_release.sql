{#-
    A Flink release named by a dbt var (flink_release, flink_release_by_job), as it is, when it is
    "MAJOR.MINOR" followed by nothing, ".PATCH" or "-SUFFIX" (1.15, 2.3.0, 1.20-SNAPSHOT): the
    rules are read from its first two numbers (int_job_releases_resolved). Anything else fails the
    build, saying which value; a quote never reaches the SQL.
-#}
{% macro tidemark_checked_release(release) -%}
    {%- set text = release | string -%}
    {%- if not modules.re.match('^[0-9]+\.[0-9]+([.-][A-Za-z0-9.-]*)?$', text) -%}
        {{ exceptions.raise_compiler_error(
            "flink_release '" ~ text ~ "' is not a Flink release like 1.15 or 2.3.0") }}
    {%- endif -%}
    {{- text -}}
{%- endmacro %}
