{#-
    True for the (hour_at, minute_slice) partitions of `relation` (an alias) that can hold a row at
    or after epoch milliseconds `from_ms` (a partition whose slice ends after it), NULL-safe:
    `from_ms` NULL keeps every partition. It reads partition columns only, so Spark prunes the
    partitions before reading, also when `from_ms` is a scalar subquery (evaluated first). An
    incremental model reads its own or an upstream table's recent partitions this way instead of
    all its history (docs/decisions/0004-gauge-incremental.md).
-#}
{% macro tidemark_partitions_from(relation, from_ms) -%}
    coalesce(
        unix_millis({{ relation }}.hour_at) + {{ relation }}.minute_slice * 60000 + 600000
        > ({{ from_ms }}),
        true
    )
{%- endmacro %}
