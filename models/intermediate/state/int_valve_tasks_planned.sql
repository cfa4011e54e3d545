{#-
    The plan of one run of the watermark models: one row per task (job_id, vertex_id,
    subtask_index, attempt) that the run feeds through the valves, with the checkpoint it resumes
    from, or none (from its first event), and what that checkpoint says about where the task's
    later events can be in bronze. int_valve_outputs_computed reads it while compiling, to read
    only those bronze files. Rebuilt every run; docs/decisions/0005-valve-incremental.md.

    Incremental plan: the tasks with events landed after the newest checkpoint's
    processed_ingest_id, each resumed from its newest checkpoint before its first new event made
    with this run's semantics and knowing every input the new events use (C1), and the tasks whose
    checkpoints have other valve semantics, replayed from their first event. Full plan (first
    build, --full-refresh, a watermark model missing): every task, from its first event.
-#}
-- noqa: disable=LT02
{%- set states_checkpoint = source('previous_run', 'int_valve_states_checkpointed') -%}
{%- set is_incremental_plan = tidemark_resumes([states_checkpoint]) -%}
{%- set semantics = var('valve_semantics', 'flink-1.13-2.0') -%}
{%- if is_incremental_plan -%}
    {#- The newest bronze commit the checkpoints account for, read while compiling to choose the
        bronze files that can hold newer rows (tidemark_bronze_reach). -#}
    {%- set progress_id = tidemark_progress(states_checkpoint) -%}
    {%- set new_files = tidemark_bronze_reach('watermark_events', progress_id) -%}
{%- endif %}
-- noqa: enable=LT02

with

watermark_events as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        seq,
        input_index,
        ingest_id,
        data_file
    from {{ ref('stg_bronze__watermark_events') }}

),

{% if is_incremental_plan %}

checkpoints as (

    select * from {{ states_checkpoint }}

),

progress as (

    select
        coalesce(max(processed_ingest_id), -1) as processed_ingest_id,
        coalesce(max(batch_id), 0) as batch_id
    from checkpoints

),

new_by_task as (

    select
        watermark_events.job_id,
        watermark_events.vertex_id,
        watermark_events.subtask_index,
        watermark_events.attempt,
        min(watermark_events.seq) as min_new_seq,
        collect_set(watermark_events.input_index) as new_inputs,
        max(watermark_events.ingest_id) as max_new_ingest_id
    from watermark_events
    -- Compared with the progress as a column: the same generated code in every run.
    inner join progress
        on watermark_events.ingest_id > progress.processed_ingest_id
    where {{ new_files }}
    group by
        watermark_events.job_id,
        watermark_events.vertex_id,
        watermark_events.subtask_index,
        watermark_events.attempt

),

latest_checkpoints as (

    select *
    from (
        select
            checkpoints.*,
            row_number() over (
                partition by
                    checkpoints.job_id,
                    checkpoints.vertex_id,
                    checkpoints.subtask_index,
                    checkpoints.attempt
                order by checkpoints.batch_id desc, checkpoints.seq desc
            ) as recency
        from checkpoints
    ) as ranked_checkpoints
    where recency = 1

),

tasks_to_run as (

    -- The tasks with new events, and those whose latest checkpoint has other valve semantics
    -- than this run's (replayed from their start). One join, so that the new events are read
    -- once: Spark computes a CTE again in each place that reads it.
    select
        coalesce(new_by_task.job_id, latest_checkpoints.job_id) as job_id,
        coalesce(new_by_task.vertex_id, latest_checkpoints.vertex_id) as vertex_id,
        coalesce(new_by_task.subtask_index, latest_checkpoints.subtask_index) as subtask_index,
        coalesce(new_by_task.attempt, latest_checkpoints.attempt) as attempt,
        new_by_task.min_new_seq,
        new_by_task.new_inputs,
        new_by_task.max_new_ingest_id,
        latest_checkpoints.seq is not null as has_checkpoints
    from new_by_task
    full outer join latest_checkpoints
        on
            {{ tidemark_same_task('new_by_task', 'latest_checkpoints') }}
    where
        new_by_task.job_id is not null
        or latest_checkpoints.semantics != '{{ semantics }}'

),

resume_points as (

    -- The newest checkpoint before the task's first new event (every kept checkpoint is still
    -- usable: int_valve_states_checkpointed drops superseded ones), made with this run's
    -- semantics and knowing every input the new events use (the combiner needs all inputs from
    -- the start).
    -- None: replay from the first event.
    select
        tasks_to_run.job_id,
        tasks_to_run.vertex_id,
        tasks_to_run.subtask_index,
        tasks_to_run.attempt,
        tasks_to_run.has_checkpoints,
        tasks_to_run.max_new_ingest_id,
        coalesce(max(checkpoints.seq), -1) as resume_after_seq,
        max_by(checkpoints.state, checkpoints.seq) as state,
        max_by(checkpoints.first_ms, checkpoints.seq) as resumed_first_ms,
        max_by(checkpoints.effective_ms, checkpoints.seq) as resumed_effective_ms,
        max_by(checkpoints.task_inputs, checkpoints.seq) as resumed_task_inputs,
        max_by(checkpoints.processed_ingest_id, checkpoints.seq) as resumed_processed_ingest_id,
        max_by(checkpoints.later_from_ms, checkpoints.seq) as resumed_later_from_ms
    from tasks_to_run
    left join checkpoints
        on
            {{ tidemark_same_task('tasks_to_run', 'checkpoints') }}
            and checkpoints.seq < tasks_to_run.min_new_seq
            and checkpoints.semantics = '{{ semantics }}'
            and size(array_except(tasks_to_run.new_inputs, checkpoints.task_inputs)) = 0
    group by
        tasks_to_run.job_id,
        tasks_to_run.vertex_id,
        tasks_to_run.subtask_index,
        tasks_to_run.attempt,
        tasks_to_run.has_checkpoints,
        tasks_to_run.max_new_ingest_id

),

