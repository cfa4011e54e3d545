{#-
    The run's plan for the timer gauge models: one row per task (job_id, vertex_id, subtask_index,
    attempt) ever seen, with its summary after this run and, for the tasks that changed, from where
    to replay them. See docs/decisions/0004-gauge-incremental.md.

    Full plan (first build, --full-refresh, a gauge model missing): every task is replayed from its
    first event. Incremental plan: only tasks with events landed since the last checkpoint
    (ingest_id > processed_ingest_id) or whose vertex record changed; each replays from the latest
    checkpointed second whose state no new event can change (the anchor), or from its first event
    when there is none (new task, new smallest ts_ms, changed vertex, anchor too far back).

    New events are found in the bronze sources directly, not through staging: staging keeps the
    first landed row per identity with a window over the whole table, which no filter on ingest_id
    can pass, so every run would sort all of bronze. Here the ingest_id filter reaches the parquet
    scan. The plan only takes minima and maxima of the new rows, which a duplicate identity cannot
    move; the replay (int_timer_events_clocked) applies staging's first-landed rule itself.
-#}
{%- set is_incremental_plan = tidemark_gauge_is_incremental() -%}
{%- set tasks_checkpoint = tidemark_model_relation('int_timer_tasks_checkpointed') -%}
{%- set seconds_checkpoint = tidemark_model_relation('int_timer_seconds_checkpointed') -%}
{%- set lookback_ms = (var('gauge_replay_lookback_s', 3600) | int) * 1000 -%}
{%- set min_long = 'cast(-9223372036854775808 as bigint)' -%}
{%- set max_long = 'cast(9223372036854775807 as bigint)' -%}

with

bronze_timer_events as (

    select job_id, vertex_id, subtask_index, attempt, seq, ts_ms, ingest_id
    from {{ source('bronze', 'timer_events') }}

),

bronze_watermark_events as (

    select job_id, vertex_id, subtask_index, attempt, seq, ts_ms, ingest_id
    from {{ source('bronze', 'watermark_events') }}

),

vertices as (

    select * from {{ ref('stg_bronze__vertices') }}

),

{% if is_incremental_plan %}

checkpointed_tasks as (

    select * from {{ tasks_checkpoint }}

),

checkpointed_seconds as (

    select * from {{ seconds_checkpoint }}

),

progress as (

    select coalesce(max(processed_ingest_id), -1) as processed_ingest_id
    from checkpointed_tasks

),

new_events as (

    select bronze_timer_events.*
    from bronze_timer_events
    where ingest_id > (select processed_ingest_id from progress)

    union all

    select bronze_watermark_events.*
    from bronze_watermark_events
    where ingest_id > (select processed_ingest_id from progress)

),

new_by_task as (

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

landed as (

    -- The newest bronze commit this plan accounts for.
    select greatest(
        (select processed_ingest_id from progress),
        (select max(max_new_ingest_id) from new_by_task),
        (select max(ingest_id) from vertices)
    ) as ingest_id

),

changed_vertices as (

    select job_id, vertex_id
    from vertices
    where ingest_id > (select processed_ingest_id from progress)

),

tasks as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        checkpointed_tasks.first_ts_ms as previous_first_ts_ms,
        checkpointed_tasks.horizon_ms as previous_horizon_ms,
        checkpointed_tasks.max_seq as previous_max_seq,
        new_by_task.min_new_seq,
        new_by_task.min_new_ts_ms,
        least(checkpointed_tasks.first_ts_ms, new_by_task.min_new_ts_ms) as first_ts_ms,
        greatest(checkpointed_tasks.horizon_ms, new_by_task.max_new_ts_ms) as horizon_ms,
        greatest(checkpointed_tasks.max_seq, new_by_task.max_new_seq) as max_seq,
        changed_vertices.vertex_id is not null as is_vertex_changed
    from checkpointed_tasks
    full outer join new_by_task using (job_id, vertex_id, subtask_index, attempt)
    left join changed_vertices using (job_id, vertex_id)

),

resumable_tasks as (

    -- Tasks that may resume from a checkpointed second: known before, same vertex record, and no
    -- new event earlier than the task's first one (that would move its first second and round).
    select *
    from tasks
    where
        min_new_seq is not null
        and previous_max_seq is not null
        and not is_vertex_changed
        and min_new_ts_ms >= previous_first_ts_ms

),

