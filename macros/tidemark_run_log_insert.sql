{#-
    The one write path of tidemark.run_log (docs/decisions/0017-health.md): appends `rows` (lists
    of values in the table's column order, times as 'yyyy-MM-dd HH:mm:ss.SSS' UTC, days as
    'yyyy-MM-dd') as one parquet file, so a query reading the table meanwhile sees all of them or
    none. Creates the table on first use. When the rows start a new UTC day it also keeps the
    table small: the previous day, one file per cycle, is rewritten as one file, and days older
    than TIDEMARK_RUN_LOG_DAYS (default 14) are dropped. `tidemark run` calls it once per cycle
    (`dbt run-operation tidemark_run_log_insert --args '{rows: [...]}'`, from
    tidemark.health.model.run_log_rows); tidemark_record_run calls it after a dbt build or run.
-#}
{% macro tidemark_run_log_insert(rows) -%}
    {#- The same columns as tidemark.health.model.RUN_LOG_COLUMNS (a unit test holds them equal). -#}
    {%- set columns = [
        ('cycle_started_at', 'timestamp'),
        ('recorded_by', 'string'),
        ('row_kind', 'string'),
        ('outcome', 'string'),
        ('events_landed', 'bigint'),
        ('ingest_s', 'double'),
        ('build_s', 'double'),
        ('error_message', 'string'),
        ('job_id', 'string'),
        ('mart_name', 'string'),
        ('landed_ts_ms', 'bigint'),
        ('newest_second_ms', 'bigint'),
        ('lag_s', 'bigint'),
        ('bronze_bytes', 'bigint'),
        ('marts_bytes', 'bigint'),
        ('intermediate_bytes', 'bigint'),
        ('lake_bytes', 'bigint'),
        ('cycle_date', 'date'),
    ] -%}
    {%- if not execute or rows | length == 0 -%}
        {{- return('') -}}
    {%- endif -%}
    {%- set definitions = [] -%}
    {%- for name, type in columns -%}
        {%- do definitions.append(name ~ ' ' ~ type) -%}
    {%- endfor -%}
    {#- Two metastore calls, no listing of the schema's tables (adapter.get_relation outside a
        run lists them all); `create database if not exists` of an existing one has Hive log an
        error with its stack. -#}
    {%- if run_query("show databases like 'tidemark'").rows | length == 0 -%}
        {%- do run_query('create database tidemark') -%}
    {%- endif -%}
    {%- do run_query(
        'create table if not exists tidemark.run_log (' ~ definitions | join(', ')
        ~ ') using parquet partitioned by (cycle_date)'
    ) -%}

    {#- A new day: compact the day before it, drop the days past the retention. -#}
    {%- set days = [] -%}
    {%- for partition in run_query('show partitions tidemark.run_log').columns[0].values() -%}
        {%- do days.append(partition.split('=', 1)[1]) -%}
    {%- endfor -%}
    {%- set new_days = rows | map(attribute=columns | length - 1) | unique | list -%}
    {%- set first_day = new_days | min -%}
    {%- if first_day not in days -%}
        {%- set before = days | select('lt', first_day) | list -%}
        {%- if before -%}
            {%- do run_query(
                'insert overwrite table tidemark.run_log partition (cycle_date) '
                ~ 'select /*+ COALESCE(1) */ * from tidemark.run_log '
                ~ "where cycle_date = date'" ~ before | max ~ "'"
            ) -%}
        {%- endif -%}
        {%- set keep = env_var('TIDEMARK_RUN_LOG_DAYS', '14') | int -%}
        {%- set today = modules.datetime.date.fromisoformat(first_day) -%}
        {%- set cutoff = (today - modules.datetime.timedelta(days=keep)).isoformat() -%}
        {%- for day in days if day <= cutoff -%}
            {%- do run_query(
                "alter table tidemark.run_log drop if exists partition (cycle_date = date'"
                ~ day ~ "')"
            ) -%}
        {%- endfor -%}
    {%- endif -%}

    {%- set tuples = [] -%}
    {%- for row in rows -%}
        {%- set values = [] -%}
        {%- for value in row -%}
            {%- set type = columns[loop.index0][1] -%}
            {%- if value is none -%}
                {%- set literal = 'null' -%}
            {%- elif type in ('timestamp', 'date') -%}
                {%- set literal = type ~ "'" ~ value ~ "'" -%}
            {%- elif type == 'string' -%}
                {%- set literal = "'" ~ (value | string | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'" -%}
            {%- else -%}
                {%- set literal = value | string -%}
            {%- endif -%}
            {%- do values.append('cast(' ~ literal ~ ' as ' ~ type ~ ')') -%}
        {%- endfor -%}
        {%- do tuples.append('(' ~ values | join(', ') ~ ')') -%}
    {%- endfor -%}
    {%- set names = [] -%}
    {%- for name, _ in columns -%}
        {%- do names.append(name) -%}
    {%- endfor -%}
    {#- One task writes one file: Spark publishes it whole (renamed into place once written). -#}
    {%- do run_query(
        'insert into tidemark.run_log select /*+ COALESCE(1) */ * from values '
        ~ tuples | join(', ') ~ ' as recorded(' ~ names | join(', ') ~ ')'
    ) -%}
    {{- return('') -}}
{%- endmacro %}
