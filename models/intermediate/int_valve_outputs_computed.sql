{#-
    One run's work of the watermark models: every task (job_id, vertex_id, subtask_index, attempt)
    with valve input events landed since the last checkpoint goes through the `tidemark_valve`
    UDTF (udfs/spark.py): its valves (W1-W4, S1-S3) and their combination into the task's clock
    (C1-C5), resumed from the task's latest checkpoint whose events no new event precedes, or from
    its first event. Rebuilt every run; the marts add it to what they hold and int_valve_states_checkpointed
    keeps the state rows. See docs/decisions/0005-valve-incremental.md.

    Full run (first build, --full-refresh, a watermark model missing): every task from its first
    event. New events are found in the bronze source by ingest_id; the events fed to the valves
    come from staging (bronze holds each identity once, decision 0011).
-#}
{%- set checkpoints_relation = tidemark_model_relation('int_valve_states_checkpointed') -%}
{%- set ns = namespace(is_incremental_run=execute and not flags.FULL_REFRESH and checkpoints_relation is not none) -%}
{%- for model_name in ['fct_valve_emissions', 'fct_task_watermarks', 'fct_watermark_seconds', 'fct_vertex_watermark_seconds'] -%}
    {%- if ns.is_incremental_run and tidemark_model_relation(model_name) is none -%}
        {%- set ns.is_incremental_run = false -%}
    {%- endif -%}
{%- endfor -%}
{%- set semantics = var('valve_semantics', 'flink-1.13-2.0') -%}
{%- set keys = 'job_id, vertex_id, subtask_index, attempt' -%}
{%- set fed_bound = namespace(sql=none) -%}
{%- if ns.is_incremental_run -%}
    {#- Read while compiling, as literals that reach the bronze scans (as int_timer_tasks_planned
        does): the newest bronze commit the checkpoints account for, and how far back the events
        fed to the tasks with new events can lie. A task resumed from a checkpoint is fed the
        events after it in seq order: each landed after the checkpoint's processed_ingest_id or,
        landed by then, was fed in the run that made it, so has a ts_ms at or after its
        fed_from_ms. The bound is the loosest over every kept checkpoint of these tasks (any of
        them may be resumed from); a new task's events all landed after the progress. -#}
    {%- set progress = run_query(
        'select coalesce(max(processed_ingest_id), -1) from ' ~ checkpoints_relation
    ).rows[0][0] | int -%}
    {%- set processed_ingest_id = 'cast(' ~ progress ~ ' as bigint)' -%}
    {%- set has_fed_from = 'fed_from_ms' in adapter.get_columns_in_relation(checkpoints_relation)
        | map(attribute='name') | list -%}
    {%- set reach = run_query(
        'select min(processed_ingest_id), '
        ~ ('min(fed_from_ms), count_if(fed_from_ms is null)' if has_fed_from else 'null, count(*)')
        ~ ' from ' ~ checkpoints_relation ~ ' left semi join (select ' ~ keys ~ ' from '
        ~ source('bronze', 'watermark_events') ~ ' where ingest_id > ' ~ processed_ingest_id
        ~ ') using (' ~ keys ~ ')'
    ).rows[0] -%}
    {%- if reach[0] is none -%}
        {%- set fed_bound.sql = 'ingest_id > ' ~ processed_ingest_id -%}
    {%- elif (reach[2] | int) == 0 -%}
        {%- set fed_bound.sql = 'ingest_id > cast(' ~ (reach[0] | int) ~ ' as bigint) or ts_ms >= cast('
            ~ (reach[1] | int) ~ ' as bigint)' -%}
    {%- endif -%}
{%- endif -%}

with

valve_inputs as (

    select * from {{ ref('int_valve_inputs_prepared') }}

),

bronze_watermark_events as (

    select job_id, vertex_id, subtask_index, attempt, seq, input_index, ingest_id
    from {{ source('bronze', 'watermark_events') }}

),

{% if ns.is_incremental_run %}

landed as (

    select greatest({{ processed_ingest_id }}, max(ingest_id)) as ingest_id
    from bronze_watermark_events
    where ingest_id > {{ processed_ingest_id }}

),

checkpoints as (

    select * from {{ checkpoints_relation }}

),

progress as (

    select
        coalesce(max(processed_ingest_id), -1) as processed_ingest_id,
        coalesce(max(batch_id), 0) as batch_id
    from checkpoints

),

new_by_task as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min(seq) as min_new_seq,
        collect_set(input_index) as new_inputs
    from bronze_watermark_events
    where ingest_id > {{ processed_ingest_id }}
    group by job_id, vertex_id, subtask_index, attempt

),

