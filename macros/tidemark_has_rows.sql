{#-
    Whether `relation` holds a row, asked while compiling (one `limit 1` query; true at parse
    time). A model whose result is empty without that relation's rows reads nothing else then: a
    `where false` lets Spark plan an empty result instead of scanning, e.g., every timer event
    ever landed to pair it with no capture gap. Unit tests of such a model override it.
-#}
{% macro tidemark_has_rows(relation) -%}
    {%- if not execute -%}
        {{- return(true) -}}
    {%- endif -%}
    {%- set found = run_query('select 1 from ' ~ relation ~ ' limit 1') -%}
    {{- return(found.rows | length > 0) -}}
{%- endmacro %}
