{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at'],
    )
}}
{#-
    Contract §4: what Flink's own task gauges would have published at each view update round.

    Rounds (V1, V4): every epoch multiple of 5000 ms from the first at or after the task's smallest
    ts_ms through its horizon. A round at the same millisecond as an event happens before it. Each
    round's slot (T4, T10) is the time measured since the previous round, which is exactly the sum
    of the task's fct_subtask_seconds over the five seconds before the round (the first slot takes
    every second before the first round): time is split at the round, never counted twice. The
    published value (T5, T6, T12) is the sum of the last k slots divided by 5k, truncated and
    clamped to [0, 1000], k = the slots written so far, at most span / 5.
-#}
{%- set slots = tidemark_gauge_window_slots() | int -%}

with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

subtask_seconds as (

    select * from {{ ref('fct_subtask_seconds') }}

),

tasks as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        first_ts_ms,
        is_busy_time_enabled,
        first_ts_ms + pmod(-first_ts_ms, 5000) as first_update_ms,
        {{ tidemark_floor_ms('horizon_ms', 5000) }} as last_update_ms,
        {% if is_incremental() -%}
        -- The first round whose slot holds a replayed second.
        case
            when is_replayed_from_start then first_ts_ms + pmod(-first_ts_ms, 5000)
            else greatest(
                first_ts_ms + pmod(-first_ts_ms, 5000),
                {{ tidemark_floor_ms('replay_from_second_ms', 5000) }} + 5000
            )
        end as dirty_from_update_ms
        {%- else -%}
        first_ts_ms + pmod(-first_ts_ms, 5000) as dirty_from_update_ms
        {%- endif %}
    from planned
    {% if is_incremental() -%}
    where is_changed
    {%- endif %}

),

window_tasks as (

    -- The earliest round a recomputed round's window reaches back to.
    select
        tasks.*,
        greatest(first_update_ms, dirty_from_update_ms - {{ (slots - 1) * 5000 }})
            as window_from_update_ms
    from tasks

),

rounds as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
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
    left semi join window_tasks
        on
            subtask_seconds.job_id = window_tasks.job_id
            and subtask_seconds.vertex_id = window_tasks.vertex_id
            and subtask_seconds.subtask_index = window_tasks.subtask_index
            and subtask_seconds.attempt = window_tasks.attempt
            and subtask_seconds.second_start_ms >= window_tasks.window_from_update_ms - 5000

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
        coalesce(slots.idle_ms, 0) as idle_ms,
        coalesce(slots.soft_backpressured_ms, 0) as soft_backpressured_ms,
        coalesce(slots.hard_backpressured_ms, 0) as hard_backpressured_ms
    from rounds
    left join slots
        on
            rounds.job_id = slots.job_id
            and rounds.vertex_id = slots.vertex_id
            and rounds.subtask_index = slots.subtask_index
            and rounds.attempt = slots.attempt
            and rounds.update_ms = slots.update_ms

),

{% if is_incremental() %}

previous_rounds as (

    -- The accumulated counts (T9) published at the round before the first recomputed one.
    select
        existing.job_id,
        existing.vertex_id,
        existing.subtask_index,
        existing.attempt,
        existing.accumulated_idle_time_ms,
        existing.accumulated_back_pressured_time_ms
    from {{ this }} as existing
    left semi join tasks
        on
            existing.job_id = tasks.job_id
            and existing.vertex_id = tasks.vertex_id
            and existing.subtask_index = tasks.subtask_index
            and existing.attempt = tasks.attempt
            and existing.update_ms = tasks.dirty_from_update_ms - 5000

),

{% endif %}

windowed as (

    select
        round_slots.*,
        window_tasks.first_ts_ms,
        window_tasks.first_update_ms,
        window_tasks.dirty_from_update_ms,
        window_tasks.is_busy_time_enabled,
        -- T6: the slots written so far, at most the ring's size.
        least(
            (round_slots.update_ms - window_tasks.first_update_ms) div 5000 + 1, {{ slots }}
        ) as written_slots,
        sum(round_slots.idle_ms) over ring as idle_ring_ms,
        sum(round_slots.soft_backpressured_ms) over ring as soft_backpressured_ring_ms,
        sum(round_slots.hard_backpressured_ms) over ring as hard_backpressured_ring_ms,
        sum(
            case
                when round_slots.update_ms >= window_tasks.dirty_from_update_ms
                    then round_slots.idle_ms
            end
        ) over task_so_far as idle_recomputed_ms,
        sum(
            case
                when round_slots.update_ms >= window_tasks.dirty_from_update_ms
                    then round_slots.soft_backpressured_ms + round_slots.hard_backpressured_ms
            end
        ) over task_so_far as back_pressured_recomputed_ms
    from round_slots
    inner join window_tasks
        on
            round_slots.job_id = window_tasks.job_id
            and round_slots.vertex_id = window_tasks.vertex_id
            and round_slots.subtask_index = window_tasks.subtask_index
            and round_slots.attempt = window_tasks.attempt
    window
        ring as (
            partition by
                round_slots.job_id,
                round_slots.vertex_id,
                round_slots.subtask_index,
                round_slots.attempt
            order by round_slots.update_ms
            rows between {{ slots - 1 }} preceding and current row
        ),
        task_so_far as (
            partition by
                round_slots.job_id,
                round_slots.vertex_id,
                round_slots.subtask_index,
                round_slots.attempt
            order by round_slots.update_ms
            rows between unbounded preceding and current row
        )

),

