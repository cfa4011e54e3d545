{#-
    What a generic data test reads of the model it tests: dbt's own (the test's `where` config),
    and, when the var `data_tests_recent_hours` is set, only the latest hours of a mart
    partitioned by hour: the rows with `hour_at` at most that many hours before the mart's
    latest `hour_at`. Spark reads only those partitions (the bound is a scalar subquery in the
    partition filter), so a scheduled build's data tests cost what a run writes, not the mart's
    whole history (docs/decisions/0007-warm-schedule.md). Without the var every row is tested.
    Two singular tests window the same way (tidemark_recent_hours); the two that compare a mart
    with the plan's task spans, and unit tests, read everything.
-#}
{% macro get_where_subquery(relation) -%}
    {%- set conditions = [] -%}
    {%- set where = config.get('where', '') -%}
    {%- if where -%}
        {%- do conditions.append('(' ~ where ~ ')') -%}
    {%- endif -%}
    {#- Asked of every test, so that a wrong value fails the build whatever is selected. -#}
    {%- set recent = tidemark_recent_hours(relation) -%}
    {%- if recent and tidemark_is_hour_partitioned(relation) -%}
        {%- do conditions.append(recent) -%}
    {%- endif -%}
    {%- if conditions -%}
        {%- do return(
            '(select * from ' ~ relation ~ ' where ' ~ conditions | join(' and ') ~ ') dbt_subquery'
        ) -%}
    {%- endif -%}
    {%- do return(relation) -%}
{%- endmacro %}


{#- Whether `relation` is a model of this project partitioned by hour_at (the incremental marts). -#}
{% macro tidemark_is_hour_partitioned(relation) -%}
    {%- if not execute or relation is string -%}
        {%- do return(false) -%}
    {%- endif -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.alias == relation.identifier
            and node.schema == relation.schema -%}
            {%- do return('hour_at' in (node.config.partition_by or [])) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do return(false) -%}
{%- endmacro %}


{#- The condition that keeps the rows within `data_tests_recent_hours` hours of the latest
    hour_at of `bound` (a relation partitioned by hour_at), for any relation with hour_at; none
    when the var is not set. A value that is not a whole number of hours fails the build. -#}
{% macro tidemark_recent_hours(bound) -%}
    {%- set hours = var('data_tests_recent_hours', none) -%}
    {%- if hours is none -%}
        {%- do return(none) -%}
    {%- endif -%}
    {%- if not (hours | string).isdigit() -%}
        {{ exceptions.raise_compiler_error(
            'data_tests_recent_hours must be a whole number of hours, not ' ~ hours
        ) }}
    {%- endif -%}
    {%- do return(
        'hour_at >= (select max(hour_at) from ' ~ bound ~ ') - make_dt_interval(0, '
        ~ (hours | int) ~ ')'
    ) -%}
{%- endmacro %}

