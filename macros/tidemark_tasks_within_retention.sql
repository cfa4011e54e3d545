{#-
    Three CTEs for a singular test that compares a task mart with the gauge plan past the task
    marts' retention (decision 0019): `cutoff`, the plan's task_marts_cutoff_ms (the earliest
    long where tidemark maintain never ran), and `planned`, the plan's tasks whose horizon is at
    or after it, each from the later of its first ts_ms and the cutoff. `mart_rows` is the
    mart's rows from the cutoff on (`time_column` at or after it): rows before it are about to be
    expired (a maintenance cut short). `planned_relation` is the test's import CTE of the plan.
-#}
{% macro tidemark_tasks_within_retention(planned_relation, mart, time_column) -%}
cutoff as (

    select coalesce(max(task_marts_cutoff_ms), -9223372036854775808) as cutoff_ms
    from {{ planned_relation }}

),

planned as (

    select
        {{ planned_relation }}.job_id,
        {{ planned_relation }}.vertex_id,
        {{ planned_relation }}.subtask_index,
        {{ planned_relation }}.attempt,
        {{ planned_relation }}.horizon_ms,
        greatest({{ planned_relation }}.first_ts_ms, cutoff.cutoff_ms) as first_ts_ms
    from {{ planned_relation }}
    cross join cutoff
    where {{ planned_relation }}.horizon_ms >= cutoff.cutoff_ms

),

mart_rows as (

    select mart.*
    from {{ mart }} as mart
    cross join cutoff
    where mart.{{ time_column }} >= cutoff.cutoff_ms

)
{%- endmacro %}
