{#-
    The folder a managed table of `relation`'s name has in its schema (Spark's default table
    path): the publish procedure keeps every version of the table's files below it, and deletes
    nothing outside it.
-#}
{% macro tidemark_table_home(relation) -%}
    {%- set described = run_query('describe database extended ' ~ relation.schema) -%}
    {%- for row in described.rows if row[0] == 'Location' -%}
        {{ return(row[1].rstrip('/') ~ '/' ~ relation.identifier) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error('no location for schema ' ~ relation.schema) }}
{%- endmacro %}
