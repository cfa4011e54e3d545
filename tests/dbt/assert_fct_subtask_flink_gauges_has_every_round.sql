-- Contract §4: every task without captured rounds has one row per epoch multiple of 5000 ms from
-- the first at or after its smallest ts_ms through its horizon. Returns the tasks that do not.
-- Past the task marts' retention (tidemark maintain), from their cutoff on, a multiple of 5000 ms
-- (a day's start): a task that ran across it keeps its rounds from there (decision 0019).
with

all_planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

{{ tidemark_tasks_within_retention('all_planned', ref('fct_subtask_flink_gauges'), 'update_ms') }},

flink_gauges as (

    select * from mart_rows
    where round_source = 'epoch'

),

captured_tasks as (

    select distinct
        job_id,
        vertex_id,
        subtask_index,
        attempt
    from mart_rows
    where round_source = 'captured'

),

expected_rounds as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        planned.first_ts_ms + pmod(-planned.first_ts_ms, 5000) as first_update_ms,
        planned.horizon_ms - pmod(planned.horizon_ms, 5000) as last_update_ms
    from planned
    left anti join captured_tasks using (job_id, vertex_id, subtask_index, attempt)

),

published_rounds as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        min(update_ms) as first_update_ms,
        max(update_ms) as last_update_ms,
        count(*) as round_count
    from flink_gauges
    group by job_id, vertex_id, subtask_index, attempt

),

final as (

    select
        expected_rounds.*,
        published_rounds.first_update_ms as published_first_update_ms,
        published_rounds.last_update_ms as published_last_update_ms,
        published_rounds.round_count
    from expected_rounds
    full outer join published_rounds
        on
            expected_rounds.job_id = published_rounds.job_id
            and expected_rounds.vertex_id = published_rounds.vertex_id
            and expected_rounds.subtask_index = published_rounds.subtask_index
            and expected_rounds.attempt = published_rounds.attempt
    where
        -- A task whose horizon comes before its first round has no rounds.
        (
            published_rounds.job_id is null
            and expected_rounds.first_update_ms <= expected_rounds.last_update_ms
        )
        or expected_rounds.job_id is null
        or published_rounds.first_update_ms != expected_rounds.first_update_ms
        or published_rounds.last_update_ms != expected_rounds.last_update_ms
        or published_rounds.round_count
        != (published_rounds.last_update_ms - published_rounds.first_update_ms) div 5000 + 1

)

select * from final
