{#-
    The UTC hour holding epoch milliseconds `ms`, as a timestamp: the partition column `hour_at` of
    the gauge marts (BI tools filter by job and time range; see docs/decisions/0004).
-#}
{% macro tidemark_hour_at(ms) -%}
    timestamp_millis({{ tidemark_floor_ms(ms, 3600000) }})
{%- endmacro %}
