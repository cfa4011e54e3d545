{#-
    The join condition of two relations on one task attempt: the four columns that name it
    (contract §1: job_id, vertex_id, subtask_index, attempt), `left` and `right` being aliases.
-#}
{% macro tidemark_same_task(left, right) -%}
    {{ left }}.job_id = {{ right }}.job_id
    and {{ left }}.vertex_id = {{ right }}.vertex_id
    and {{ left }}.subtask_index = {{ right }}.subtask_index
    and {{ left }}.attempt = {{ right }}.attempt
{%- endmacro %}
