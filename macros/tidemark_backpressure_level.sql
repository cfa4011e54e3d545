{#-
    B6: Flink's back pressure level of a ratio. `ok` if ratio <= 0.10, `low` if <= 0.5, else `high`;
    both bounds belong to the lower level (100/1000 is exactly the double 0.1). NaN fails both
    comparisons and gives `high` in Flink; SQL NULL does the same here.
-#}
{% macro tidemark_backpressure_level(ratio) -%}
    case
        when ({{ ratio }}) <= 0.1 then 'ok'
        when ({{ ratio }}) <= 0.5 then 'low'
        else 'high'
    end
{%- endmacro %}
