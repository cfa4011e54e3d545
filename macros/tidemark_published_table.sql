{#-
    The body of the `incremental` and `table` materializations for a model that publishes: the
    first build creates the table (nobody can read it before), every later one publishes into it
    (tidemark_publish), all of it (`replace_all`) or the partitions its rows fill.
-#}
{% macro tidemark_published_table(replace_all) -%}
    {%- set existing = load_relation(this) -%}
    {{ run_hooks(pre_hooks) }}
    {%- if existing is none or existing.is_view -%}
        {%- if existing is not none -%}
            {% do adapter.drop_relation(existing) %}
        {%- endif -%}
        {%- call statement('main') -%}
            {{ create_table_as(False, this, tidemark_one_file_per_partition(compiled_code)) }}
        {%- endcall -%}
    {%- else -%}
        {% do tidemark_publish(this, compiled_code, replace_all=replace_all) %}
    {%- endif -%}
    {% do persist_docs(this, model) %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
{%- endmacro %}
