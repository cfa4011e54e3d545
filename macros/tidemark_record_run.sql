{#-
    on-run-end (dbt_project.yml): records a `dbt build` or `dbt run` in tidemark.run_log, for the
    schedules tidemark run does not drive (tidemark serve with cron's `dbt build --target
    thrift`, or dbt by hand). `tidemark run` records its cycles itself, whole (ingest included),
    and sets TIDEMARK_RUN_LOG_RECORDER for its in-process builds, so this records nothing there.

    What it records (docs/decisions/0017-health.md): the cycle row, when the run started, its
    seconds, ok or failed with the first failures' messages; and, when the command ran a model,
    a freshness row per job and mart of tidemark.health.model.MARTS (a unit test holds the list
    equal): `landed_ts_ms` is the job's newest ts_ms as the gauge plan last saw it
    (int_timer_tasks_checkpointed.horizon_ms: O(tasks)), `newest_second_ms` the mart's newest
    second of the job among the partitions of the last `window_minutes` up to that ts_ms (NULL:
    nothing there, so the mart is at least that far behind, or has no row of the job). Each mart
    is read from a few partitions per job, whatever the history. Bytes on disk and events landed
    are not SQL's to know: NULL here (`tidemark status` reads them from the lake).
-#}
{% macro tidemark_record_run(results, window_minutes=30) -%}
    {%- if not execute or flags.WHICH not in ('build', 'run') -%}
        {{- return('') -}}
    {%- endif -%}
    {%- if env_var('TIDEMARK_RUN_LOG_RECORDER', '') != '' -%}
        {{- return('') -}}
    {%- endif -%}
    {%- set marts = {
        'fct_subtask_seconds': 'second_start_ms',
        'fct_subtask_flink_gauges': 'update_ms',
        'fct_vertex_seconds': 'second_start_ms',
        'fct_vertex_sampled_backpressure': 'sampling_start_ms',
        'fct_valve_emissions': 'ts_ms',
        'fct_task_watermarks': 'valid_from_ms',
        'fct_watermark_seconds': 'second_start_ms',
        'fct_vertex_watermark_seconds': 'second_start_ms',
    } -%}
    {%- set started = run_started_at.astimezone(modules.pytz.utc) -%}
    {%- set seconds = (modules.datetime.datetime.now(modules.pytz.utc) - started).total_seconds() -%}
    {%- set failures = [] -%}
    {%- for result in results if result.status in ('error', 'fail', 'runtime error') -%}
        {%- set name = result.node.name if result.node is defined and result.node else 'dbt' -%}
        {%- do failures.append(name ~ ': ' ~ (result.message or result.status)) -%}
    {%- endfor -%}
    {%- set message = (failures[:3] | join('; ')).split() | join(' ') -%}
    {%- set recorded_by = 'dbt ' ~ flags.WHICH -%}
    {%- set at = started.strftime('%Y-%m-%d %H:%M:%S.%f')[:-3] -%}
    {%- set day = started.strftime('%Y-%m-%d') -%}
    {%- set rows = [[
        at, recorded_by, 'cycle', 'failed' if failures else 'ok', none, none,
        (seconds * 1000) | round | int / 1000, message[:2000] if failures else none,
        none, none, none, none, none, none, none, none, none, day,
    ]] -%}

    {#- The jobs: the newest 50 the gauge plan saw, within 24 hours of the newest (as
        tidemark.health.model.active_jobs). -#}
    {#- A hook cannot ref() a model: the plan's checkpoint through the source the next plan reads
        it as, the marts through dbt's graph (their nodes' schema and alias), each NULL when its
        table is missing (decision 0022). -#}
    {%- set plan = load_relation(source('previous_run', 'int_timer_tasks_checkpointed')) -%}
    {%- set landed = {} -%}
    {#- Freshness only after a command that ran a model: a run of tests alone changed none. -#}
    {%- set models = results | selectattr('node.resource_type', 'equalto', 'model') | list -%}
    {%- if plan and models -%}
        {%- set found = run_query(
            "select concat('#', job_id) as job_key, max(horizon_ms) as landed_ts_ms from " ~ plan
            ~ ' group by job_id order by landed_ts_ms desc, job_id limit 50'
        ) -%}
        {#- (Job ids go through a '#' prefix: agate would read an id like 1e10 as a number.) -#}
        {%- for job_key, ts in found.rows if ts is not none -%}
            {%- if ts >= found.rows[0][1] - 24 * 3600000 -%}
                {%- do landed.update({job_key[1:]: ts | int}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}

    {%- set newest = {} -%}
    {%- if landed -%}
        {%- set selects = [] -%}
        {%- for mart, column in marts.items() -%}
            {%- set node = graph.nodes['model.' ~ project_name ~ '.' ~ mart] -%}
            {%- set relation = adapter.get_relation(node.database, node.schema, node.alias) -%}
            {%- if relation -%}
                {%- set windows = [] -%}
                {%- for job_id, ts in landed.items() -%}
                    {%- do windows.append(
                        "(recent.job_id = '" ~ job_id | replace('\\', '\\\\') | replace("'", "\\'")
                        ~ "' and " ~ tidemark_partitions_from(
                            'recent', ts - ts % 1000 - window_minutes * 60000
                        ) ~ ')'
                    ) -%}
                {%- endfor -%}
                {%- do selects.append(
                    "select '" ~ mart ~ "' as mart_name, concat('#', recent.job_id) as job_key, "
                    ~ 'max(recent.' ~ column ~ ') as newest_ms from ' ~ relation ~ ' as recent where '
                    ~ windows | join(' or ') ~ ' group by recent.job_id'
                ) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if selects -%}
            {%- for mart, job_key, ms in run_query(selects | join(' union all ')).rows -%}
                {%- do newest.update({mart ~ '/' ~ job_key[1:]: ms | int}) -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endif -%}

    {%- for job_id, ts in landed.items() -%}
        {%- for mart in marts -%}
            {%- set ms = newest.get(mart ~ '/' ~ job_id) -%}
            {%- set second = none if ms is none else ms - ms % 1000 -%}
            {%- set lag = none if second is none else ((ts - ts % 1000 - second) / 1000) | int -%}
            {%- do rows.append([
                at, recorded_by, 'freshness', none, none, none, none, none,
                job_id, mart, ts, second, lag, none, none, none, none, day,
            ]) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- do tidemark_run_log_insert(rows) -%}
    {{- return('') -}}
{%- endmacro %}
