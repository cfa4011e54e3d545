{#-
    The start of the `unit_ms`-long epoch interval holding `ms`: ms - pmod(ms, unit_ms). Unlike
    integer division this floors negative timestamps too (-1 -> -1000 for seconds).
-#}
{% macro tidemark_floor_ms(ms, unit_ms) -%}
    (({{ ms }}) - pmod(({{ ms }}), {{ unit_ms }}))
{%- endmacro %}
