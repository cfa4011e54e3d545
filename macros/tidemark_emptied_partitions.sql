{#-
    The partitions of an incremental watermark mart that a run empties, as partition specs
    (`job_id = '...', hour_at = timestamp'...', minute_slice = N`), for tidemark_publish (model
    config `emptied_partitions`: this macro's arguments). A run publishes only the partitions its
    rows land in, so a partition whose rows were all replaced by nothing would keep them. Before
    the publish, a row of a fed task after its resume point that this run does not write again is
    such a stale row, and a partition holding one that the run does not rewrite holds nothing
    else. `keys` are the mart's key columns after the task's four, `time_column` the column of
    int_valve_outputs_computed that places a row in its partition, `where` the filter on
    int_valve_outputs_computed that gives the mart's rows, and `sources` maps a key to its
    column there when the names differ. A stale row lies at or after its task's recompute_from_ms (its
    event was fed again), so only the partitions from the earliest of those are read.
-#}
{% macro tidemark_emptied_partitions(keys, time_column, where, sources={}) -%}
    {%- set task = ['job_id', 'vertex_id', 'subtask_index', 'attempt'] -%}
    {%- set emptied -%}
        select distinct
            concat(
                "job_id = '", replace(existing.job_id, "'", "\\'"),
                "', hour_at = timestamp'", date_format(existing.hour_at, 'yyyy-MM-dd HH:mm:ss'),
                "', minute_slice = ", existing.minute_slice
            ) as partition_spec
        from {{ this }} as existing
        inner join (
            select {{ task | join(', ') }}, resumed_after_seq
            from {{ ref('int_valve_outputs_computed') }}
            where row_kind = 'state'
        ) as runs
            on
                {%- for key in task %}
                {{ 'and ' if not loop.first }}existing.{{ key }} = runs.{{ key }}
                {%- endfor %}
        left anti join (
            select
                {%- for key in task + keys %}
                {{ sources.get(key, key) }} as {{ key }},
                {%- endfor %}
                {{ tidemark_hour_at(time_column) }} as hour_at,
                {{ tidemark_minute_slice(time_column) }} as minute_slice
            from {{ ref('int_valve_outputs_computed') }}
            where {{ where }}
        ) as fresh
            on
                {%- for key in task + keys + ['hour_at', 'minute_slice'] %}
                {{ 'and ' if not loop.first }}existing.{{ key }} = fresh.{{ key }}
                {%- endfor %}
        where
            existing.seq > runs.resumed_after_seq
            and {{ tidemark_partitions_from(
                'existing',
                '(select min(recompute_from_ms) from ' ~ ref('int_valve_outputs_computed')
                ~ " where row_kind = 'state')"
            ) }}
    {%- endset -%}
    {{ return(emptied) }}
{%- endmacro %}
