{#-
    The gauge plan's input: per task (job_id, vertex_id, subtask_index, attempt), the timer and
    watermark events landed in bronze after the commit the checkpoints account for, summed up
    (their smallest and largest seq and ts_ms, their newest commit), and the capture gaps landed
    since (docs/decisions/0006-capture-from-flink.md). Without checkpoints (first build,
    --full-refresh, a gauge model missing: tidemark_resumes) every event is new and there is no
    gap to count: the full plan replays every task from its first event anyway.

    A table, read twice: while compiling, by int_timer_anchors_found's question for its search
    window (tidemark_earliest_horizon), and by the anchor search and the plan; the new events are
    scanned once, here (docs/decisions/0004-gauge-incremental.md, 0022-compile-time-questions.md).
    Rebuilt every run, first of the gauge models: rebuild them from here
    (`--select int_timer_events_landed+`).
-#}
-- noqa: disable=LT02
{%- set tasks_checkpoint = source('previous_run', 'int_timer_tasks_checkpointed') -%}
{%- set seconds_checkpoint = source('previous_run', 'int_timer_seconds_checkpointed') -%}
{%- set is_incremental_plan = tidemark_resumes([tasks_checkpoint, seconds_checkpoint]) -%}
{%- set new_files = {} -%}
{%- if is_incremental_plan -%}
    {#- The newest bronze commit the checkpoints account for, as a literal: it chooses the bronze
        files that can hold rows landed since (tidemark_bronze_reach). -#}
    {%- set progress_id = tidemark_progress(tasks_checkpoint) -%}
    {%- for table in ['timer_events', 'watermark_events', 'capture_gaps'] -%}
        {%- do new_files.update({table: tidemark_bronze_reach(table, progress_id)}) -%}
    {%- endfor -%}
{%- endif %}
-- noqa: enable=LT02

with

{% if is_incremental_plan %}

progress as (

    -- Compared with the events as a column, not the literal: the same generated code in every
    -- run (docs/decisions/0007-warm-schedule.md).
    select coalesce(max(processed_ingest_id), -1) as after_ingest_id
    from {{ tasks_checkpoint }}

),

{% else %}

progress as (

    select cast(-1 as bigint) as after_ingest_id

),

{% endif %}

new_events as (

    {%- for table in ['timer_events', 'watermark_events'] %}
    {{- '\n    union all\n' if not loop.first }}
    select
        staged.job_id,
        staged.vertex_id,
        staged.subtask_index,
        staged.attempt,
        staged.seq,
        staged.ts_ms,
        staged.ingest_id
    from {{ ref('stg_bronze__' ~ table) }} as staged
    inner join progress
        on staged.ingest_id > progress.after_ingest_id
    where {{ new_files.get(table, 'true') }}
    {%- endfor %}

),

events_by_task as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min(seq) as min_new_seq,
        max(seq) as max_new_seq,
        min(ts_ms) as min_new_ts_ms,
        max(ts_ms) as max_new_ts_ms,
        max(ingest_id) as max_new_ingest_id
    from new_events
    group by job_id, vertex_id, subtask_index, attempt

),

gaps_by_task as (

    -- A gap changes which of the task's seconds are exact (fct_subtask_seconds.is_exact): the
    -- incremental plan replays the task from before its first missing seq, like a late event.
    select
        staged.job_id,
        staged.vertex_id,
        staged.subtask_index,
        staged.attempt,
        min(staged.seq) as min_gap_seq,
        max(staged.ingest_id) as max_gap_ingest_id
    from {{ ref('stg_bronze__capture_gaps') }} as staged
    inner join progress
        on staged.ingest_id > progress.after_ingest_id
    {% if is_incremental_plan -%}
    where {{ new_files['capture_gaps'] }}
    {%- else -%}
    where false  -- a full plan replays every task from its first event
    {%- endif %}
    group by staged.job_id, staged.vertex_id, staged.subtask_index, staged.attempt

),

final as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        events_by_task.min_new_seq,
        events_by_task.max_new_seq,
        events_by_task.min_new_ts_ms,
        events_by_task.max_new_ts_ms,
        events_by_task.max_new_ingest_id,
        gaps_by_task.min_gap_seq,
        gaps_by_task.max_gap_ingest_id,
        progress.after_ingest_id
    from events_by_task
    full outer join gaps_by_task using (job_id, vertex_id, subtask_index, attempt)
    cross join progress

)

select * from final
