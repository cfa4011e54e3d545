{#-
    U3: the percentage Flink's web UI shows for a "...TimeMsPerSecond" value:
    min(Math.round(value / 10), 100). JavaScript's Math.round rounds halves up (floor(x + 0.5)),
    unlike Spark's round (half away from zero, same here for x >= 0) and Python's (half to even).
    NULL (Flink's NaN, shown as N/A) stays NULL.
-#}
{% macro tidemark_ui_percent(value_ms) -%}
    cast(least(floor(({{ value_ms }}) / 10.0 + 0.5), 100) as int)
{%- endmacro %}
