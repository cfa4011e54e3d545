{{ config(materialized='ephemeral') }}
{#-
    The epoch rounds' windows (V1, V4; contract §4), for fct_subtask_flink_gauges: for each changed
    task of the plan without captured `update` records, every epoch multiple of 5000 ms from the
    first at or after its smallest ts_ms through its horizon, from the earliest round a
    recomputed round's window reaches back to. A round at the same millisecond as an event
    happens before it. Each round's slot (T4, T10) is the time measured since the previous
    round, exactly the sum of the task's fct_subtask_seconds over the five seconds before the
    round (the first slot takes every second before the first round): time is split at the
    round, never counted twice. Per round: the ring's sums over the last k slots (T6: k the
    slots written so far, at most the ring's size: 1 before Flink 1.17, int_job_releases_resolved),
    and the sums since the first recomputed round that the accumulated counts (T9) add to the
    round before it, which the mart reads from its own table.
-#}
{%- set slots = tidemark_gauge_window_slots() | int -%}

with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}
    where is_changed

),

gauge_rounds as (

    select * from {{ ref('int_timer_rounds_replayed') }}

),

job_releases as (

    select * from {{ ref('int_job_releases_resolved') }}

),

subtask_seconds as (

    select * from {{ ref('fct_subtask_seconds') }}

),

captured_tasks as (

    select distinct
        job_id,
        vertex_id,
        subtask_index,
        attempt
    from gauge_rounds

),

tasks as (

    -- The changed tasks without captured rounds, from their first recomputed round on.
    select
        planned.job_id,
        planned.vertex_id,
        planned.subtask_index,
        planned.attempt,
        planned.first_ts_ms,
        planned.is_busy_time_enabled,
        job_releases.gauge_window_slots,
        planned.first_ts_ms + pmod(-planned.first_ts_ms, 5000) as first_update_ms,
        {{ tidemark_floor_ms('planned.horizon_ms', 5000) }} as last_update_ms,
        {{ tidemark_epoch_recompute_from_ms('planned') }} as recompute_from_ms
    from planned
    inner join job_releases
        on planned.job_id = job_releases.job_id
    left anti join captured_tasks
        on
            {{ tidemark_same_task('planned', 'captured_tasks') }}

),

window_tasks as (

    -- The earliest round a recomputed round's window reaches back to.
    select
        tasks.*,
        greatest(
            tasks.first_update_ms,
            tasks.recompute_from_ms - (tasks.gauge_window_slots - 1) * 5000
        ) as window_from_update_ms
    from tasks

),

rounds as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        first_ts_ms,
        first_update_ms,
        recompute_from_ms,
        is_busy_time_enabled,
        gauge_window_slots,
        explode(
            sequence(window_from_update_ms, last_update_ms, cast(5000 as bigint))
        ) as update_ms
    from window_tasks
    where window_from_update_ms <= last_update_ms

),

slot_seconds as (

    select
        subtask_seconds.job_id,
        subtask_seconds.vertex_id,
        subtask_seconds.subtask_index,
        subtask_seconds.attempt,
        -- The round right after the second: a second ending on a round belongs to it.
        {{ tidemark_floor_ms('subtask_seconds.second_start_ms', 5000) }} + 5000 as update_ms,
        subtask_seconds.idle_ms,
        subtask_seconds.soft_backpressured_ms,
        subtask_seconds.hard_backpressured_ms
    from subtask_seconds
    left semi join window_tasks  -- noqa: AL04
        on
            {{ tidemark_same_task('subtask_seconds', 'window_tasks') }}
            and subtask_seconds.second_start_ms >= window_tasks.window_from_update_ms - 5000
    -- Only the partitions from the earliest slot read (a full plan reads them all).
    where
        {{ tidemark_partitions_from(
            'subtask_seconds', '(select min(window_from_update_ms) from window_tasks) - 5000'
        ) }}

),

slots as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        update_ms,
        sum(idle_ms) as idle_ms,
        sum(soft_backpressured_ms) as soft_backpressured_ms,
        sum(hard_backpressured_ms) as hard_backpressured_ms
    from slot_seconds
    group by job_id, vertex_id, subtask_index, attempt, update_ms

),

round_slots as (

    select
        rounds.job_id,
        rounds.vertex_id,
        rounds.subtask_index,
        rounds.attempt,
        rounds.update_ms,
        rounds.first_ts_ms,
        rounds.first_update_ms,
        rounds.recompute_from_ms,
        rounds.is_busy_time_enabled,
        rounds.gauge_window_slots,
        coalesce(slots.idle_ms, 0) as idle_ms,
        coalesce(slots.soft_backpressured_ms, 0) as soft_backpressured_ms,
        coalesce(slots.hard_backpressured_ms, 0) as hard_backpressured_ms
    from rounds
    left join slots
        on
            {{ tidemark_same_task('rounds', 'slots') }}
            and rounds.update_ms = slots.update_ms

),

windowed as (

    select
        round_slots.*,
        -- T6: the slots written so far, at most the ring's size (1: no ring, T5).
        least(
            (round_slots.update_ms - round_slots.first_update_ms) div 5000 + 1,
            round_slots.gauge_window_slots
        ) as written_slots,
        {%- for gauge in ['idle', 'soft_backpressured', 'hard_backpressured'] %}
        case
            when round_slots.gauge_window_slots = 1 then round_slots.{{ gauge }}_ms
            else sum(round_slots.{{ gauge }}_ms) over ring
        end as {{ gauge }}_ring_ms,
        {%- endfor %}
        sum(
            case
                when round_slots.update_ms >= round_slots.recompute_from_ms
                    then round_slots.idle_ms
            end
        ) over task_so_far as idle_recomputed_ms,
        sum(
            case
                when round_slots.update_ms >= round_slots.recompute_from_ms
                    then round_slots.soft_backpressured_ms + round_slots.hard_backpressured_ms
            end
        ) over task_so_far as back_pressured_recomputed_ms
    from round_slots
    window
        ring as (
            partition by job_id, vertex_id, subtask_index, attempt
            order by update_ms
            rows between {{ slots - 1 }} preceding and current row
        ),
        task_so_far as (
            partition by job_id, vertex_id, subtask_index, attempt
            order by update_ms
            rows between unbounded preceding and current row
        )

),

final as (

    -- The recomputed rounds: what each published (T6/T12: truncating division by 5k, clamped to
    -- [0, 1000]) and the time measured since the first recomputed round.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        update_ms,
        first_ts_ms,
        is_busy_time_enabled,
        recompute_from_ms,
        gauge_window_slots,
        least(greatest(idle_ring_ms div (5 * written_slots), 0), 1000)
            as idle_time_ms_per_second,
        least(greatest(soft_backpressured_ring_ms div (5 * written_slots), 0), 1000)
            as soft_back_pressured_time_ms_per_second,
        least(greatest(hard_backpressured_ring_ms div (5 * written_slots), 0), 1000)
            as hard_back_pressured_time_ms_per_second,
        idle_recomputed_ms,
        back_pressured_recomputed_ms
    from windowed
    where update_ms >= recompute_from_ms

)

select * from final
