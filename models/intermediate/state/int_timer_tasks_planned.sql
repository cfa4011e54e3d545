{#-
    The run's plan for the timer gauge models (its YAML; docs/decisions/0004-gauge-incremental.md).
    Full plan (first build, --full-refresh, a gauge model missing): every task is replayed from its
    first event. Incremental plan: only tasks with events landed since the last checkpoint
    (int_timer_events_landed) or whose vertex record changed (or a record of their job names its
    release: int_job_releases_resolved); each replays from its anchor (int_timer_anchors_found),
    or from its first event when it may not resume (new task, new smallest ts_ms, changed vertex)
    or has no anchor (none within the lookback). A capture gap landed since the checkpoint counts
    like a new event at its first missing seq: it changes which of the task's seconds are exact
    (fct_subtask_seconds.is_exact), so the task replays from before it; a gap moves neither the
    task's first ts_ms, its horizon nor its max seq. Retention: the YAML.
-#}
-- noqa: disable=LT02
{%- set tasks_checkpoint = source('previous_run', 'int_timer_tasks_checkpointed') -%}
{%- set seconds_checkpoint = source('previous_run', 'int_timer_seconds_checkpointed') -%}
{%- set is_incremental_plan = tidemark_resumes([tasks_checkpoint, seconds_checkpoint]) -%}
{#- Named here, where dbt sees them when it parses the model (a parse renders the full plan). -#}
{%- set landed = ref('int_timer_events_landed') -%}
{%- set anchors = ref('int_timer_anchors_found') -%}
{#- What the task marts keep: the cutoff maintain last recorded, none before it ever ran. -#}
{%- set cutoffs_record = source('previous_run', 'retention_cutoffs') -%}
{%- set task_marts_cutoff_ms = tidemark_task_marts_cutoff(cutoffs_record) -%}
{%- set min_long = 'cast(-9223372036854775808 as bigint)' -%}
{%- set max_long = 'cast(9223372036854775807 as bigint)' -%}
{#- The newest bronze commit the checkpoints account for, read once while compiling: as a literal
    it reaches the vertices' filter, where a scalar subquery was planned again in every CTE that
    used it. -#}
{%- set processed_ingest_id = 'cast(' ~ (tidemark_progress(tasks_checkpoint)
    if is_incremental_plan else -1) ~ ' as bigint)' -%}
-- noqa: enable=LT02

with

landed as (

    -- The new events per task; built in this run from the same checkpoint, or the run fails: a
    -- plan made from another run's summary would miss events (rebuild from
    -- int_timer_events_landed).
    select * from {{ landed }}
    where (
        select
            assert_true(
                coalesce(bool_and(built.after_ingest_id = {{ processed_ingest_id }}), true),
                '{{ landed.identifier }} was not built from this run''s checkpoint: rebuild the '
                || 'gauge models together, e.g. dbt build --select int_timer_events_landed+'
            )
        from {{ landed }} as built
    ) is null

),

vertices as (

    select * from {{ ref('stg_bronze__vertices') }}

),

{% if is_incremental_plan %}

checkpointed_tasks as (

    -- The tasks the task marts still hold rows of.
    select * from {{ tasks_checkpoint }}
    where horizon_ms >= coalesce({{ task_marts_cutoff_ms }}, {{ min_long }})

),

changed_vertices as (

    select job_id, vertex_id
    from vertices
    where ingest_id > {{ processed_ingest_id }}

),

released_jobs as (

    select distinct job_id
    from vertices
    where ingest_id > {{ processed_ingest_id }} and flink_version is not null

),

tasks as (

    -- The tasks the marts hold and the new ones (a task with only new gaps and no checkpoint has
    -- no event to replay).
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        checkpointed_tasks.first_ts_ms as previous_first_ts_ms,
        checkpointed_tasks.max_seq as previous_max_seq,
        -- A new gap replays the task from before its first missing seq, like a late event.
        least(landed.min_new_seq, landed.min_gap_seq) as min_new_seq,
        landed.min_new_ts_ms,
        least(checkpointed_tasks.first_ts_ms, landed.min_new_ts_ms) as first_ts_ms,
        greatest(checkpointed_tasks.horizon_ms, landed.max_new_ts_ms) as horizon_ms,
        greatest(checkpointed_tasks.max_seq, landed.max_new_seq) as max_seq,
        changed_vertices.vertex_id is not null or released_jobs.job_id is not null
            as is_vertex_changed
    from checkpointed_tasks
    full outer join landed using (job_id, vertex_id, subtask_index, attempt)
    left join changed_vertices using (job_id, vertex_id)
    left join released_jobs using (job_id)
    where checkpointed_tasks.max_seq is not null or landed.max_new_seq is not null

),

resumable_tasks as (

    -- Tasks that may resume from their anchor: known before, same vertex record, and no new
    -- event earlier than the task's first one (that would move its first second and round; a
    -- task with only new gaps has no new event).
    select job_id, vertex_id, subtask_index, attempt
    from tasks
    where
        min_new_seq is not null
        and previous_max_seq is not null
        and not is_vertex_changed
        and coalesce(min_new_ts_ms >= previous_first_ts_ms, true)

),

resumed_from as (

    select anchors.*
    from {{ anchors }} as anchors
    left semi join resumable_tasks using (job_id, vertex_id, subtask_index, attempt)

),

planned as (

    select
        tasks.job_id,
        tasks.vertex_id,
        tasks.subtask_index,
        tasks.attempt,
        tasks.first_ts_ms,
        tasks.horizon_ms,
        tasks.max_seq,
        tasks.min_new_seq is not null or tasks.is_vertex_changed as is_changed,
        case
            -- A new task: every event of it landed after the checkpoint.
            when tasks.previous_max_seq is null then {{ max_long }}
            -- Replayed from its first event: all of it.
            when resumed_from.anchor_end_seq is null then {{ min_long }}
            -- From the anchor: no old event needed when none came after it.
            else coalesce(resumed_from.later_min_ts_ms, {{ max_long }})
        end as replay_min_ts_ms,
        resumed_from.anchor_end_seq,
        resumed_from.anchor_clock_ms as replay_clock_ms,
        resumed_from.anchor_second_ms + 1000 as anchor_next_second_ms,
        resumed_from.is_idle_open_at_anchor,
        resumed_from.is_soft_backpressured_open_at_anchor,
        resumed_from.is_hard_backpressured_open_at_anchor,
        -- The newest bronze commit this plan accounts for (landed and vertices are small).
        greatest(
            {{ processed_ingest_id }},
            (select max(greatest(max_new_ingest_id, max_gap_ingest_id)) from landed),
            (select max(ingest_id) from vertices)
        ) as processed_ingest_id
    from tasks
    left join resumed_from using (job_id, vertex_id, subtask_index, attempt)

),

{% else %}

planned as (

    -- Every event is new: every task, from its first event.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min_new_ts_ms as first_ts_ms,
        max_new_ts_ms as horizon_ms,
        max_new_seq as max_seq,
        true as is_changed,
        {{ min_long }} as replay_min_ts_ms,
        cast(null as bigint) as anchor_end_seq,
        cast(null as bigint) as replay_clock_ms,
        cast(null as bigint) as anchor_next_second_ms,
        cast(null as boolean) as is_idle_open_at_anchor,
        cast(null as boolean) as is_soft_backpressured_open_at_anchor,
        cast(null as boolean) as is_hard_backpressured_open_at_anchor,
        -- The newest bronze commit this plan accounts for. A window over the tasks, not a scalar
        -- subquery of them: Spark inlines a CTE in each place that reads it.
        greatest(
            max(max_new_ingest_id) over (), (select max(vertices.ingest_id) from vertices)
        ) as processed_ingest_id
    from landed
    where max_new_seq is not null

),

{% endif %}

final as (

    select
        planned.job_id,
        planned.vertex_id,
        planned.subtask_index,
        planned.attempt,
        -- A compact key of the task within this run (unique in the table, not across runs), for
        -- the replay's sorts and joins.
        monotonically_increasing_id() as task_key,
        planned.first_ts_ms,
        planned.horizon_ms,
        planned.max_seq,
        -- M5: no vertex record means Flink's default, busy time enabled (contract §1).
        coalesce(vertices.is_busy_time_enabled, true) as is_busy_time_enabled,
        planned.is_changed,
        planned.is_changed and planned.anchor_end_seq is null as is_replayed_from_start,
        -- The replay covers the events with seq above this: -1 from the first event (seq >= 0),
        -- NULL when the task does not change.
        case when planned.is_changed then coalesce(planned.anchor_end_seq, -1) end
            as resume_after_seq,
        case
            when not planned.is_changed then null
            when planned.anchor_end_seq is null
                then {{ tidemark_floor_ms('planned.first_ts_ms', 1000) }}
            else planned.anchor_next_second_ms
        end as recompute_from_ms,
        -- What the replay reads: events landed after this commit, or with ts_ms from here on.
        {{ processed_ingest_id }} as previous_processed_ingest_id,
        case when planned.is_changed then planned.replay_min_ts_ms end as replay_min_ts_ms,
        planned.replay_clock_ms,
        coalesce(planned.is_idle_open_at_anchor, false) as is_idle_open_at_anchor,
        coalesce(planned.is_soft_backpressured_open_at_anchor, false)
            as is_soft_backpressured_open_at_anchor,
        coalesce(planned.is_hard_backpressured_open_at_anchor, false)
            as is_hard_backpressured_open_at_anchor,
        planned.processed_ingest_id,
        {{ task_marts_cutoff_ms }} as task_marts_cutoff_ms
    from planned
    left join vertices
        on
            planned.job_id = vertices.job_id
            and planned.vertex_id = vertices.vertex_id

)

select * from final
