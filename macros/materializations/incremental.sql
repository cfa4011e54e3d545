{#-
    dbt-spark's `incremental`, except that a mart's new partitions replace the old ones in one
    metastore step (tidemark_publish), so a query during the build reads every partition as
    before it or every one as after, never an emptied or half-written one
    (docs/decisions/0015-consistent-reads.md). Models that do not publish (`publish: false`,
    Delta, Python) get dbt-spark's own materialization unchanged.
-#}
{% materialization incremental, adapter='spark', supported_languages=['sql', 'python'] -%}
    {%- if not tidemark_publishes() -%}
        {{ return(dbt.materialization_incremental_spark()) }}
    {%- endif -%}
    {%- set existing = load_relation(this) -%}
    {{ run_hooks(pre_hooks) }}
    {%- if existing is none or existing.is_view -%}
        {%- if existing is not none -%}
            {% do adapter.drop_relation(existing) %}
        {%- endif -%}
        {%- call statement('main') -%}
            {{ create_table_as(False, this, compiled_code) }}
        {%- endcall -%}
    {%- else -%}
        {% do tidemark_publish(this, compiled_code, replace_all=should_full_refresh()) %}
    {%- endif -%}
    {% do persist_docs(this, model) %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
{%- endmaterialization %}
