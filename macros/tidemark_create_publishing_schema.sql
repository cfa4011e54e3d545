{#-
    on-run-start: the schema tidemark_publish stages marts in, `<target schema>_publishing`, made
    when missing. Looked up first: Hive's metastore logs an error for every CREATE DATABASE IF NOT
    EXISTS of a database that exists, although it is ignored.
-#}
{% macro tidemark_create_publishing_schema() -%}
    {%- set schema = target.schema ~ '_publishing' -%}
    {%- if execute and not run_query("show databases like '" ~ schema ~ "'").rows -%}
        create database if not exists {{ schema }}
    {%- else -%}
        select 1
    {%- endif -%}
{%- endmacro %}
