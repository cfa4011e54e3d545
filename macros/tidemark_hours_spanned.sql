{#-
    The `hour_at` values of every hour that the interval [start_ms, end_ms) touches, as an array
    to explode. Joining on them as well as on the interval turns a range join (every row of a
    job against every interval) into an equi-join on the marts' partition columns.
-#}
{% macro tidemark_hours_spanned(start_ms, end_ms) -%}
    sequence(
        {{ tidemark_hour_at(start_ms) }},
        {{ tidemark_hour_at('(' ~ end_ms ~ ') - 1') }},
        interval 1 hour
    )
{%- endmacro %}
