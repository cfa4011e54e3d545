{#-
    The bronze timer events of the tasks in `tasks` (a relation with job_id, vertex_id,
    subtask_index, attempt), with the gauge each drives as stg_bronze__timer_events has it
    (Flink <= 1.14's `backpressured` is the soft gauge, M3). Bronze holds each identity once
    (decision 0011), so a model that needs a few tasks' events filters them here, before any sort.
-#}
{% macro tidemark_timer_events_of(tasks) %}
    select
        bronze.*,
        case
            when bronze.timer = 'backpressured' then 'soft_backpressured'
            else bronze.timer
        end as gauge
    from {{ source('bronze', 'timer_events') }} as bronze
    left semi join {{ tasks }} as tasks
        on
            bronze.job_id = tasks.job_id
            and bronze.vertex_id = tasks.vertex_id
            and bronze.subtask_index = tasks.subtask_index
            and bronze.attempt = tasks.attempt
{% endmacro %}
