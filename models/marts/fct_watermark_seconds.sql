{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
    )
}}
{#-
    Per task and second, from the second of the task's smallest ts_ms through the second of its
    largest (over its watermark and watermark_status events): the task's clock at the end of the
    second (fct_task_watermarks), its lag behind that instant, and whether it is idle or stalled.
    Incremental runs recompute each fed task from the second of its resume point (or of a new
    first second) and rewrite the (job_id, hour_at, minute_slice) partitions involved.
-#}
{%- set stall_ms = (var('watermark_stall_s', 10) | int) * 1000 -%}

{% set runs_sql %}
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        ts_ms as first_ms,
        effective_ms as horizon_ms,
        {{ tidemark_floor_ms('ts_ms', 1000) }} as first_second_ms,
        -- Seconds ending at or before the resume point's time cannot change, unless a late
        -- event moved the task's first second earlier: then all of them are recomputed.
        case
            when resumed_effective_ms is null or ts_ms < resumed_first_ms
                then {{ tidemark_floor_ms('ts_ms', 1000) }}
            else {{ tidemark_floor_ms('resumed_effective_ms', 1000) }}
        end as recompute_from_ms
    from {{ ref('int_valve_outputs_computed') }}
    where row_kind = 'state' and effective_ms is not null
{% endset %}
with

valve_outputs as (

    select * from {{ ref('int_valve_outputs_computed') }}

),

task_watermarks as (

    select * from {{ ref('fct_task_watermarks') }}

),

runs as (

    {{ runs_sql }}

),

second_ends as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        second_start_ms + 1000 as at_ms,
        0 as point_order,
        cast(null as bigint) as seq,
        cast(null as int) as change_index,
        second_start_ms,
        cast(null as bigint) as watermark_ms,
        cast(null as boolean) as is_idle,
        cast(null as bigint) as last_progress_ms
    from (
        select
            runs.*,
            explode(
                sequence(runs.recompute_from_ms, {{ tidemark_floor_ms('horizon_ms', 1000) }}, 1000)
            )
                as second_start_ms
        from runs
    )

),

{#- The recomputed tasks' changes in force at or after their first recomputed second R. Looked
    for in the partitions from a minute before the earliest R; a task whose change in force at R
    is older (its clock has not changed since) is looked for in the others, when there is one
    (tidemark_near_look asks while compiling). Exact: a task's
    valid_from_ms never decreases with its seq (fct_task_watermarks), so when the near partitions
    hold a change of it at or before R, they hold every change of it in force at or after R. A
    task recomputed from its first second has no change before R to look for. -#}
{%- set change_found = 't.valid_from_ms <= runs.recompute_from_ms'
    ~ ' and (t.valid_to_ms is null or t.valid_to_ms >= runs.recompute_from_ms)' %}
{%- set change_wanted = 'runs.recompute_from_ms > runs.first_second_ms' %}
{%- set look_up = tidemark_near_look(
    runs_sql,
    'min(recompute_from_ms) - 60000',
    ref('fct_task_watermarks'),
    change_found,
    change_wanted,
) if is_incremental() else {'from_ms': none, 'far': false} %}
{%- set near_from_ms = 'cast(' ~ ('null' if look_up.from_ms is none else look_up.from_ms)
    ~ ' as bigint)' %}
{% call(tasks, in_look, hint) tidemark_near_and_far(
    'changes', look_up, near_from_ms, ref('fct_task_watermarks'), 'task_watermarks',
    change_found, change_wanted
) %}
    select {{ hint }}
        task_watermarks.job_id,
        task_watermarks.vertex_id,
        task_watermarks.subtask_index,
        task_watermarks.attempt,
        task_watermarks.valid_from_ms as at_ms,
        1 as point_order,
        task_watermarks.seq,
        task_watermarks.change_index,
        cast(null as bigint) as second_start_ms,
        task_watermarks.watermark_ms,
        task_watermarks.is_idle,
        task_watermarks.last_progress_ms
    from task_watermarks
    inner join {{ tasks }}
        on
            {{ tidemark_same_task('task_watermarks', tasks) }}
    where
        (
            task_watermarks.valid_to_ms is null
            or task_watermarks.valid_to_ms >= {{ tasks }}.recompute_from_ms
        )
        and {{ in_look }}
{% endcall %},

carried as (

    -- The state at a second's end is the last change before it: a change at exactly the end
    -- belongs to the next second (point_order puts the second's end first).
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        point_order,
        second_start_ms,
        last_value(watermark_ms, true) over running as watermark_ms,
        last_value(is_idle, true) over running as is_idle,
        last_value(last_progress_ms, true) over running as last_progress_ms
    from (
        select * from second_ends
        union all
        select * from changes
    ) as points
    window running as (
        partition by job_id, vertex_id, subtask_index, attempt
        order by at_ms, point_order, seq, change_index
        rows between unbounded preceding and current row
    )

),

recomputed as (

    select
        carried.job_id,
        carried.vertex_id,
        carried.subtask_index,
        carried.attempt,
        carried.second_start_ms,
        carried.watermark_ms,
        carried.second_start_ms + 1000 - carried.watermark_ms as watermark_lag_ms,
        coalesce(carried.is_idle, false) as is_idle,
        not coalesce(carried.is_idle, false)
        and carried.second_start_ms + 1000 - coalesce(carried.last_progress_ms, runs.first_ms)
        >= {{ stall_ms }} as is_stalled,
        carried.last_progress_ms,
        carried.second_start_ms + 1000 <= runs.horizon_ms as is_complete,
        {{ tidemark_hour_at('carried.second_start_ms') }} as hour_at,
        {{ tidemark_minute_slice('carried.second_start_ms') }} as minute_slice
    from carried
    inner join runs
        on
            {{ tidemark_same_task('carried', 'runs') }}
    where carried.point_order = 0

),

final as (

-- A fed task's seconds from its recompute_from_ms are replaced, and the partitions that held
-- them rewritten; a build from scratch needs a run that fed every task from its first event
-- (int_valve_outputs_computed makes one when a watermark mart is missing).
    {{ tidemark_incremental_tail(
        replaced='runs', since='kept.second_start_ms >= replaced.recompute_from_ms',
        jobs='runs', rewrite_replaced=true, replaced_from='min(recompute_from_ms)',
        plan="valve_outputs where row_kind = 'state'",
    ) }}

)

select * from final
