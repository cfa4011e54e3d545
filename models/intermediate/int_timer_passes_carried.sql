{{ config(materialized='ephemeral') }}
{#-
    The captured view rounds of fct_subtask_flink_gauges (round_source = 'captured', decision
    0006): a captured task's gauge updates (int_timer_rounds_replayed) grouped into the view
    updater's passes (a pass: the task's first update, or one 2.5 s or more after the previous),
    one row per pass with each gauge's value and what it published, and the figures Flink derives
    from them (M3, M4/M5, B5, B6; tidemark_gauge_figures). A gauge not updated in a pass still
    shows its last value, and 0 before its first update (T7, T9). window_from_ms: the earliest time
    any slot of the pass's window covers (T6), for the mart's is_exact. Ephemeral: the mart's
    query computes it inline, as when it was one of the mart's CTEs.
-#}
{%- set slots = tidemark_gauge_window_slots() | int -%}

with

gauge_rounds as (

    select * from {{ ref('int_timer_rounds_replayed') }}

),

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

gauge_rounds_in_passes as (

    select
        gauge_rounds.*,
        -- A new view updater pass: the task's first update, or 2.5 s or more after the previous.
        sum(
            case when gauge_rounds.gap_ms is null or gauge_rounds.gap_ms >= 2500 then 1 else 0 end
        ) over (
            partition by
                gauge_rounds.job_id,
                gauge_rounds.vertex_id,
                gauge_rounds.subtask_index,
                gauge_rounds.attempt
            order by gauge_rounds.update_ms, gauge_rounds.update_seq
            rows between unbounded preceding and current row
        ) as pass_no
    from (
        select
            gauge_rounds.*,
            gauge_rounds.update_ms - lag(gauge_rounds.update_ms) over (
                partition by
                    gauge_rounds.job_id,
                    gauge_rounds.vertex_id,
                    gauge_rounds.subtask_index,
                    gauge_rounds.attempt
                order by gauge_rounds.update_ms, gauge_rounds.update_seq
            ) as gap_ms
        from gauge_rounds
    ) as gauge_rounds

),

captured_passes as (

    select
        gauge_rounds_in_passes.job_id,
        gauge_rounds_in_passes.vertex_id,
        gauge_rounds_in_passes.subtask_index,
        gauge_rounds_in_passes.attempt,
        gauge_rounds_in_passes.pass_no,
        max(gauge_rounds_in_passes.update_ms) as update_ms,
        {%- for gauge, column in [
            ('idle', 'idle_time_ms_per_second'),
            ('soft_backpressured', 'soft_back_pressured_time_ms_per_second'),
            ('hard_backpressured', 'hard_back_pressured_time_ms_per_second'),
        ] %}
        max(
            case
                when
                    gauge_rounds_in_passes.gauge = '{{ gauge }}'
                    then gauge_rounds_in_passes.value_ms_per_second
            end
        ) as {{ column }},
        max(
            case
                when
                    gauge_rounds_in_passes.gauge = '{{ gauge }}'
                    then gauge_rounds_in_passes.published
            end
        ) as published_{{ column }},
        max(
            case
                when
                    gauge_rounds_in_passes.gauge = '{{ gauge }}'
                    then gauge_rounds_in_passes.accumulated_ms
            end
        ) as accumulated_{{ gauge }}_ms,
        {%- endfor %}
        -- The earliest time any slot in this round's window covers (T6): is_exact looks there.
        min(gauge_rounds_in_passes.window_from_ms) as window_from_ms
    from (
        select
            *,
            coalesce(
                case
                    when window_slots = 1 then lag(update_ms) over gauge_rounds
                    else lag(update_ms, {{ slots }}) over gauge_rounds
                end,
                -9223372036854775807
            ) as window_from_ms
        from gauge_rounds_in_passes
        window gauge_rounds as (
            partition by job_id, vertex_id, subtask_index, attempt, gauge
            order by round_no
        )
    ) as gauge_rounds_in_passes
    group by
        gauge_rounds_in_passes.job_id,
        gauge_rounds_in_passes.vertex_id,
        gauge_rounds_in_passes.subtask_index,
        gauge_rounds_in_passes.attempt,
        gauge_rounds_in_passes.pass_no

),

carried_passes as (

    -- A gauge not updated in a pass (a task closing mid-pass) still shows its last value, and
    -- 0 before its first update (T7, T9).
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        pass_no,
        update_ms,
        {%- for column in ['idle_time_ms_per_second', 'soft_back_pressured_time_ms_per_second',
            'hard_back_pressured_time_ms_per_second', 'accumulated_idle_ms',
            'accumulated_soft_backpressured_ms', 'accumulated_hard_backpressured_ms'] %}
        coalesce(last_value({{ column }}, true) over task_so_far, 0) as {{ column }},
        {%- endfor %}
        published_idle_time_ms_per_second,
        published_soft_back_pressured_time_ms_per_second,
        published_hard_back_pressured_time_ms_per_second,
        window_from_ms
    from captured_passes
    window task_so_far as (
        partition by job_id, vertex_id, subtask_index, attempt
        order by pass_no
        rows between unbounded preceding and current row
    )

),

captured as (

    select
        carried_passes.job_id,
        carried_passes.vertex_id,
        carried_passes.subtask_index,
        carried_passes.attempt,
        carried_passes.update_ms,
        carried_passes.idle_time_ms_per_second,
        carried_passes.soft_back_pressured_time_ms_per_second,
        carried_passes.hard_back_pressured_time_ms_per_second,
        -- A gauge the task does not have counts 0 (Flink <= 1.14).
        {{ tidemark_gauge_figures(
            'coalesce(carried_passes.idle_time_ms_per_second, 0)',
            'coalesce(carried_passes.soft_back_pressured_time_ms_per_second, 0)',
            'coalesce(carried_passes.hard_back_pressured_time_ms_per_second, 0)',
            'coalesce(planned.is_busy_time_enabled, true)',
            back_pressured='back_pressured_time_ms_per_second',
            busy='busy_time_ms_per_second',
        ) }},
        carried_passes.accumulated_idle_ms as accumulated_idle_time_ms,
        coalesce(carried_passes.accumulated_soft_backpressured_ms, 0)
        + coalesce(carried_passes.accumulated_hard_backpressured_ms, 0)
            as accumulated_back_pressured_time_ms,
        {{ tidemark_accumulated_busy_ms(
            'carried_passes.update_ms',
            'planned.first_ts_ms',
            'coalesce(carried_passes.accumulated_idle_ms, 0)',
            'coalesce(carried_passes.accumulated_soft_backpressured_ms, 0)'
            ~ ' + coalesce(carried_passes.accumulated_hard_backpressured_ms, 0)',
            'coalesce(planned.is_busy_time_enabled, true)',
        ) }} as accumulated_busy_time_ms,
        'captured' as round_source,
        carried_passes.published_idle_time_ms_per_second,
        carried_passes.published_soft_back_pressured_time_ms_per_second,
        carried_passes.published_hard_back_pressured_time_ms_per_second,
        carried_passes.window_from_ms,
        {{ tidemark_hour_at('carried_passes.update_ms') }} as hour_at,
        {{ tidemark_minute_slice('carried_passes.update_ms') }} as minute_slice
    from carried_passes
    left join planned
        on
            {{ tidemark_same_task('carried_passes', 'planned') }}

),

final as (

    select * from captured

)

select * from final
