{#-
    For a read with no time bound (the seed of fct_task_watermarks, the change in force of
    fct_watermark_seconds): where to look. The read looks in the partitions of `relation` from
    `near_from` (an aggregate over the model's CTE `runs`, whose rows `runs_sql` selects), and
    needs a second look, over the older partitions, only for the tasks of `runs` that
    tidemark_far_runs selects. Asked once while compiling, so that a run with none (the usual
    one) plans no second look and no join to decide it, and prunes partitions by a literal.
    Returns the answer as data, {'from_ms': epoch ms or none, 'far': bool}; the model writes its
    SQL from it, so a unit test gives the answer (`overrides: macros:`) and runs the SQL a run
    with that answer runs.
-#}
{% macro tidemark_near_look(runs_sql, near_from, relation, found, candidate) -%}
    {%- if not execute -%}
        {{- return({'from_ms': none, 'far': true}) -}}
    {%- endif -%}
    {%- set answer = run_query(
        'with runs as (' ~ runs_sql ~ ') select (select ' ~ near_from ~ ' from runs) as from_ms, '
        ~ '(select count(*) from ('
        ~ tidemark_far_runs('select ' ~ near_from ~ ' from runs', relation, found, candidate)
        ~ ')) as far_tasks'
    ) -%}
    {%- set from_ms = answer.columns[0].values()[0] -%}
    {{- return({
        'from_ms': none if from_ms is none else from_ms | int,
        'far': (answer.columns[1].values()[0] | int) > 0,
    }) -}}
{%- endmacro %}

{#-
    The tasks of the model's CTE `runs` that need the second look of tidemark_near_look: those
    that are a `candidate` and have no row of `relation` that is `found` (SQL over the aliases
    `runs` and `t`) in its partitions from `from_ms` (SQL) on.
-#}
{% macro tidemark_far_runs(from_ms, relation, found, candidate) -%}
    select runs.* from runs
    left anti join {{ relation }} as t
        on {{ tidemark_same_task('t', 'runs') }} and {{ found }}
        and {{ tidemark_partitions_from('t', from_ms) }}
    where {{ candidate }}
{%- endmacro %}

{#-
    The looks tidemark_near_look answered, as the model's CTEs: `far_runs` (when a task needs the
    second look), `near_<name>` and `far_<name>` (the caller's select, once per look) and `<name>`,
    their union. The caller is given the tasks to join (`runs` or `far_runs`), its look's
    partition filter over `alias` and the far look's broadcast hint. The model writes the comma
    after it.
-#}
{% macro tidemark_near_and_far(name, look_up, near_from_ms, relation, alias, found, candidate) -%}
{%- if look_up.far %}
far_runs as (

    {{ tidemark_far_runs(near_from_ms, relation, found, candidate) }}

),
{%- endif %}
{%- for look in (['near', 'far'] if look_up.far else ['near']) %}

{{ look }}_{{ name }} as (

    {%- if look == 'far' %}
    -- The tasks are few (mostly none) and broadcast: none leaves the table unread.
    {%- endif %}
    {{ caller(
        'runs' if look == 'near' else 'far_runs',
        ('not ' if look == 'far' else '') ~ tidemark_partitions_from(alias, near_from_ms),
        '/*+ broadcast(far_runs) */' if look == 'far' else ''
    ) }}

),
{%- endfor %}

{{ name }} as (

    select * from near_{{ name }}
    {%- if look_up.far %}
    union all
    select * from far_{{ name }}
    {%- endif %}

)
{%- endmacro %}