latest_checkpoints as (

    select *
    from (
        select
            checkpoints.*,
            row_number() over (
                partition by job_id, vertex_id, subtask_index, attempt
                order by batch_id desc, seq desc
            ) as recency
        from checkpoints
    )
    where recency = 1

),

stale_tasks as (

    -- Tasks computed under other valve semantics than this run's: replayed from their start.
    select job_id, vertex_id, subtask_index, attempt
    from latest_checkpoints
    where semantics != '{{ semantics }}'

),

tasks_to_run as (

    select
        new_by_task.job_id,
        new_by_task.vertex_id,
        new_by_task.subtask_index,
        new_by_task.attempt,
        new_by_task.min_new_seq,
        new_by_task.new_inputs,
        latest_checkpoints.seq is not null as has_checkpoints
    from new_by_task
    left join latest_checkpoints
        on
            new_by_task.job_id = latest_checkpoints.job_id
            and new_by_task.vertex_id = latest_checkpoints.vertex_id
            and new_by_task.subtask_index = latest_checkpoints.subtask_index
            and new_by_task.attempt = latest_checkpoints.attempt

    union all

    select
        stale_tasks.job_id,
        stale_tasks.vertex_id,
        stale_tasks.subtask_index,
        stale_tasks.attempt,
        cast(null as bigint) as min_new_seq,
        cast(array() as array<int>) as new_inputs,
        true as has_checkpoints
    from stale_tasks
    left anti join new_by_task
        on
            stale_tasks.job_id = new_by_task.job_id
            and stale_tasks.vertex_id = new_by_task.vertex_id
            and stale_tasks.subtask_index = new_by_task.subtask_index
            and stale_tasks.attempt = new_by_task.attempt

),

resume_points as (

    -- The newest checkpoint before the task's first new event (every kept checkpoint is still
    -- usable: int_valve_states_checkpointed drops superseded ones), made with this run's semantics and
    -- knowing every input the new events use (the combiner needs all inputs from the start).
    -- None: replay from the first event.
    select
        tasks_to_run.job_id,
        tasks_to_run.vertex_id,
        tasks_to_run.subtask_index,
        tasks_to_run.attempt,
        tasks_to_run.has_checkpoints,
        coalesce(max(checkpoints.seq), -1) as resumed_after_seq,
        max_by(checkpoints.state, checkpoints.seq) as state,
        max_by(checkpoints.first_ms, checkpoints.seq) as resumed_first_ms,
        max_by(checkpoints.effective_ms, checkpoints.seq) as resumed_effective_ms,
        max_by(checkpoints.task_inputs, checkpoints.seq) as resumed_task_inputs
    from tasks_to_run
    left join checkpoints
        on
            tasks_to_run.job_id = checkpoints.job_id
            and tasks_to_run.vertex_id = checkpoints.vertex_id
            and tasks_to_run.subtask_index = checkpoints.subtask_index
            and tasks_to_run.attempt = checkpoints.attempt
            and checkpoints.seq < tasks_to_run.min_new_seq
            and checkpoints.semantics = '{{ semantics }}'
            and size(array_except(tasks_to_run.new_inputs, checkpoints.task_inputs)) = 0
    group by
        tasks_to_run.job_id,
        tasks_to_run.vertex_id,
        tasks_to_run.subtask_index,
        tasks_to_run.attempt,
        tasks_to_run.has_checkpoints

),

{% else %}

landed as (

    select coalesce(max(ingest_id), -1) as ingest_id
    from bronze_watermark_events

),

progress as (

    select cast(-1 as bigint) as processed_ingest_id, cast(0 as bigint) as batch_id

),

resume_points as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        false as has_checkpoints,
        cast(-1 as bigint) as resumed_after_seq,
        cast(null as string) as state,
        cast(null as bigint) as resumed_first_ms,
        cast(null as bigint) as resumed_effective_ms,
        cast(null as array<int>) as resumed_task_inputs
    from valve_inputs
    group by job_id, vertex_id, subtask_index, attempt

),

{% endif %}

{%- for branch in (['bounded', 'from_start'] if fed_bound.sql else ['all']) %}

