{#-
    The rows an incremental run writes with insert_overwrite of (job_id, hour_at) partitions:
    `recomputed`, plus the rows of `existing` (default: this model's table) in the partitions the
    run touches that `replaced` does not replace. A row of `existing` is replaced when it matches a
    row of `replaced` on `keys` and satisfies `since`, if given (SQL over the aliases `kept` and `replaced`,
    e.g. "kept.second_start_ms >= replaced.replay_from_second_ms"). Touched partitions are those of
    the relations in `touched` (default: `recomputed`). Both sides select `columns` by name: Spark
    moves partition columns to the end of a table, so `select *` would not line up.
-#}
{% macro tidemark_rows_to_write(recomputed, replaced, keys, since=none, existing=none, touched=none, columns=[]) -%}
    select {{ columns | join(', ') }}
    from {{ recomputed }}
    union all
    select kept.{{ columns | join(', kept.') }}
    from {{ existing or this }} as kept
    left semi join (
        {%- for relation in touched or [recomputed] %}
        select job_id, hour_at from {{ relation }}{{ ' union' if not loop.last }}
        {%- endfor %}
    ) as touched
        on kept.job_id = touched.job_id and kept.hour_at = touched.hour_at
    left anti join {{ replaced }} as replaced
        on
            {%- for key in keys %}
            {{ 'and ' if not loop.first }}kept.{{ key }} = replaced.{{ key }}
            {%- endfor %}
            {{ 'and ' ~ since if since }}
{%- endmacro %}
