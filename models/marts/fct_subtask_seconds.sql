{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at'],
    )
}}
{#-
    Contract §4: per task and second, the milliseconds inside effective TimerGauge measurements
    and what they add up to. Incremental runs rewrite the (job_id, hour_at) partitions holding
    replayed seconds: the replayed rows plus the partitions' other rows as they were.
-#}

with

replayed_seconds as (

    select * from {{ ref('int_timer_seconds_replayed') }}

),

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

recomputed as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        second_start_ms,
        idle_ms,
        soft_backpressured_ms,
        hard_backpressured_ms,
        -- M3: soft + hard, not clamped.
        soft_backpressured_ms + hard_backpressured_ms as backpressured_ms,
        -- M4/M5: NaN in Flink where busy time is disabled (legacy sources): NULL here.
        case
            when is_busy_time_enabled
                then 1000D - least(idle_ms + soft_backpressured_ms + hard_backpressured_ms, 1000)
        end as busy_ms,
        (soft_backpressured_ms + hard_backpressured_ms) / 1000 as backpressure_ratio,
        {{ tidemark_backpressure_level('(soft_backpressured_ms + hard_backpressured_ms) / 1000') }}
            as backpressure_level,
        second_start_ms + 1000 <= horizon_ms as is_complete,
        hour_at
    from replayed_seconds

),

{% if is_incremental() %}

replayed_tasks as (

    select * from planned
    where is_changed

),

final as (

    {{ tidemark_rows_to_write(
        'recomputed', 'replayed_tasks', ['job_id', 'vertex_id', 'subtask_index', 'attempt'],
        'kept.second_start_ms >= replaced.replay_from_second_ms',
        columns=['job_id', 'vertex_id', 'subtask_index', 'attempt', 'second_start_ms', 'idle_ms',
            'soft_backpressured_ms', 'hard_backpressured_ms', 'backpressured_ms', 'busy_ms',
            'backpressure_ratio', 'backpressure_level', 'is_complete', 'hour_at'],
    ) }}

)

{% else %}

final as (

    -- Built from scratch: the replayed seconds must then cover every task from its first event.
    select recomputed.*
    from recomputed
    where (
        select assert_true(
            coalesce(bool_and(is_replayed_from_start), true),
            'fct_subtask_seconds is being rebuilt, but this run replays only part of the tasks: '
            || 'rebuild the gauge models together, e.g. dbt build --full-refresh '
            || '--select int_timer_tasks_planned+'
        )
        from planned
    ) is null

)

{% endif %}

select * from final
