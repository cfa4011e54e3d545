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
    {{ return(tidemark_published_table(replace_all=should_full_refresh())) }}
{%- endmaterialization %}
