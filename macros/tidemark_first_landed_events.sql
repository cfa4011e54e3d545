{#-
    The rows of `relation` (task events) with the first landed row of each event identity
    (job_id, vertex_id, subtask_index, attempt, seq; contract §1), first by ingest_id, then by line.
-#}
{% macro tidemark_first_landed_events(relation) %}
    select ranked.*
    from (
        select
            events.*,
            row_number() over (
                partition by
                    events.job_id,
                    events.vertex_id,
                    events.subtask_index,
                    events.attempt,
                    events.seq
                order by events.ingest_id, events.line_number
            ) as identity_rank
        from {{ relation }} as events
    ) as ranked
    where ranked.identity_rank = 1
{% endmacro %}
