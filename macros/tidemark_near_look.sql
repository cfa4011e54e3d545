{#-
    For a read with no time bound (the seed of fct_task_watermarks, the change in force of
    fct_watermark_seconds): where to look. Returns {'from_ms': SQL, 'far': bool, 'far_runs': SQL}.
    The read looks in the partitions of `relation` from `from_ms` (the aggregate `near_from` over
    `runs_sql`), and needs a second look, over the older partitions, only when a task of `runs_sql`
    that is a `candidate` has no row there that is `found` (SQL over the aliases `runs` and `t`).
    Asked once while compiling, so that a run with none (the usual one) plans no second look and no
    join to decide it, and prunes partitions by a literal. In a unit test (`this` is a string) it
    returns the runtime form: `from_ms` a scalar subquery over the model's CTE `runs`, and a second
    look that a broadcast of no tasks leaves unread. `far_runs` selects the tasks of the model's CTE
    `runs` that need the second look: the same question, asked in the run.
-#}
{% macro tidemark_near_look(runs_sql, near_from, relation, found, candidate) -%}
    {%- set unfound -%}
        select runs.* from runs
        left anti join {{ relation }} as t
            on {{ tidemark_same_task('t', 'runs') }} and {{ found }}
            and {{ tidemark_partitions_from('t', 'select ' ~ near_from ~ ' from runs') }}
        where {{ candidate }}
    {%- endset -%}
    {%- if not execute or this is string -%}
        {{- return({'from_ms': '(select ' ~ near_from ~ ' from runs)', 'far': true, 'far_runs': unfound}) -}}
    {%- endif -%}
    {%- set answer = run_query(
        'with runs as (' ~ runs_sql ~ ') select (select ' ~ near_from ~ ' from runs) as from_ms, '
        ~ '(select count(*) from (' ~ unfound ~ ')) as far_tasks'
    ) -%}
    {%- set from_ms = answer.columns[0].values()[0] -%}
    {{- return({
        'from_ms': 'cast(null as bigint)' if from_ms is none else 'cast(' ~ (from_ms | int) ~ ' as bigint)',
        'far': (answer.columns[1].values()[0] | int) > 0,
        'far_runs': unfound,
    }) -}}
{%- endmacro %}
