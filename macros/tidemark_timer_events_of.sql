{#-
    The timer events of the tasks in `tasks` (a relation with job_id, vertex_id, subtask_index,
    attempt), read from bronze and deduplicated as staging does (first landed row per identity):
    staging's window over all of bronze cannot be restricted to a few tasks, this one can.
-#}
{% macro tidemark_timer_events_of(tasks) %}
    select ranked.*
    from (
        select
            bronze.*,
            row_number() over (
                partition by bronze.job_id, bronze.vertex_id, bronze.subtask_index, bronze.attempt,
                    bronze.seq
                order by bronze.ingest_id, bronze.line_number
            ) as identity_rank
        from {{ source('bronze', 'timer_events') }} as bronze
        left semi join {{ tasks }} as tasks
            on
                bronze.job_id = tasks.job_id
                and bronze.vertex_id = tasks.vertex_id
                and bronze.subtask_index = tasks.subtask_index
                and bronze.attempt = tasks.attempt
    ) as ranked
    where ranked.identity_rank = 1
{% endmacro %}