{{ branch }}_fed_events as (

    {%- if branch == 'bounded' %}
    -- The tasks resumed from a checkpoint and the new ones, from the bronze files and row groups
    -- the bound reaches: the events after the checkpoint, not the task's whole history.
    {%- elif branch == 'from_start' %}
    -- Tasks with checkpoints fed from their first event (a late event older than all of them, a
    -- new input, other valve semantics): all their history. Mostly none, and broadcast: none
    -- leaves bronze unread (adaptive execution).
    {%- endif %}
    select {{ '/*+ broadcast(resume_points) */ ' if branch == 'from_start' }}valve_inputs.*
    from {{ '(select * from valve_inputs where ' ~ fed_bound.sql ~ ')' if branch == 'bounded'
        else 'valve_inputs' }} as valve_inputs
    inner join resume_points
        on
            valve_inputs.job_id = resume_points.job_id
            and valve_inputs.vertex_id = resume_points.vertex_id
            and valve_inputs.subtask_index = resume_points.subtask_index
            and valve_inputs.attempt = resume_points.attempt
    where
        valve_inputs.seq > resume_points.resumed_after_seq
        {%- if branch == 'bounded' %}
        and (resume_points.resumed_after_seq >= 0 or not resume_points.has_checkpoints)
        {%- elif branch == 'from_start' %}
        and resume_points.resumed_after_seq < 0
        and resume_points.has_checkpoints
        {%- endif %}

),
{%- endfor %}

fed_events as (

    {%- if fed_bound.sql %}
    select * from bounded_fed_events
    union all
    select * from from_start_fed_events
    {%- else %}
    select * from all_fed_events
    {%- endif %}

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
        fed_inputs.fed_from_ms
    from (
        select
            job_id,
            vertex_id,
            subtask_index,
            attempt,
            collect_set(input_index) as inputs,
            min(ts_ms) as fed_from_ms
        from fed_events
        group by job_id, vertex_id, subtask_index, attempt
    ) as fed_inputs
    inner join resume_points
        on
            fed_inputs.job_id = resume_points.job_id
            and fed_inputs.vertex_id = resume_points.vertex_id
            and fed_inputs.subtask_index = resume_points.subtask_index
            and fed_inputs.attempt = resume_points.attempt

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
        resume_points.resumed_after_seq
    from resume_points
    inner join task_inputs
        on
            resume_points.job_id = task_inputs.job_id
            and resume_points.vertex_id = task_inputs.vertex_id
            and resume_points.subtask_index = task_inputs.subtask_index
            and resume_points.attempt = task_inputs.attempt

),

valve_input_rows as (

    {{ tidemark_valve_input_rows('valve_tasks', 'fed_events') }}

),

valve_outputs as (

    -- One row per UDTF call with an array per output column; one row per output after inline.
    select
        valve.job_id,
        valve.vertex_id,
        valve.subtask_index,
        valve.attempt,
        output.*
    from tidemark_valve(
        table(valve_input_rows)
            partition by (job_id, vertex_id, subtask_index, attempt)
            order by (chunk_index, input_index),
        '{{ semantics }}',
        -- A checkpoint every 10 s of the task's time, so that a late event resumes its task
        -- from shortly before it rather than from the last run's end or its first event.
        10000
    ) as valve
    lateral view inline(
        arrays_zip(
            valve.row_kind,
            valve.input_index,
            valve.seq,
            valve.ts_ms,
            valve.effective_ms,
            valve.emission_index,
            valve.kind,
            valve.watermark_ms,
            valve.status,
            valve.resumed_after_seq,
            valve.state
        )
    ) output as
        row_kind,
        input_index,
        seq,
        ts_ms,
        effective_ms,
        emission_index,
        kind,
        watermark_ms,
        status,
        resumed_after_seq,
        state

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
        valve_outputs.state,
        task_inputs.task_inputs,
        task_inputs.fed_from_ms,
        resume_points.resumed_first_ms,
        resume_points.resumed_effective_ms,
        (select batch_id from progress) + 1 as batch_id,
        (select ingest_id from landed) as processed_ingest_id
    from valve_outputs
    inner join task_inputs
        on
            valve_outputs.job_id = task_inputs.job_id
            and valve_outputs.vertex_id = task_inputs.vertex_id
            and valve_outputs.subtask_index = task_inputs.subtask_index
            and valve_outputs.attempt = task_inputs.attempt
    inner join resume_points
        on
            valve_outputs.job_id = resume_points.job_id
            and valve_outputs.vertex_id = resume_points.vertex_id
            and valve_outputs.subtask_index = resume_points.subtask_index
            and valve_outputs.attempt = resume_points.attempt

)

select * from final
