{#-
    Where in bronze the events a gauge replay reads can be (int_timer_events_clocked): a filter
    for each of `timer_events` and `watermark_events` (a dict) that keeps every event landed
    after the last checkpoint or with a ts_ms at or after the smallest one among the checkpointed
    events after the anchors. Both bounds are read from the plan `planned` (built earlier in the
    run) while compiling and choose the bronze files that can hold such events
    (tidemark_bronze_reach): as scalar subqueries in the model they were not pushed into the
    scans, and every bronze event ever landed was read (docs/decisions/0004-gauge-incremental.md).
    `false` for both when no task replays. A --full-refresh plans every task from its first event
    (tidemark_resumes), so it reads every file without asking. A unit test, whose plan is a
    fixture, gives the filters itself (`overrides: macros:`), as the column form
    tidemark_bronze_reach has.
-#}
{% macro tidemark_replay_reach(planned) -%}
    {%- if not execute or flags.FULL_REFRESH -%}
        {{- return({'timer_events': 'true', 'watermark_events': 'true'}) -}}
    {%- endif -%}
    {%- set bounds = run_query(
        'select max(previous_processed_ingest_id), min(replay_min_ts_ms) from '
        ~ planned ~ ' where is_changed'
    ).rows[0] -%}
    {%- if bounds[1] is none -%}
        {{- return({'timer_events': 'false', 'watermark_events': 'false'}) -}}
    {%- endif -%}
    {{- return({
        'timer_events': tidemark_bronze_reach('timer_events', bounds[0], bounds[1]),
        'watermark_events': tidemark_bronze_reach('watermark_events', bounds[0], bounds[1]),
    }) -}}
{%- endmacro %}
