{#-
    Where in bronze the watermark events int_valve_outputs_computed feeds its valves can be, read
    from the plan `planned` (int_valve_tasks_planned, built earlier in the run) while compiling:
    a dict with `bound`, a filter on bronze's watermark events (tidemark_bronze_reach) or none
    (read them all), and `from_start`, whether some tasks with checkpoints are fed from their
    first event (a branch of their own that reads their whole history).

    A task resumed from a checkpoint is fed the events after it in seq order: each landed after
    the checkpoint's run (ingest_id above its processed_ingest_id) or, landed by then, was fed by
    that run after the checkpoint, so has a ts_ms at or after its later_from_ms. A new task's
    events all landed after the progress. A full plan (progress -1), or a checkpoint from before
    later_from_ms, reads everything, and so does a --full-refresh without asking (its plan is a
    full one, tidemark_resumes); `false` when no task is fed. A unit test, whose plan is a
    fixture, gives the dict itself (`overrides: macros:`). docs/decisions/0005-valve-incremental.md.
-#}
{% macro tidemark_valve_feed_reach(planned) -%}
    {%- if not execute or flags.FULL_REFRESH -%}
        {{- return({'bound': none, 'from_start': false}) -}}
    {%- endif -%}
    {%- set reach = run_query(
        'select max(previous_processed_ingest_id),'
        ~ ' min(case when not is_replayed_from_start then resumed_processed_ingest_id end),'
        ~ ' min(case when not is_replayed_from_start then resumed_later_from_ms end),'
        ~ ' count_if(not is_replayed_from_start and resumed_later_from_ms is null),'
        ~ ' count_if(is_replayed_from_start and has_checkpoints)'
        ~ ' from ' ~ planned
    ).rows[0] -%}
    {%- if reach[0] is none -%}
        {{- return({'bound': 'false', 'from_start': false}) -}}  {#- no task to feed -#}
    {%- elif (reach[0] | int) >= 0 and (reach[3] | int) == 0 -%}
        {#- A checkpoint's processed_ingest_id is at most the progress; without resumed tasks,
            only the new ones' events, landed after the progress. -#}
        {%- set after_ingest_id = reach[0] if reach[1] is none else reach[1] -%}
        {{- return({
            'bound': tidemark_bronze_reach('watermark_events', after_ingest_id, reach[2]),
            'from_start': (reach[4] | int) > 0,
        }) -}}
    {%- endif -%}
    {{- return({'bound': none, 'from_start': false}) -}}
{%- endmacro %}
