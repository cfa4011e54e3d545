{#-
    Whether this model's table is replaced through tidemark_publish: when the model says
    `publish: true` (the marts folder does, in dbt_project.yml), is SQL, and is Parquet. Delta
    tables (TIDEMARK_DELTA=native) already give every reader a whole snapshot.
-#}
{% macro tidemark_publishes() -%}
    {{ return(
        config.get('publish', false)
        and model.language == 'sql'
        and config.get('file_format', 'parquet') == 'parquet'
    ) }}
{%- endmacro %}
