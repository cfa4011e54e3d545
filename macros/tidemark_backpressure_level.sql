{#-
    B6: Flink's back pressure level of a ratio. `ok` if ratio <= 0.10, `low` if <= 0.5, else `high`;
    both bounds belong to the lower level (100/1000 is exactly the double 0.1). NaN fails both
    comparisons and gives `high` in Flink; SQL NULL does the same here.
-#}
{% macro tidemark_backpressure_level(ratio) -%}
    case
        when ({{ ratio }}) <= {{ tidemark_backpressure_ok_max() }} then 'ok'
        when ({{ ratio }}) <= {{ tidemark_backpressure_low_max() }} then 'low'
        else 'high'
    end
{%- endmacro %}

{#- B6's bounds, the one place every model reads them from: a ratio up to `ok_max` is `ok`
    (not back-pressured), up to `low_max` `low`. -#}
{% macro tidemark_backpressure_ok_max() %}0.1{% endmacro %}
{% macro tidemark_backpressure_low_max() %}0.5{% endmacro %}
