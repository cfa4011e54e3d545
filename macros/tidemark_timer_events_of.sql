{#-
    The staged timer events (stg_bronze__timer_events, with the gauge each drives) of the tasks in
    `tasks` (a relation with job_id, vertex_id, subtask_index, attempt). Bronze holds each identity
    once (decision 0011), so a model that needs a few tasks' events filters them here, before any
    sort.
-#}
{% macro tidemark_timer_events_of(tasks) %}
    select staged.*
    from {{ ref('stg_bronze__timer_events') }} as staged
    left semi join {{ tasks }} as tasks
        on
            staged.job_id = tasks.job_id
            and staged.vertex_id = tasks.vertex_id
            and staged.subtask_index = tasks.subtask_index
            and staged.attempt = tasks.attempt
{% endmacro %}
