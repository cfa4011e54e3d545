{#-
    The run's plan for the timer gauge models: one row per task (job_id, vertex_id, subtask_index,
    attempt) the task marts hold, with its summary after this run and, for the tasks that changed,
    from where to replay them. See docs/decisions/0004-gauge-incremental.md.

    Full plan (first build, --full-refresh, a gauge model missing): every task is replayed from its
    first event. Incremental plan: only tasks with events landed since the last checkpoint
    (ingest_id > processed_ingest_id) or whose vertex record changed; each replays from the latest
    checkpointed second whose state no new event can change (the anchor), or from its first event
    when there is none (new task, new smallest ts_ms, changed vertex, anchor too far back). A
    capture gap landed since the checkpoint counts like a new event at its first missing seq: it
    changes which of the task's seconds are exact (fct_subtask_seconds.is_exact), so the task
    replays from before it; a gap moves neither the task's first ts_ms, its horizon nor its max seq.

    New events are found in the bronze files that can hold them (tidemark_bronze_reach) and summed
    up per task once, while compiling, into a cached view (tidemark_cached_view) that both the
    search window's question and the plan read; the plan only takes minima and maxima of them.

    Retention (docs/decisions/0019-retention.md): once `tidemark maintain` expired the task marts
    before a day (source previous_run.retention_cutoffs), a task whose last ts_ms is before it has
    no row left there and leaves the plan, and so the checkpoint made from it (maintain drops it
    from the checkpoints as well). Every task carries that day as task_marts_cutoff_ms, from
    which the data tests compare the marts with the plan.
