{#-
    The ten-minute slice of its UTC hour that holds epoch milliseconds `ms`, as the slice's first
    minute (0, 10, ..., 50): the partition column `minute_slice` under `hour_at` of the
    incremental models. An incremental run rewrites whole partitions, so the slice bounds what a
    run rewrites to ten minutes of a job, not an hour (docs/decisions/0004).
-#}
{% macro tidemark_minute_slice(ms) -%}
    cast(pmod(({{ ms }}), 3600000) div 600000 * 10 as int)
{%- endmacro %}
