{#-
    Writes `sql`'s rows as a new version of `target` and publishes it in one metastore step
    (CALL tidemark_system.marts.publish, src/tidemark/spark/java/; docs/decisions/0015).

    The rows are written, one file per partition (a mart never gathers small files), to a stage
    table in `<schema>_publishing` (made by the project's
    on-run-start hook) whose files lie in a new
    folder below the target's own, `_tidemark_versions/<version>`. Then the stage's partitions
    replace the target's partitions of the same values (an incremental run); with `replace_all`
    (a full build) the target's other partitions go too, and an unpartitioned target is pointed at
    the stage's folder. The folders replaced stay on disk for dbt var `replaced_files_keep_s`
    seconds, for queries that started before. A model with config `emptied_partitions` (the
    arguments of tidemark_emptied_partitions) also empties the partitions that query names.

    A full build whose columns differ from the table's (a new release of a model) cannot be
    published into it: the table is dropped and created again, as dbt-spark does.
-#}
{% macro tidemark_publish(target, sql, replace_all) -%}
    {%- set stage = api.Relation.create(
        schema=target.schema ~ '_publishing', identifier=target.identifier, type='table'
    ) -%}
    {%- set home = tidemark_table_home(target) -%}
    {%- set version = modules.datetime.datetime.utcnow().strftime('%Y%m%dT%H%M%S%f')
        ~ '-' ~ invocation_id[:8] -%}
    {#- A stage left by a build that died before publishing: nothing reads its folder. -#}
    {%- call statement('stage_left') -%}
        call {{ tidemark_procedure('discard') }}('{{ target }}', '{{ stage }}')
    {%- endcall -%}
    {%- call statement('main') -%}
        create table {{ stage }}
        using parquet
        {{ partition_cols(label='partitioned by') }}
        location '{{ home }}/_tidemark_versions/{{ version }}'
        as {{ tidemark_one_file_per_partition(sql) }}
    {%- endcall -%}
    {%- set emptied = config.get('emptied_partitions') -%}
    {%- if emptied and not replace_all -%}
        {%- set specs = run_query(tidemark_emptied_partitions(**emptied)).columns[0].values() -%}
        {%- if specs | length > 0 -%}
            {%- call statement('emptied') -%}
                alter table {{ stage }} add if not exists
                {%- for spec in specs %}
                partition ({{ spec }})
                {%- endfor %}
            {%- endcall -%}
        {%- endif -%}
    {%- endif -%}
    {%- if replace_all and not tidemark_same_columns(target, stage) -%}
        {#- The stage's folder lies in the target's, which goes with it. -#}
        {%- call statement('drop_stage') -%}
            drop table {{ stage }}
        {%- endcall -%}
        {%- call statement('drop_changed') -%}
            call {{ tidemark_procedure('drop_table') }}('{{ target }}')
        {%- endcall -%}
        {%- call statement('rebuild_changed') -%}
            {{ create_table_as(False, target, sql) }}
        {%- endcall -%}
    {%- else -%}
        {%- call statement('publish') -%}
            call {{ tidemark_procedure('publish') }}(
                '{{ target }}', '{{ stage }}', {{ 'true' if replace_all else 'false' }},
                {{ (var('replaced_files_keep_s') | int) * 1000 }}
            )
        {%- endcall -%}
    {%- endif -%}
{%- endmacro %}
