{#-
    dbt-spark's `table`, except that a mart's rebuilt table replaces the old one in one metastore
    step (tidemark_publish) instead of a drop followed by a create, between which a query found no
    table (docs/decisions/0015-consistent-reads.md). Models that do not publish (`publish:
    false`, Delta, Python) get dbt-spark's own materialization unchanged.
-#}
{% materialization table, adapter='spark', supported_languages=['sql', 'python'] -%}
    {%- if not tidemark_publishes() -%}
        {{ return(dbt.materialization_table_spark()) }}
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
        {% do tidemark_publish(this, compiled_code, replace_all=true) %}
    {%- endif -%}
    {% do persist_docs(this, model) %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
{%- endmaterialization %}