{% else %}

progress as (

    select
        cast(-1 as bigint) as processed_ingest_id,
        cast(0 as bigint) as batch_id

),

new_by_task as (

    -- Every event is new.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        max(ingest_id) as max_new_ingest_id
    from watermark_events
    group by job_id, vertex_id, subtask_index, attempt

),

resume_points as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        false as has_checkpoints,
        max_new_ingest_id,
        cast(-1 as bigint) as resume_after_seq,
        cast(null as string) as state,
        cast(null as bigint) as resumed_first_ms,
        cast(null as bigint) as resumed_effective_ms,
        cast(null as array<int>) as resumed_task_inputs,
        cast(null as bigint) as resumed_processed_ingest_id,
        cast(null as bigint) as resumed_later_from_ms
    from new_by_task

),

{% endif %}

final as (

    select
        resume_points.job_id,
        resume_points.vertex_id,
        resume_points.subtask_index,
        resume_points.attempt,
        -- The planner contract (int_timer_tasks_planned has the same columns): every task of this
        -- plan is fed; -1 feeds it from its first event (seq >= 0).
        true as is_changed,
        resume_points.resume_after_seq = -1 as is_replayed_from_start,
        resume_points.resume_after_seq,
        resume_points.has_checkpoints,
        resume_points.state,
        resume_points.resumed_first_ms,
        resume_points.resumed_effective_ms,
        resume_points.resumed_task_inputs,
        resume_points.resumed_processed_ingest_id,
        resume_points.resumed_later_from_ms,
        progress.processed_ingest_id as previous_processed_ingest_id,
        progress.batch_id + 1 as batch_id,
        -- The newest bronze commit this run accounts for: a window over the tasks, where a
        -- scalar subquery read the new events again.
        greatest(
            progress.processed_ingest_id, max(resume_points.max_new_ingest_id) over ()
        ) as processed_ingest_id
    from resume_points
    cross join progress

)

select * from final
