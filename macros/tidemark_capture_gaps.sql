{#-
    Exactness against capture gaps (int_capture_gaps_spanned: per task, the merged time ranges
    where the capture lost timer events), shared by the marts that mark rows `is_exact`.

    tidemark_gaps_by_task(ranges): one row per task with its ranges as one array `gaps`, so a
    mart joins it on the task alone and reads each of its own rows once (a range join followed
    by a join back read them twice, and Spark computes a CTE again for each reader).

    tidemark_is_exact(task_gaps, from_ms, to_ms): true unless [from_ms, to_ms) overlaps one of
    the task's ranges; `task_gaps` is the alias of the left-joined tidemark_gaps_by_task rows
    (NULL for a task without gaps: exact).
-#}
{% macro tidemark_gaps_by_task(ranges) -%}
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        collect_list(struct(not_exact_from_ms, not_exact_to_ms)) as gaps
    from {{ ranges }}
    group by job_id, vertex_id, subtask_index, attempt
{%- endmacro %}

{% macro tidemark_is_exact(task_gaps, from_ms, to_ms) -%}
    not coalesce(
        exists(
            {{ task_gaps }}.gaps,
            gap -> gap.not_exact_from_ms < {{ to_ms }} and gap.not_exact_to_ms > {{ from_ms }}
        ),
        false
    )
{%- endmacro %}
