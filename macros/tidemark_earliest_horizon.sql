{#-
    The earliest previous horizon (horizon_ms in `checkpoint`, the previous run's
    int_timer_tasks_checkpointed) of a task with new events or gaps in `landed`
    (int_timer_events_landed); none when no checkpointed task has any. Read while compiling by
    int_timer_anchors_found: minus the lookback, it is the first checkpointed partition an anchor
    can be in, and as a literal it prunes the seconds' checkpoint
    (docs/decisions/0022-compile-time-questions.md). `landed` is a table built earlier in the
    run, so the question reads the new events' summary, not the events. A unit test, whose
    inputs are fixtures, gives the answer (`overrides: macros:`).
-#}
{% macro tidemark_earliest_horizon(landed, checkpoint) -%}
    {%- if not execute -%}
        {{- return(none) -}}
    {%- endif -%}
    {%- set answer = run_query(
        'select min(horizon_ms) from ' ~ checkpoint ~ ' left semi join ' ~ landed
        ~ ' using (job_id, vertex_id, subtask_index, attempt)'
    ).columns[0].values()[0] -%}
    {{- return(none if answer is none else answer | int) -}}
{%- endmacro %}
