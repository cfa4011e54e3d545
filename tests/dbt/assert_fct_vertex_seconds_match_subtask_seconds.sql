-- fct_vertex_seconds has exactly the (job, vertex, second) keys of fct_subtask_seconds, with the
-- number of subtasks and the max back pressure over their latest attempts (B7). Returns mismatches.
-- Past the task marts' retention (tidemark maintain), from their cutoff on: the vertex marts keep
-- days before it that the subtask seconds no longer hold (decision 0019).
{#- With data_tests_recent_hours, both marts from the same hour on: the subtask seconds' latest
    hours (a vertex second lies in the hour of its subtask seconds). -#}
{%- set recent = tidemark_recent_hours(ref('fct_subtask_seconds')) %}
{%- set retained = 'second_start_ms >= (select coalesce(max(task_marts_cutoff_ms), '
    ~ '-9223372036854775808) from ' ~ ref('int_timer_tasks_planned') ~ ')' %}
{%- set where_kept = 'where ' ~ ([recent, retained] | select | join(' and ')) %}
with

subtask_seconds as (

    select * from {{ ref('fct_subtask_seconds') }}
    {{ where_kept }}

),

vertex_seconds as (

    select * from {{ ref('fct_vertex_seconds') }}
    {{ where_kept }}

),

latest_attempts as (

    select
        subtask_seconds.*,
        row_number() over (
            partition by
                subtask_seconds.job_id,
                subtask_seconds.vertex_id,
                subtask_seconds.subtask_index,
                subtask_seconds.second_start_ms
            order by subtask_seconds.attempt desc
        ) as attempt_rank
    from subtask_seconds

),

expected as (

    select
        job_id,
        vertex_id,
        second_start_ms,
        count(*) as subtask_count,
        max(backpressured_ms) as max_backpressured_ms
    from latest_attempts
    where attempt_rank = 1
    group by job_id, vertex_id, second_start_ms

),

final as (

    select
        expected.*,
        vertex_seconds.subtask_count as vertex_subtask_count,
        vertex_seconds.max_backpressured_ms as vertex_max_backpressured_ms
    from expected
    full outer join vertex_seconds
        on
            expected.job_id = vertex_seconds.job_id
            and expected.vertex_id = vertex_seconds.vertex_id
            and expected.second_start_ms = vertex_seconds.second_start_ms
    where
        expected.job_id is null
        or vertex_seconds.job_id is null
        or expected.subtask_count != vertex_seconds.subtask_count
        or expected.max_backpressured_ms != vertex_seconds.max_backpressured_ms

)

select * from final