search_window as (

    -- The checkpointed hours an anchor can be in (the seconds' partitions Spark reads).
    select {{ tidemark_hour_at('min(previous_horizon_ms) - ' ~ lookback_ms) }} as from_hour_at
    from resumable_tasks

),

recent_seconds as (

    select *
    from checkpointed_seconds
    where hour_at >= (select from_hour_at from search_window)

),

candidate_seconds as (

    select
        recent_seconds.*,
        resumable_tasks.min_new_seq
    from recent_seconds
    inner join resumable_tasks using (job_id, vertex_id, subtask_index, attempt)
    where
        recent_seconds.end_seq < resumable_tasks.min_new_seq
        and recent_seconds.second_start_ms
        >= resumable_tasks.previous_horizon_ms - {{ lookback_ms }}

),

pivots as (

    -- The last old event before the first new one that a checkpointed second ends after. Every
    -- event after it in seq order (new ones included) has a clock at or after the start of the
    -- second following the anchor, so nothing before that second can change.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        max(end_seq) as pivot_seq
    from candidate_seconds
    group by job_id, vertex_id, subtask_index, attempt

),

anchors as (

    select
        candidate_seconds.job_id,
        candidate_seconds.vertex_id,
        candidate_seconds.subtask_index,
        candidate_seconds.attempt,
        max_by(
            named_struct(
                'second_start_ms', candidate_seconds.second_start_ms,
                'end_seq', candidate_seconds.end_seq,
                'end_clock_ms', candidate_seconds.end_clock_ms,
                'is_idle_open', candidate_seconds.is_idle_open,
                'is_soft_backpressured_open', candidate_seconds.is_soft_backpressured_open,
                'is_hard_backpressured_open', candidate_seconds.is_hard_backpressured_open
            ),
            candidate_seconds.second_start_ms
        ) as anchor
    from candidate_seconds
    inner join pivots
        on
            candidate_seconds.job_id = pivots.job_id
            and candidate_seconds.vertex_id = pivots.vertex_id
            and candidate_seconds.subtask_index = pivots.subtask_index
            and candidate_seconds.attempt = pivots.attempt
            and candidate_seconds.end_seq < pivots.pivot_seq
    group by
        candidate_seconds.job_id,
        candidate_seconds.vertex_id,
        candidate_seconds.subtask_index,
        candidate_seconds.attempt

),

replay_floors as (

    -- The smallest ts_ms among the checkpointed events after each anchor (the old events the
    -- replay reads again).
    select
        anchors.job_id,
        anchors.vertex_id,
        anchors.subtask_index,
        anchors.attempt,
        min(recent_seconds.min_ts_ms) as replay_min_ts_ms
    from anchors
    inner join recent_seconds
        on
            anchors.job_id = recent_seconds.job_id
            and anchors.vertex_id = recent_seconds.vertex_id
            and anchors.subtask_index = recent_seconds.subtask_index
            and anchors.attempt = recent_seconds.attempt
            and recent_seconds.second_start_ms > anchors.anchor.second_start_ms
    group by anchors.job_id, anchors.vertex_id, anchors.subtask_index, anchors.attempt

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
        (select processed_ingest_id from progress) as previous_processed_ingest_id,
        case
            -- A new task: every event of it landed after the checkpoint.
            when tasks.previous_max_seq is null then {{ max_long }}
            -- Replayed from its first event: all of it.
            when anchors.anchor is null then {{ min_long }}
            -- From the anchor: no old event needed when none came after it.
            else coalesce(replay_floors.replay_min_ts_ms, {{ max_long }})
        end as replay_min_ts_ms,
        anchors.anchor.end_seq as replay_after_seq,
        anchors.anchor.end_clock_ms as replay_clock_ms,
        anchors.anchor.second_start_ms + 1000 as anchor_next_second_ms,
        anchors.anchor.is_idle_open as is_idle_open_at_anchor,
        anchors.anchor.is_soft_backpressured_open as is_soft_backpressured_open_at_anchor,
        anchors.anchor.is_hard_backpressured_open as is_hard_backpressured_open_at_anchor
    from tasks
    left join anchors using (job_id, vertex_id, subtask_index, attempt)
    left join replay_floors using (job_id, vertex_id, subtask_index, attempt)

),

{% else %}

all_events as (

    select * from bronze_timer_events
    union all
    select * from bronze_watermark_events

),

planned as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min(ts_ms) as first_ts_ms,
        max(ts_ms) as horizon_ms,
        max(seq) as max_seq,
        max(ingest_id) as max_ingest_id,
        true as is_changed,
        cast(-1 as bigint) as previous_processed_ingest_id,
        {{ min_long }} as replay_min_ts_ms,
        cast(null as bigint) as replay_after_seq,
        cast(null as bigint) as replay_clock_ms,
        cast(null as bigint) as anchor_next_second_ms,
        cast(null as boolean) as is_idle_open_at_anchor,
        cast(null as boolean) as is_soft_backpressured_open_at_anchor,
        cast(null as boolean) as is_hard_backpressured_open_at_anchor
    from all_events
    group by job_id, vertex_id, subtask_index, attempt

),

landed as (

    select greatest(
        (select max(max_ingest_id) from planned),
        (select max(ingest_id) from vertices)
    ) as ingest_id

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
        planned.is_changed and planned.replay_after_seq is null as is_replayed_from_start,
        -- What the replay reads: events landed after this commit, or with ts_ms from here on.
        planned.previous_processed_ingest_id,
        case when planned.is_changed then planned.replay_min_ts_ms end as replay_min_ts_ms,
        -- Events with seq > replay_after_seq are replayed (all of them when NULL).
        planned.replay_after_seq,
        planned.replay_clock_ms,
        case
            when not planned.is_changed then null
            when planned.replay_after_seq is null
                then {{ tidemark_floor_ms('planned.first_ts_ms', 1000) }}
            else planned.anchor_next_second_ms
        end as replay_from_second_ms,
        coalesce(planned.is_idle_open_at_anchor, false) as is_idle_open_at_anchor,
        coalesce(planned.is_soft_backpressured_open_at_anchor, false)
            as is_soft_backpressured_open_at_anchor,
        coalesce(planned.is_hard_backpressured_open_at_anchor, false)
            as is_hard_backpressured_open_at_anchor,
        (select ingest_id from landed) as processed_ingest_id
    from planned
    left join vertices
        on
            planned.job_id = vertices.job_id
            and planned.vertex_id = vertices.vertex_id

)

select * from final
