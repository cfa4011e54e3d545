{#-
    T5: the number of 5-second slots in a TimerGauge's ring for the span `flink_gauge_window_s`
    (default 60). The effective span is max(s - rem(s, 5), 5), rem with the sign of s as Java's `%`
    (7 -> 5, 3 -> 5, 0 -> 5, -3 -> 5, 12 -> 10, 61 -> 60), and the ring holds span / 5 slots.
-#}
{% macro tidemark_gauge_window_slots() -%}
    {%- set span_s = var('flink_gauge_window_s', 60) | int -%}
    {%- set rem = span_s - 5 * ((span_s / 5) | int) -%}
    {%- set effective = [span_s - rem, 5] | max -%}
    {{- (effective // 5) | int -}}
{%- endmacro %}
