{#-
    1 for the attempt of a subtask that counts at an instant, the latest one reporting it: B7's
    representative attempt of a second (1.16+, speculative execution), B3's current attempt of a
    sampling. `relation` is an alias with job_id, vertex_id, subtask_index and attempt, `instant`
    its column of the instant (second_start_ms, sampling_start_ms).
-#}
{% macro tidemark_attempt_rank(relation, instant) -%}
    row_number() over (
        partition by
            {{ relation }}.job_id,
            {{ relation }}.vertex_id,
            {{ relation }}.subtask_index,
            {{ relation }}.{{ instant }}
        order by {{ relation }}.attempt desc
    )
{%- endmacro %}
