{#-
    The gauge plan's anchor search: per task known to the checkpoints with new events or new
    capture gaps (int_timer_events_landed), its anchor, the latest checkpointed second whose state
    no new event can change, with that state; no row when there is none within
    `gauge_replay_lookback_s` before the task's previous horizon (the plan then replays the task
    from its first event). Empty in a full plan. docs/decisions/0004-gauge-incremental.md.

    With `s` the task's smallest new seq (or first missing seq of a new gap), a candidate is a
    checkpointed second ending before `s` (end_seq < s) within the lookback; the pivot is the
    latest candidate's end_seq; the anchor is the latest candidate ending before the pivot. Every
    event after the anchor's (new ones included) has a clock at or after the start of the second
    after the anchor, so everything up to that second stays as published.

    Two looks, the same computation on different seconds: `near` over the task's last minute of
    seconds before its previous horizon, `far` over its whole lookback, for the tasks the first
    look found no anchor for (late events, a task quiet for a while). An anchor found near is the
    one the whole lookback gives: when any candidate is near, so is the pivot, and a candidate
    between them is the latest one before the pivot. The checkpointed partitions read start from
    the earliest previous horizon of a task with new events minus a minute (near) or the lookback
    (far): tidemark_earliest_horizon, asked while compiling.
-#}
-- noqa: disable=LT02
{%- set tasks_checkpoint = source('previous_run', 'int_timer_tasks_checkpointed') -%}
{%- set seconds_checkpoint = source('previous_run', 'int_timer_seconds_checkpointed') -%}
{%- set is_incremental_plan = tidemark_resumes([tasks_checkpoint, seconds_checkpoint]) -%}
{%- set landed = ref('int_timer_events_landed') -%}
{%- set lookback_ms = (var('gauge_replay_lookback_s', 3600) | int) * 1000 -%}
{%- set near_ms = [60000, lookback_ms] | min -%}
{%- if is_incremental_plan -%}
    {%- set earliest_horizon_ms = tidemark_earliest_horizon(landed, tasks_checkpoint) -%}
{%- endif %}
-- noqa: enable=LT02

{% if is_incremental_plan %}

with

tasks as (

    -- The checkpointed tasks with new events or gaps, and the first seq a new one can change.
    select
        landed.job_id,
        landed.vertex_id,
        landed.subtask_index,
        landed.attempt,
        checkpointed_tasks.horizon_ms as previous_horizon_ms,
        least(landed.min_new_seq, landed.min_gap_seq) as min_new_seq
    from {{ landed }} as landed
    inner join {{ tasks_checkpoint }} as checkpointed_tasks
        on
            {{ tidemark_same_task('landed', 'checkpointed_tasks') }}

),

checkpointed_seconds as (

    select * from {{ seconds_checkpoint }}

),

{%- for look in ['near', 'far'] %}
{%- set from_ms = none if earliest_horizon_ms is none
    else earliest_horizon_ms - (near_ms if look == 'near' else lookback_ms) %}

{{ look }}_tasks as (

    {% if look == 'near' -%}
    select * from tasks
    {%- else -%}
    select * from tasks
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
        {{ tidemark_partitions_from('checkpointed_seconds', from_ms) }}
        {%- if look == 'near' %}
        and checkpointed_seconds.second_start_ms
        >= {{ look }}_tasks.previous_horizon_ms - {{ near_ms }}
        {%- endif %}
    {%- endif %}

),

{{ look }}_pivoted as (

    -- pivot_seq: the last old event before the first new one that a candidate second ends
    -- after. later_min_ts_ms: the smallest ts_ms among the seconds after this one (the old
    -- events a replay from here reads again).
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
                'later_min_ts_ms', later_min_ts_ms
            ),
            second_start_ms
        ) as anchor
    from {{ look }}_pivoted
    where is_candidate and end_seq < pivot_seq
    group by job_id, vertex_id, subtask_index, attempt

),
{%- endfor %}

final as (

    {%- for look in ['near', 'far'] %}
    {{- '\n    union all\n' if not loop.first }}
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        '{{ look }}' as found_by,
        anchor.second_start_ms as anchor_second_ms,
        anchor.end_seq as anchor_end_seq,
        anchor.end_clock_ms as anchor_clock_ms,
        anchor.is_idle_open as is_idle_open_at_anchor,
        anchor.is_soft_backpressured_open as is_soft_backpressured_open_at_anchor,
        anchor.is_hard_backpressured_open as is_hard_backpressured_open_at_anchor,
        anchor.later_min_ts_ms
    from {{ look }}_anchors
    {%- endfor %}

)

select * from final

{% else %}

-- A full plan replays every task from its first event: no anchor.
select
    cast(null as string) as job_id,
    cast(null as string) as vertex_id,
    cast(null as int) as subtask_index,
    cast(null as int) as attempt,
    cast(null as string) as found_by,
    cast(null as bigint) as anchor_second_ms,
    cast(null as bigint) as anchor_end_seq,
    cast(null as bigint) as anchor_clock_ms,
    cast(null as boolean) as is_idle_open_at_anchor,
    cast(null as boolean) as is_soft_backpressured_open_at_anchor,
    cast(null as boolean) as is_hard_backpressured_open_at_anchor,
    cast(null as bigint) as later_min_ts_ms
where false

{% endif %}
