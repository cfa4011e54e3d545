{#-
    Schemas are named exactly as configured (tidemark_staging, tidemark_intermediate) and marts
    land in the target's schema, `tidemark`, whatever the target: the contract fixes
    `tidemark.fct_*`, so dbt's default `<target>_<custom>` prefixing is not wanted.
-#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
