-- Contract §4: every task has one row per second from the second of its smallest ts_ms through
-- the second of its horizon, no gaps (uniqueness is a generic test). Returns the tasks that do not.
-- Past the task marts' retention (tidemark maintain), from their cutoff on: a task that ran across
-- it keeps its seconds from there, and one that ended before has none (decision 0019).
with

all_planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

{{ tidemark_tasks_within_retention('all_planned', ref('fct_subtask_seconds'), 'second_start_ms') }},

task_spans as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min(second_start_ms) as first_second_ms,
        max(second_start_ms) as last_second_ms,
        count(*) as second_count
    from mart_rows
    group by job_id, vertex_id, subtask_index, attempt

),

final as (

    select
        planned.job_id,
        planned.vertex_id,
        planned.subtask_index,
        planned.attempt,
        planned.first_ts_ms,
        planned.horizon_ms,
        task_spans.first_second_ms,
        task_spans.last_second_ms,
        task_spans.second_count
    from planned
    full outer join task_spans
        on
            planned.job_id = task_spans.job_id
            and planned.vertex_id = task_spans.vertex_id
            and planned.subtask_index = task_spans.subtask_index
            and planned.attempt = task_spans.attempt
    where
        planned.job_id is null
        or task_spans.job_id is null
        or task_spans.first_second_ms != planned.first_ts_ms - pmod(planned.first_ts_ms, 1000)
        or task_spans.last_second_ms != planned.horizon_ms - pmod(planned.horizon_ms, 1000)
        or task_spans.second_count
        != (task_spans.last_second_ms - task_spans.first_second_ms) div 1000 + 1

)

select * from final
