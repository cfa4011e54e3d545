{#-
    The bronze timer events of the tasks in `tasks` (a relation with job_id, vertex_id,
    subtask_index, attempt). Bronze holds each identity once (decision 0011), so this is the filter
    alone; a model that needs a few tasks' events reads them here, before any sort.
-#}
{% macro tidemark_timer_events_of(tasks) %}
    select bronze.*
    from {{ source('bronze', 'timer_events') }} as bronze
    left semi join {{ tasks }} as tasks
        on
            bronze.job_id = tasks.job_id
            and bronze.vertex_id = tasks.vertex_id
            and bronze.subtask_index = tasks.subtask_index
            and bronze.attempt = tasks.attempt
{% endmacro %}
