{#-
    One run's work of the watermark models: every task (job_id, vertex_id, subtask_index, attempt)
    with valve input events landed since the last checkpoint goes through the `tidemark_valve`
    UDTF (udfs/spark.py): its valves (W1-W4, S1-S3) and their combination into the task's clock
    (C1-C5), resumed from the task's latest checkpoint whose events no new event precedes, or from
    its first event. Rebuilt every run; the marts add it to what they hold and int_valve_states_checkpointed
    keeps the state rows. See docs/decisions/0005-valve-incremental.md.

    The tasks and their resume points are int_valve_tasks_planned's; the events fed to the valves
    come from staging (bronze holds each identity once, decision 0011), only from the bronze files
    that can hold them.
-#}
{%- set semantics = var('valve_semantics', 'flink-1.13-2.0') -%}
{%- set planned_relation = ref('int_valve_tasks_planned') -%}
{#- Where the events fed can be in bronze, read from the plan while compiling
    (tidemark_valve_feed_reach); the join below picks the events exactly. -#}
{%- set fed = tidemark_valve_feed_reach(planned_relation) %}

with

valve_inputs as (

    select * from {{ ref('int_valve_inputs_prepared') }}

),

resume_points as (

    select * from {{ planned_relation }}

),

{%- set branches = ['bounded'] + (['from_start'] if fed.from_start else [])
    if fed.bound else ['all'] %}
-- noqa: disable=LT02
{%- for branch in branches %}

{{ branch }}_fed_events as (

    {%- if branch == 'bounded' %}
    -- The tasks resumed from a checkpoint and the new ones, from the bronze files the bound
    -- reaches: the events after the checkpoint, not the task's whole history.
    {%- elif branch == 'from_start' %}
    -- Tasks with checkpoints fed from their first event (a late event older than all of them, a
    -- new input, other valve semantics): all their history. Few, and broadcast.
    {%- endif %}
    select {{ '/*+ broadcast(resume_points) */ ' if branch == 'from_start' }}valve_inputs.*
    from {{ '(select * from valve_inputs where ' ~ fed.bound ~ ')' if branch == 'bounded'
        else 'valve_inputs' }} as valve_inputs
    inner join resume_points
        on
            {{ tidemark_same_task('valve_inputs', 'resume_points') }}
    where
        valve_inputs.seq > resume_points.resume_after_seq
    {%- if branch == 'bounded' %}
        and (resume_points.resume_after_seq >= 0 or not resume_points.has_checkpoints)
    {%- elif branch == 'from_start' %}
        and resume_points.resume_after_seq < 0
        and resume_points.has_checkpoints
    {%- endif %}

),
{%- endfor %}
-- noqa: enable=LT02

fed_events as (

    {%- for branch in branches %}
    {%- if not loop.first %}
    union all
    {%- endif %}
    select * from {{ branch }}_fed_events
    {%- endfor %}

),

task_inputs as (

    -- Every input each task ever uses: those of the events it is fed, and those its resume
    -- checkpoint knew (that run read every event then landed; any landed since lies after the
    -- resume point, or the task would resume from an earlier checkpoint). No read of the
    -- task's whole history.
    select
        fed_inputs.job_id,
        fed_inputs.vertex_id,
        fed_inputs.subtask_index,
        fed_inputs.attempt,
        sort_array(
            array_union(
                coalesce(resume_points.resumed_task_inputs, cast(array() as array<int>)),
                fed_inputs.inputs
            )
        ) as task_inputs,
        fed_inputs.recompute_from_ms
    from (
        select
            job_id,
            vertex_id,
            subtask_index,
            attempt,
            collect_set(input_index) as inputs,
            min(ts_ms) as recompute_from_ms
        from fed_events
        group by job_id, vertex_id, subtask_index, attempt
    ) as fed_inputs
    inner join resume_points
        on
            {{ tidemark_same_task('fed_inputs', 'resume_points') }}

),

valve_tasks as (

    -- One per task: its inputs and the state to resume from (udfs/spark.py).
    select
        resume_points.job_id,
        resume_points.vertex_id,
        resume_points.subtask_index,
        resume_points.attempt,
        task_inputs.task_inputs,
        resume_points.state,
        -- The UDTF's name for it: its rows say after which seq the task was resumed.
        resume_points.resume_after_seq as resumed_after_seq
    from resume_points
    inner join task_inputs
        on
            {{ tidemark_same_task('resume_points', 'task_inputs') }}

),

valve_input_rows as (  -- noqa: ST03

    {{ tidemark_valve_input_rows('valve_tasks', 'fed_events') }}

),

valve_outputs as (

    -- One row per output: the task, then the core's columns (udfs/spark.py).
    -- sqlfluff's sparksql reads a table argument's PARTITION BY / ORDER BY as the call's own
    -- clauses and would indent the next arguments as ORDER BY keys.
    -- noqa: disable=LT01,LT02,LT06
    select *
    from tidemark_valve(
        table(valve_input_rows)
            partition by (job_id, vertex_id, subtask_index, attempt)
            order by (chunk_index, input_index),
        '{{ semantics }}',
        -- A checkpoint every 10 s of the task's time, so that a late event resumes its task
        -- from shortly before it rather than from the last run's end or its first event.
        10000
    )
    -- noqa: enable=LT01,LT02,LT06

),

final as (

    select
        valve_outputs.job_id,
        valve_outputs.vertex_id,
        valve_outputs.subtask_index,
        valve_outputs.attempt,
        valve_outputs.row_kind,
        valve_outputs.input_index,
        valve_outputs.seq,
        valve_outputs.ts_ms,
        valve_outputs.effective_ms,
        valve_outputs.emission_index,
        valve_outputs.kind,
        valve_outputs.watermark_ms,
        valve_outputs.status,
        valve_outputs.resumed_after_seq,
        resume_points.is_replayed_from_start,
        valve_outputs.state,
        task_inputs.task_inputs,
        task_inputs.recompute_from_ms,
        resume_points.resumed_first_ms,
        resume_points.resumed_effective_ms,
        resume_points.batch_id,
        resume_points.processed_ingest_id
    from valve_outputs
    inner join task_inputs
        on
            {{ tidemark_same_task('valve_outputs', 'task_inputs') }}
    inner join resume_points
        on
            {{ tidemark_same_task('valve_outputs', 'resume_points') }}

)

select * from final
