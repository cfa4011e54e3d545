{#-
    A pre-hook that brings the model's own table, built by an earlier release, to the columns this
    release writes: `alter table {{ this }} add columns (...)` when the table exists and lacks the
    first of `columns` (SQL, "name type, ..."); its rows from before read NULL there. Nothing on a
    first build or once the columns are there. One `describe` of the table.
-#}
{% macro tidemark_add_columns(columns) -%}
    {%- if execute -%}
        {%- set existing = load_relation(this) -%}
        {%- if existing is not none and columns.split(' ')[0] not in (
            adapter.get_columns_in_relation(existing) | map(attribute='name') | list
        ) -%}
            alter table {{ existing }} add columns ({{ columns }})
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