-#}
-- noqa: disable=LT02
{%- set landed_view = this.identifier ~ '__landed' -%}
{{ config(post_hook='drop view if exists ' ~ landed_view) }}
{%- set tasks_checkpoint = source('previous_run', 'int_timer_tasks_checkpointed') -%}
{%- set seconds_checkpoint = source('previous_run', 'int_timer_seconds_checkpointed') -%}
{%- set is_incremental_plan = tidemark_resumes([tasks_checkpoint, seconds_checkpoint]) -%}
{#- What the task marts keep: the cutoff maintain last recorded, none before it ever ran. -#}
{%- set cutoffs_record = source('previous_run', 'retention_cutoffs') -%}
{%- set task_marts_cutoff_ms = '(select max(task_marts_cutoff_ms) from ' ~ cutoffs_record ~ ')'
    if execute and load_relation(cutoffs_record) is not none else 'cast(null as bigint)' -%}
{#- Read by the incremental plan only; named here, where dbt sees it when it parses the model. -#}
{%- set staged_gaps = ref('stg_bronze__capture_gaps') -%}
{%- set lookback_ms = (var('gauge_replay_lookback_s', 3600) | int) * 1000 -%}
{#- A task whose new events follow its old ones has its anchor a second or two before its previous
    horizon: the plan looks there first (the last minute of seconds), and in the whole lookback
    only for the tasks it found none for (late events, a task quiet for a while). -#}
{%- set near_ms = [60000, lookback_ms] | min -%}
{%- set min_long = 'cast(-9223372036854775808 as bigint)' -%}
{%- set max_long = 'cast(9223372036854775807 as bigint)' -%}
{%- if is_incremental_plan -%}
    {#- The newest bronze commit the checkpoints account for, read once while compiling: as a
        literal it reaches the bronze scans' filters, where a scalar subquery was planned again
        in every CTE that used it. -#}
    {%- set progress_id = tidemark_progress(tasks_checkpoint) -%}
    {%- set processed_ingest_id = 'cast(' ~ progress_id ~ ' as bigint)' -%}
    {#- The bronze files that can hold rows landed since (tidemark_bronze_reach), chosen once. -#}
    {%- set new_files = {} -%}
    {%- for table in ['timer_events', 'watermark_events', 'capture_gaps'] -%}
        {%- do new_files.update({table: tidemark_bronze_reach(table, progress_id)}) -%}
    {%- endfor -%}
    {#- The new events summed up per task, computed once while compiling and cached in this
        session: the search window below and the plan read it, where each read scanned the new
        events again (millions of rows in a 1,000-subtask minute). Dropped after the model. -#}
    {%- set landed_sql -%}
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
        from (
            {%- for table in ['timer_events', 'watermark_events'] %}
            {{- ' union all' if not loop.first }}
            select bronze.job_id, bronze.vertex_id, bronze.subtask_index, bronze.attempt, bronze.seq,
                bronze.ts_ms, bronze.ingest_id
            from {{ source('bronze', table) }} as bronze
            {#- Compared with the progress as a column: the same generated code in every run. #}
            inner join (
                select coalesce(max(processed_ingest_id), -1) as processed_ingest_id
                from {{ tasks_checkpoint }}
            ) as progress
                on bronze.ingest_id > progress.processed_ingest_id
            where {{ new_files[table] }}
            {%- endfor %}
        )
        group by job_id, vertex_id, subtask_index, attempt
    {%- endset -%}
    {%- set landed = tidemark_cached_view(landed_view, landed_sql) -%}
    {#- The checkpointed partitions an anchor can be in (the seconds' partitions the plan reads): from
        the earliest horizon of a task with new events or gaps, minus the lookback (and minus a
        minute, for the first look). -#}
    {%- set search_window = run_query(
        'select min(horizon_ms) - ' ~ lookback_ms ~ ', min(horizon_ms) - ' ~ near_ms ~ ' from '
        ~ tasks_checkpoint ~ ' left semi join (select job_id, vertex_id, subtask_index, attempt from '
        ~ landed ~ ' union all select job_id, vertex_id, subtask_index, attempt from '
        ~ source('bronze', 'capture_gaps') ~ ' where ' ~ new_files['capture_gaps']
        ~ ' and ingest_id > ' ~ processed_ingest_id
        ~ ') using (job_id, vertex_id, subtask_index, attempt)'
    ) -%}
    {%- set search_from_ms = search_window.columns[0].values()[0] -%}
    {%- set near_from_ms = search_window.columns[1].values()[0] -%}
{%- endif %}
-- noqa: enable=LT02

with

timer_events as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        seq,
        ts_ms,
        ingest_id
    from {{ ref('stg_bronze__timer_events') }}

),

watermark_events as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        seq,
        ts_ms,
        ingest_id
    from {{ ref('stg_bronze__watermark_events') }}

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

checkpointed_seconds as (

    select * from {{ seconds_checkpoint }}

),

new_gaps_by_task as (

    -- Capture gaps (docs/decisions/0006-capture-from-flink.md) landed since the checkpoint.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min(seq) as min_gap_seq,
        max(ingest_id) as max_gap_ingest_id
    from {{ staged_gaps }}
    where {{ new_files['capture_gaps'] }} and ingest_id > {{ processed_ingest_id }}
    group by job_id, vertex_id, subtask_index, attempt

),

new_by_task as (

    -- The new events per task, summed up while compiling (landed_sql above).
    select * from {{ landed }}

),

landed as (

    -- The newest bronze commit this plan accounts for.
    select greatest(
        {{ processed_ingest_id }},
        (select max(max_new_ingest_id) from new_by_task),
        (select max(max_gap_ingest_id) from new_gaps_by_task),
        (select max(ingest_id) from vertices)
    ) as ingest_id

),

changed_vertices as (

    select job_id, vertex_id
    from vertices
    where ingest_id > {{ processed_ingest_id }}

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
        -- A new gap replays the task from before its first missing seq, like a late event.
        least(new_by_task.min_new_seq, new_gaps_by_task.min_gap_seq) as min_new_seq,
        new_by_task.min_new_ts_ms,
        least(checkpointed_tasks.first_ts_ms, new_by_task.min_new_ts_ms) as first_ts_ms,
        greatest(checkpointed_tasks.horizon_ms, new_by_task.max_new_ts_ms) as horizon_ms,
        greatest(checkpointed_tasks.max_seq, new_by_task.max_new_seq) as max_seq,
        changed_vertices.vertex_id is not null as is_vertex_changed
    from checkpointed_tasks
    full outer join new_by_task using (job_id, vertex_id, subtask_index, attempt)
    left join new_gaps_by_task using (job_id, vertex_id, subtask_index, attempt)
    left join changed_vertices using (job_id, vertex_id)

),

resumable_tasks as (

    -- Tasks that may resume from a checkpointed second: known before, same vertex record, and no
    -- new event earlier than the task's first one (that would move its first second and round;
    -- a task with only new gaps has no new event).
    select *
    from tasks
    where
        min_new_seq is not null
        and previous_max_seq is not null
        and not is_vertex_changed
        and coalesce(min_new_ts_ms >= previous_first_ts_ms, true)

),

{#- Two looks for each resumable task's anchor, the same computation on different seconds: `near`
    over the task's last minute of seconds before its previous horizon, `far` over its whole
    lookback, for the tasks the first look found no anchor for. An anchor found near is the one the
    whole lookback gives: the candidates are the seconds that end before the first new event, the
    pivot is the latest of them, so when any candidate is near, the pivot is near too, and a
    candidate found between them is the latest one before the pivot. -#}
{%- for look in ['near', 'far'] %}
{%- set from_ms = near_from_ms if look == 'near' else search_from_ms %}

{{ look }}_tasks as (

    {% if look == 'near' -%}
    select * from resumable_tasks
    {%- else -%}
    select * from resumable_tasks
    left anti join near_anchors using (job_id, vertex_id, subtask_index, attempt)
    {%- endif %}

),

{{ look }}_seconds as (

    -- The recent checkpointed seconds of each task looked at; a candidate anchor ends before the
    -- first new event and lies within the lookback. The tasks are few (far: mostly none), and
    -- broadcast, an empty list of tasks leaves the seconds unread (adaptive execution).
    select /*+ broadcast({{ look }}_tasks) */
        checkpointed_seconds.*,
        checkpointed_seconds.end_seq < {{ look }}_tasks.min_new_seq
        and checkpointed_seconds.second_start_ms
        >= {{ look }}_tasks.previous_horizon_ms - {{ lookback_ms }} as is_candidate
    from checkpointed_seconds
    inner join {{ look }}_tasks using (job_id, vertex_id, subtask_index, attempt)
    {% if from_ms is none -%}
    where false  -- no checkpointed task has new events
    {%- else -%}
    where
        {{ tidemark_partitions_from('checkpointed_seconds', from_ms | int) }}
        {%- if look == 'near' %}
        and checkpointed_seconds.second_start_ms
        >= {{ look }}_tasks.previous_horizon_ms - {{ near_ms }}
        {%- endif %}
    {%- endif %}

),

{{ look }}_pivoted as (

    -- pivot_seq: the last old event before the first new one that a candidate second ends
    -- after. Every event after it in seq order (new ones included) has a clock at or after the
    -- start of the second following the anchor, so nothing before that second can change.
    -- later_min_ts_ms: the smallest ts_ms among the seconds after this one (the old events a
    -- replay from here reads again).
    select
        {{ look }}_seconds.*,
        max(case when is_candidate then end_seq end) over (
            partition by job_id, vertex_id, subtask_index, attempt
        ) as pivot_seq,
        min(min_ts_ms) over (
            partition by job_id, vertex_id, subtask_index, attempt
            order by second_start_ms desc
            rows between unbounded preceding and 1 preceding
        ) as later_min_ts_ms
    from {{ look }}_seconds

),

{{ look }}_anchors as (

    -- The latest candidate second that ends before the pivot.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        max_by(
            named_struct(
                'second_start_ms', second_start_ms,
                'end_seq', end_seq,
                'end_clock_ms', end_clock_ms,
                'is_idle_open', is_idle_open,
                'is_soft_backpressured_open', is_soft_backpressured_open,
                'is_hard_backpressured_open', is_hard_backpressured_open,
                'replay_min_ts_ms', later_min_ts_ms
            ),
            second_start_ms
        ) as anchor
    from {{ look }}_pivoted
    where is_candidate and end_seq < pivot_seq
    group by job_id, vertex_id, subtask_index, attempt

),
{%- endfor %}

anchors as (

    select * from near_anchors
    union all
    select * from far_anchors

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
        {{ processed_ingest_id }} as previous_processed_ingest_id,
        case
            -- A new task: every event of it landed after the checkpoint.
            when tasks.previous_max_seq is null then {{ max_long }}
            -- Replayed from its first event: all of it.
            when anchors.anchor is null then {{ min_long }}
            -- From the anchor: no old event needed when none came after it.
            else coalesce(anchors.anchor.replay_min_ts_ms, {{ max_long }})
        end as replay_min_ts_ms,
        anchors.anchor.end_seq as replay_after_seq,
        anchors.anchor.end_clock_ms as replay_clock_ms,
        anchors.anchor.second_start_ms + 1000 as anchor_next_second_ms,
        anchors.anchor.is_idle_open as is_idle_open_at_anchor,
        anchors.anchor.is_soft_backpressured_open as is_soft_backpressured_open_at_anchor,
        anchors.anchor.is_hard_backpressured_open as is_hard_backpressured_open_at_anchor,
        (select ingest_id from landed) as processed_ingest_id
    from tasks
    left join anchors using (job_id, vertex_id, subtask_index, attempt)

),

{% else %}

all_events as (

    select * from timer_events
    union all
    select * from watermark_events

),

tasks as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min(ts_ms) as first_ts_ms,
        max(ts_ms) as horizon_ms,
        max(seq) as max_seq,
        max(ingest_id) as max_ingest_id
    from all_events
    group by job_id, vertex_id, subtask_index, attempt

),

planned as (

    select
        *,
        true as is_changed,
        cast(-1 as bigint) as previous_processed_ingest_id,
        {{ min_long }} as replay_min_ts_ms,
        cast(null as bigint) as replay_after_seq,
        cast(null as bigint) as replay_clock_ms,
        cast(null as bigint) as anchor_next_second_ms,
        cast(null as boolean) as is_idle_open_at_anchor,
        cast(null as boolean) as is_soft_backpressured_open_at_anchor,
        cast(null as boolean) as is_hard_backpressured_open_at_anchor,
        -- The newest bronze commit this plan accounts for. A window over the tasks, not a scalar
        -- subquery of them: Spark inlines a CTE in each place that reads it, and such a
        -- subquery scanned all of bronze a second time.
        greatest(
            max(max_ingest_id) over (), (select max(vertices.ingest_id) from vertices)
        ) as processed_ingest_id
    from tasks

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
        end as recompute_from_ms,
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