published as (

    select
        windowed.job_id,
        windowed.vertex_id,
        windowed.subtask_index,
        windowed.attempt,
        windowed.update_ms,
        windowed.first_ts_ms,
        windowed.is_busy_time_enabled,
        -- T6/T12: truncating division by 5k, clamped to [0, 1000].
        least(greatest(windowed.idle_ring_ms div (5 * windowed.written_slots), 0), 1000)
            as idle_time_ms_per_second,
        least(
            greatest(windowed.soft_backpressured_ring_ms div (5 * windowed.written_slots), 0), 1000
        ) as soft_back_pressured_time_ms_per_second,
        least(
            greatest(windowed.hard_backpressured_ring_ms div (5 * windowed.written_slots), 0), 1000
        ) as hard_back_pressured_time_ms_per_second,
        {% if is_incremental() -%}
        coalesce(previous_rounds.accumulated_idle_time_ms, 0)
        {%- else -%}
        0
        {%- endif %} + windowed.idle_recomputed_ms as accumulated_idle_time_ms,
        {% if is_incremental() -%}
        coalesce(previous_rounds.accumulated_back_pressured_time_ms, 0)
        {%- else -%}
        0
        {%- endif %} + windowed.back_pressured_recomputed_ms as accumulated_back_pressured_time_ms
    from windowed
    {% if is_incremental() -%}
    left join previous_rounds
        on
            windowed.job_id = previous_rounds.job_id
            and windowed.vertex_id = previous_rounds.vertex_id
            and windowed.subtask_index = previous_rounds.subtask_index
            and windowed.attempt = previous_rounds.attempt
    {%- endif %}
    where windowed.update_ms >= windowed.dirty_from_update_ms

),

recomputed as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        update_ms,
        idle_time_ms_per_second,
        soft_back_pressured_time_ms_per_second,
        hard_back_pressured_time_ms_per_second,
        -- M3: soft + hard, not clamped (up to 2000).
        soft_back_pressured_time_ms_per_second + hard_back_pressured_time_ms_per_second
            as back_pressured_time_ms_per_second,
        -- M4/M5: from the published values; NaN in Flink when busy time is disabled, NULL here.
        case
            when is_busy_time_enabled
                then 1000D - least(
                    idle_time_ms_per_second
                    + soft_back_pressured_time_ms_per_second
                    + hard_back_pressured_time_ms_per_second,
                    1000
                )
        end as busy_time_ms_per_second,
        -- B5/B6: what the back pressure REST handler derives from the published value.
        (soft_back_pressured_time_ms_per_second + hard_back_pressured_time_ms_per_second) / 1000
            as backpressure_ratio,
        {{ tidemark_backpressure_level(
            '(soft_back_pressured_time_ms_per_second + hard_back_pressured_time_ms_per_second) / 1000'
        ) }} as backpressure_level,
        -- T9/M6: running sums since the task's first event, never windowed or clamped.
        accumulated_idle_time_ms,
        accumulated_back_pressured_time_ms,
        -- M7, taking the task's first event as markTaskStart (events do not carry it).
        case
            when is_busy_time_enabled
                then cast(
                    greatest(
                        update_ms - first_ts_ms - accumulated_idle_time_ms
                        - accumulated_back_pressured_time_ms,
                        0
                    ) as double
                )
        end as accumulated_busy_time_ms,
        {{ tidemark_hour_at('update_ms') }} as hour_at
    from published

),

{% if is_incremental() %}

final as (

    {{ tidemark_rows_to_write(
        'recomputed', 'tasks', ['job_id', 'vertex_id', 'subtask_index', 'attempt'],
        'kept.update_ms >= replaced.dirty_from_update_ms',
        columns=['job_id', 'vertex_id', 'subtask_index', 'attempt', 'update_ms',
            'idle_time_ms_per_second', 'soft_back_pressured_time_ms_per_second',
            'hard_back_pressured_time_ms_per_second', 'back_pressured_time_ms_per_second',
            'busy_time_ms_per_second', 'backpressure_ratio', 'backpressure_level',
            'accumulated_idle_time_ms', 'accumulated_back_pressured_time_ms',
            'accumulated_busy_time_ms', 'hour_at'],
    ) }}

)

{% else %}

final as (

    select * from recomputed

)

{% endif %}

select * from final
