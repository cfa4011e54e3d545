{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
    )
}}
{#-
    Per vertex and second: the minimum watermark over the subtasks that are not idle, and which
    subtasks are idle (the vertex figure a Flink maintainer proposed for the web UI instead of
    the plain minimum, which an idle subtask holds back). Each subtask counts with its newest
    attempt that has a row for the second. Incremental runs recompute each vertex with a fed task
    from that task's first recomputed second on.
-#}

with

valve_outputs as (

    select * from {{ ref('int_valve_outputs_computed') }}

),

watermark_seconds as (

    select * from {{ ref('fct_watermark_seconds') }}

),

{% if is_incremental() %}

runs as (

    -- Per vertex, the first second any of its fed tasks recomputed.
    select
        job_id,
        vertex_id,
        -- As in fct_watermark_seconds.
        min(
            case
                when resumed_effective_ms is null or ts_ms < resumed_first_ms
                    then {{ tidemark_floor_ms('ts_ms', 1000) }}
                else {{ tidemark_floor_ms('resumed_effective_ms', 1000) }}
            end
        ) as recompute_from_ms
    from valve_outputs
    where row_kind = 'state' and effective_ms is not null
    group by job_id, vertex_id

),

subtask_seconds as (

    select watermark_seconds.*
    from watermark_seconds
    inner join runs  -- noqa: AL04
        on
            watermark_seconds.job_id = runs.job_id
            and watermark_seconds.vertex_id = runs.vertex_id
    where
        watermark_seconds.second_start_ms >= runs.recompute_from_ms
        and {{ tidemark_partitions_from(
            'watermark_seconds', '(select min(recompute_from_ms) from runs)'
        ) }}

),

{% else %}

subtask_seconds as (

    select * from watermark_seconds

),

{% endif %}

representative as (

    select *
    from (
        select
            subtask_seconds.*,
            -- B7: per second, each subtask's latest attempt reporting it.
            {{ tidemark_attempt_rank('subtask_seconds', 'second_start_ms') }} as attempt_rank
        from subtask_seconds
    ) as ranked_attempts
    where attempt_rank = 1

),

recomputed as (

    select
        job_id,
        vertex_id,
        second_start_ms,
        -- NULL when a subtask that is not idle has no watermark yet (Flink shows "No Watermark")
        -- or when every subtask is idle.
        case
            when count_if(not is_idle and watermark_ms is null) = 0
                then min(case when not is_idle then watermark_ms end)
        end as watermark_ms,
        count(*) as num_subtasks,
        count_if(is_idle) as num_idle_subtasks,
        sort_array(collect_list(case when is_idle then subtask_index end)) as idle_subtask_indexes,
        count_if(is_stalled) as num_stalled_subtasks,
        min_by(subtask_index, struct(watermark_ms, subtask_index))
        filter (where not is_idle and watermark_ms is not null) as slowest_subtask_index,
        bool_and(is_idle) as is_idle,
        bool_and(is_complete) as is_complete
    from representative
    group by job_id, vertex_id, second_start_ms

),

with_lag as (

    select
        job_id,
        vertex_id,
        second_start_ms,
        watermark_ms,
        second_start_ms + 1000 - watermark_ms as watermark_lag_ms,
        num_subtasks,
        num_idle_subtasks,
        idle_subtask_indexes,
        num_stalled_subtasks,
        slowest_subtask_index,
        is_idle,
        is_complete,
        {{ tidemark_hour_at('second_start_ms') }} as hour_at,
        {{ tidemark_minute_slice('second_start_ms') }} as minute_slice
    from recomputed

),

final as (

-- A vertex's seconds from its recompute_from_ms are replaced, and the partitions that held
-- them rewritten; a build from scratch needs a run that fed every task from its first event.
    {{ tidemark_incremental_tail(
        'with_lag', 'runs', 'kept.second_start_ms >= replaced.recompute_from_ms',
        keys=['job_id', 'vertex_id'], jobs='runs', rewrite_replaced=true,
        plan="valve_outputs where row_kind = 'state'", replaced_from='min(recompute_from_ms)',
    ) }}

)

select * from final
