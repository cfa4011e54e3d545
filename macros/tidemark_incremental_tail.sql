{#-
    The rows an incremental model of the gauge or valve pipeline writes, in both kinds of run.

    Incremental run (insert_overwrite of (job_id, hour_at, minute_slice) partitions): the rows of
    `recomputed`, plus the rows of this model's table in the partitions the run rewrites that `replaced` does
    not replace. A table row is replaced when it matches a row of `replaced` on `keys` and
    satisfies `since`, SQL over the aliases `kept` and `replaced` (none: the keys alone). The run
    rewrites the partitions of `recomputed`, and with `rewrite_replaced` those of the replaced
    rows too, for a model whose recomputation can leave fewer rows than it replaces. `jobs`, a
    relation with job_id, limits the table's rows read to its jobs. `replaced_from`, an aggregate
    over `replaced`, is the earliest epoch ms of any row the run writes or replaces (on the time
    axis of the table's partitions): the table is read from the partitions that can hold such a
    row on, not over its whole history (NULL: every partition). Both sides select the
    same columns in the same order, the table's: the model's columns but the partition columns,
    then those (Spark moves a table's partition columns to its end), so production and unit tests
    (where `this` is a fixture in the model's order) run the same SQL and ask the warehouse
    nothing while compiling. The model's `partition_by` must be those three columns.

    Build from scratch: `recomputed` as it is, checked by `plan` to cover every task from its
    first event, else the build fails saying what to rebuild together. `plan` is the run's plan
    as the model reads it, rows with the planner contract's `is_replayed_from_start`
    (docs/decisions/0004-gauge-incremental.md): the model's `planned` (int_timer_tasks_planned,
    the default), the state rows of its `valve_outputs` (int_valve_outputs_computed, which carry
    int_valve_tasks_planned's), or none for a model that reads whole tables upstream.

    The defaults are a task-level gauge model's: the changed tasks of `planned` replace their
    rows from the second their replay starts.
-#}
{% macro tidemark_incremental_tail(
    recomputed='recomputed',
    replaced='planned',
    since='replaced.is_changed and kept.second_start_ms >= replaced.recompute_from_ms',
    keys=['job_id', 'vertex_id', 'subtask_index', 'attempt'],
    jobs=none,
    rewrite_replaced=false,
    plan='planned',
    replaced_from='min(recompute_from_ms)'
) -%}
{%- if is_incremental() -%}
    {%- set partitions = ['job_id', 'hour_at', 'minute_slice'] -%}
    {%- if config.get('partition_by') not in [none, partitions] -%}
        {#- none: a unit test, whose node has no partition_by -#}
        {{ exceptions.raise_compiler_error(
            'tidemark_incremental_tail writes (job_id, hour_at, minute_slice) partitions, not '
            ~ config.get('partition_by')
        ) }}
    {%- endif -%}
    {%- set conditions = [] -%}
    {%- for key in keys -%}
        {%- do conditions.append('kept.' ~ key ~ ' = replaced.' ~ key) -%}
    {%- endfor -%}
    {%- do conditions.append('(' ~ since ~ ')') if since -%}
    {%- set is_replaced = conditions | join('\n            and ') -%}
    {%- set filters = [
        tidemark_partitions_from('kept', '(select ' ~ replaced_from ~ ' from ' ~ replaced ~ ')')
    ] -%}
    {%- do filters.append('kept.job_id in (select job_id from ' ~ jobs ~ ')') if jobs -%}
    {%- set kept_filter = 'where ' ~ filters | join('\n        and ') -%}

    select * except (job_id, hour_at, minute_slice), job_id, hour_at, minute_slice
    from {{ recomputed }}
    union all
    select
        kept.* except (kept.job_id, kept.hour_at, kept.minute_slice),
        kept.job_id,
        kept.hour_at,
        kept.minute_slice
    from {{ this }} as kept
    left semi join (
        select job_id, hour_at, minute_slice from {{ recomputed }}
        {%- if rewrite_replaced %}
        union
        select kept.job_id, kept.hour_at, kept.minute_slice
        from {{ this }} as kept
        left semi join {{ replaced }} as replaced
            on
            {{ is_replaced }}
        {{ kept_filter }}
        {%- endif %}
    ) as touched
        on
            kept.job_id = touched.job_id
            and kept.hour_at = touched.hour_at
            and kept.minute_slice = touched.minute_slice
    left anti join {{ replaced }} as replaced
        on
            {{ is_replaced }}
    {{ kept_filter }}
{%- else -%}
    select * from {{ recomputed }}
    {%- if plan %}
    where (
        select assert_true(
            coalesce(bool_and(is_replayed_from_start), true),
            '{{ model.name }} is being rebuilt, but this run replays only part of the tasks: '
            || 'rebuild it with its plan, dbt build --full-refresh --select '
            || 'int_timer_events_landed+ (the gauge models) or dbt build --full-refresh '
            || '--select int_valve_tasks_planned+ (the watermark models)'
        )
        from {{ plan }}
    ) is null
    {%- endif %}
{%- endif -%}
{%- endmacro %}
