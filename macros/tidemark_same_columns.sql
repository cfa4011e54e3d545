{#-
    Whether relations `a` and `b` have the same columns: names and types, in order.
-#}
{% macro tidemark_same_columns(a, b) -%}
    {%- set left = adapter.get_columns_in_relation(a) -%}
    {%- set right = adapter.get_columns_in_relation(b) -%}
    {%- set ns = namespace(same=(left | length) == (right | length)) -%}
    {%- for column in left if ns.same -%}
        {%- set other = right[loop.index0] -%}
        {%- set ns.same = column.name | lower == other.name | lower
            and column.data_type | lower == other.data_type | lower -%}
    {%- endfor -%}
    {{ return(ns.same) }}
{%- endmacro %}
