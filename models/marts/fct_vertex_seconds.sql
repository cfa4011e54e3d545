{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
    )
}}
{#-
    Per vertex and second, what Flink's job graph shows over the vertex's subtasks (U1-U3) and its
    back pressure level (B7), from fct_subtask_seconds. Incremental runs recompute, per vertex, the
    seconds from the earliest one any of its subtasks replayed.
-#}

with

subtask_seconds as (

    select * from {{ ref('fct_subtask_seconds') }}

),

planned as (  -- noqa: ST03

    select * from {{ ref('int_timer_tasks_planned') }}

),

{% if is_incremental() %}

dirty_vertices as (

    select
        job_id,
        vertex_id,
        min(recompute_from_ms) as recompute_from_ms
    from planned
    where is_changed
    group by job_id, vertex_id

),

vertex_subtask_seconds as (

    {{ tidemark_rows_of_dirty_vertices('subtask_seconds', 'second_start_ms') }}

),

{% else %}

vertex_subtask_seconds as (

    select * from subtask_seconds

),

{% endif %}

representative_attempts as (

    -- B7 (1.16+): one attempt per subtask counts, the representative one; per second, the
    -- latest attempt that reports that second.
    select
        vertex_subtask_seconds.*,
        {{ tidemark_attempt_rank('vertex_subtask_seconds', 'second_start_ms') }} as attempt_rank
    from vertex_subtask_seconds

),

subtasks as (

    select
        representative_attempts.*,
        avg(representative_attempts.backpressured_ms)
            over vertex_second
            as vertex_avg_backpressured_ms,
        avg(representative_attempts.busy_ms) over vertex_second as vertex_avg_busy_ms
    from representative_attempts
    where representative_attempts.attempt_rank = 1
    window vertex_second as (partition by job_id, vertex_id, second_start_ms)

),

aggregated as (

    select
        job_id,
        vertex_id,
        second_start_ms,
        count(*) as subtask_count,
        count(busy_ms) as busy_subtask_count,
        max(backpressured_ms) as max_backpressured_ms,
        min(backpressured_ms) as min_backpressured_ms,
        avg(backpressured_ms) as avg_backpressured_ms,
        avg(abs(backpressured_ms - vertex_avg_backpressured_ms)) as backpressured_mad_ms,
        max(busy_ms) as max_busy_ms,
        min(busy_ms) as min_busy_ms,
        avg(busy_ms) as avg_busy_ms,
        avg(abs(busy_ms - vertex_avg_busy_ms)) as busy_mad_ms,
        max(idle_ms) as max_idle_ms,
        bool_and(is_complete) as is_complete
    from subtasks
    group by job_id, vertex_id, second_start_ms

),

recomputed as (

    select
        job_id,
        vertex_id,
        second_start_ms,
        subtask_count,
        max_backpressured_ms,
        min_backpressured_ms,
        avg_backpressured_ms,
        -- U2: min(mean absolute deviation / mean * 100, 100), 0 when the mean is 0.
        case
            when avg_backpressured_ms = 0 then 0D
            else least(backpressured_mad_ms / avg_backpressured_ms * 100, 100D)
        end as backpressured_skew_pct,
        -- U2: Math.max/Math.min let one NaN subtask (busy time disabled, M5) make the result NaN.
        case when busy_subtask_count = subtask_count then max_busy_ms end as max_busy_ms,
        case when busy_subtask_count = subtask_count then min_busy_ms end as min_busy_ms,
        case when busy_subtask_count = subtask_count then avg_busy_ms end as avg_busy_ms,
        case
            when busy_subtask_count < subtask_count then null
            when avg_busy_ms = 0 then 0D
            else least(busy_mad_ms / avg_busy_ms * 100, 100D)
        end as busy_skew_pct,
        max_idle_ms,
        max_backpressured_ms / 1000 as max_backpressure_ratio,
        -- B7: the vertex level is the level of the max over subtasks, not of the average.
        {{ tidemark_backpressure_level('max_backpressured_ms / 1000') }} as backpressure_level,
        -- U3: "Backpressured (max)" and "Busy (max)" as the web UI shows them; NULL is N/A.
        {{ tidemark_ui_percent('max_backpressured_ms') }} as backpressured_pct,
        case
            when busy_subtask_count = subtask_count
                then {{ tidemark_ui_percent('max_busy_ms') }}
        end as busy_pct,
        is_complete,
        {{ tidemark_hour_at('second_start_ms') }} as hour_at,
        {{ tidemark_minute_slice('second_start_ms') }} as minute_slice
    from aggregated

),

final as (

-- A dirty vertex's seconds from its earliest replayed one are replaced; a build from
-- scratch reads all of fct_subtask_seconds, so it needs no full plan.
    {{ tidemark_incremental_tail(
        replaced='dirty_vertices',
        since='kept.second_start_ms >= replaced.recompute_from_ms',
        keys=['job_id', 'vertex_id'],
        plan=none,
        replaced_from='min(recompute_from_ms)',
    ) }}

)

select * from final
