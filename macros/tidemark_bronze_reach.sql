{#-
    A filter on bronze source `table` (the timer, watermark or gap events) that keeps every row
    with ingest_id > `after_ingest_id` or, when `from_ts_ms` is given, ts_ms >= `from_ts_ms`
    (numbers read while compiling), and may keep others: callers that need exactly those rows
    also join or compare with the bound at run time.

    Read through delta-rs (TIDEMARK_DELTA=deltars, the default), it names the data files that can
    hold such rows, chosen by the Delta log's statistics (bronze.<table>_files, written with the
    views by register_bronze): `data_file in ('part-...', ...)`. Spark applies it when it lists
    the files, so the others are never opened, and the generated code holds the names as
    references: a later run with other bounds reuses the compiled classes, where a number in the
    filter compiled the query again in every run (docs/decisions/0007-warm-schedule.md). A file
    without statistics is always kept. With Spark's own Delta reader (TIDEMARK_DELTA=native)
    there is no such list, and the filter is on the columns, as literals that reach Delta's data
    skipping.
-#}
{% macro tidemark_bronze_reach(table, after_ingest_id, from_ts_ms=none) -%}
    {%- set files_view = source('bronze', table ~ '_files') -%}
    {%- set bounds = [('ingest_id', '>', after_ingest_id | int)] -%}
    {%- do bounds.append(('ts_ms', '>=', from_ts_ms | int)) if from_ts_ms is not none -%}
    {%- set on_rows, on_files = [], [] -%}
    {%- for column, op, value in bounds -%}
        {%- set bound = op ~ ' cast(' ~ value ~ ' as bigint)' -%}
        {%- do on_rows.append(column ~ ' ' ~ bound) -%}
        {%- do on_files.append('coalesce(max_' ~ column ~ ' ' ~ bound ~ ', true)') -%}
    {%- endfor -%}
    {%- if env_var('TIDEMARK_DELTA', 'deltars') == 'native' or not execute -%}
        {{- return('(' ~ on_rows | join(' or ') ~ ')') -}}
    {%- endif -%}
    {%- set files = run_query(
        'select data_file from ' ~ files_view ~ ' where '
        ~ on_files | join(' or ') ~ ' order by data_file'
    ).columns[0].values() -%}
    {%- if not files -%}
        {{- return('false') -}}
    {%- endif -%}
    {%- set quoted = [] -%}
    {%- for name in files -%}
        {%- do quoted.append("'" ~ name | replace("\\", "\\\\") | replace("'", "\\'") ~ "'") -%}
    {%- endfor -%}
    {{- return('data_file in (' ~ quoted | join(', ') ~ ')') -}}
{%- endmacro %}
