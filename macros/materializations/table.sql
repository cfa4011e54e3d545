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
    {{ return(tidemark_published_table(replace_all=true)) }}
{%- endmaterialization %}
