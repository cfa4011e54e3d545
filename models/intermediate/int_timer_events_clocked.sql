{{ config(materialized='ephemeral') }}
{#-
    The events this run replays, per task in seq order, each with the task's clock reading.
    Ephemeral: only int_timer_seconds_replayed reads it, and it is the bulk of a full build; a table
    would write every event once more.

    Clock (T13, see docs/gauges.md): a task's clock is the largest ts_ms it has reported so far in
    seq order, over all its event types. A reading below an earlier one is held at the earlier one,
    so measurements never run backwards, never overlap within one gauge and never give negative
    milliseconds. When a task replays from an anchor, its clock starts from the anchor's clock.

    Reads the staged events, only from the bronze files that can hold a replayed event.
    Bronze holds each identity once (decision 0011). docs/decisions/0004-gauge-incremental.md.
-#}
{#- The bronze files that can hold a replayed event, chosen from the plan while compiling
    (tidemark_replay_reach); the join with the plan below picks the events exactly. -#}
{%- set replayed = tidemark_replay_reach(ref('int_timer_tasks_planned')) %}

with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}
    where is_changed

),

timer_events as (

    select * from {{ ref('stg_bronze__timer_events') }}
    where {{ replayed.timer_events }}

),

watermark_events as (

    select * from {{ ref('stg_bronze__watermark_events') }}
    where {{ replayed.watermark_events }}

),

task_events as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        seq,
        ts_ms,
        -- An `update` (a view round, V3) changes no measurement: like a watermark event, it
        -- only moves the task's clock and horizon.
        case when action != 'update' then gauge end as gauge,
        is_start,
        0 as from_table
    from timer_events

    union all

    -- Watermark events only move the task's clock and horizon (contract §4: all event types).
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        seq,
        ts_ms,
        cast(null as string) as gauge,
        cast(null as boolean) as is_start,
        1 as from_table
    from watermark_events

),

replayed_events as (

    -- The changed tasks' events after their anchors, keyed by the plan's compact task_key so
    -- that the sort below moves a bigint instead of the task's four columns.
    select
        planned.task_key,
        task_events.seq,
        task_events.ts_ms,
        task_events.gauge,
        task_events.is_start,
        task_events.from_table,
        planned.replay_clock_ms
    from task_events
    inner join planned
        on
            {{ tidemark_same_task('task_events', 'planned') }}
            and task_events.seq > planned.resume_after_seq

),

final as (

    select
        replayed_events.task_key,
        replayed_events.seq,
        replayed_events.ts_ms,
        greatest(
            replayed_events.replay_clock_ms,
            max(replayed_events.ts_ms) over (
                partition by replayed_events.task_key
                order by replayed_events.seq, replayed_events.from_table
                rows between unbounded preceding and current row
            )
        ) as clock_ms,
        replayed_events.gauge,
        replayed_events.is_start
    from replayed_events

)

select * from final
