{#-
    on-run-start: the schemas tidemark_publish stages tables in, `<schema>_publishing` for each
    schema holding a model that publishes (the marts' and the state's), made when missing. Looked
    up first: Hive's metastore logs an error for every CREATE DATABASE IF NOT EXISTS of a
    database that exists, although it is ignored.
-#}
{% macro tidemark_create_publishing_schema() -%}
    {%- if execute -%}
        {%- set schemas = [] -%}
        {%- for node in graph.nodes.values()
            if node.resource_type == 'model' and node.config.get('publish', false)
            and node.schema ~ '_publishing' not in schemas -%}
            {%- do schemas.append(node.schema ~ '_publishing') -%}
        {%- endfor -%}
        {%- set present = run_query("show databases like '*_publishing'").columns[0].values() -%}
        {%- for schema in schemas | sort if schema not in present -%}
            {%- do run_query('create database if not exists ' ~ schema) -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{%- endmacro %}
