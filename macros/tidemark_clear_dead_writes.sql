{#-
    on-run-start: the folders that a table's `CREATE TABLE AS SELECT` left when its process died
    part-way (SIGKILL, the OOM killer, a machine's restart), deleted before any model runs.

    Spark writes a new table's files into the table's folder first (`.spark-staging-*`,
    `_temporary`) and enters the table into the metastore only at the end; and it refuses to
    create a managed table over a folder that holds files (LOCATION_ALREADY_EXISTS). A kill
    during a table's first build, or during dbt-spark's rebuild of a `table` model (dropped,
    then created again), so failed every later build of that model until a person deleted the
    folder (issue 64). A table or incremental model of this run that has no table is built from
    scratch, so what its folder holds belongs to no table: `CALL tidemark_system.marts.drop_table`
    deletes it (and its table, were there one after all). One call per such model, none when
    every table exists (a schedule's build), from dbt's relation cache.
-#}
{% macro tidemark_clear_dead_writes() -%}
    {%- if execute -%}
        {%- for node in graph.nodes.values()
            if node.resource_type == 'model'
            and node.unique_id in selected_resources
            and node.config.materialized in ['table', 'incremental']
            and adapter.get_relation(node.database, node.schema, node.alias) is none -%}
            {%- set relation = api.Relation.create(
                database=node.database, schema=node.schema, identifier=node.alias, type='table'
            ) -%}
            {%- do run_query(
                'call ' ~ tidemark_procedure('drop_table') ~ "('" ~ relation ~ "')"
            ) -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{%- endmacro %}
