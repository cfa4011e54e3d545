{#-
    The relation of this project's model `model_name` if it exists in the warehouse, else none.
    For reading a model's previous state without `ref()`, where a `ref()` would close a cycle (the
    gauge plan reads the checkpoints that the end of the same run rewrites; see
    docs/decisions/0004-gauge-incremental.md). Returns none at parse time.
-#}
{% macro tidemark_model_relation(model_name) -%}
    {%- if not execute -%}
        {{- return(none) -}}
    {%- endif -%}
    {%- set node = graph.nodes.get('model.' ~ project_name ~ '.' ~ model_name) -%}
    {%- if node is none -%}
        {{- exceptions.raise_compiler_error('tidemark_model_relation: no model named ' ~ model_name) -}}
    {%- endif -%}
    {{- return(adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias)) -}}
{%- endmacro %}
