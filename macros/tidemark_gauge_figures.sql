{#-
    The figures Flink derives from a task's three TimerGauge values, as select-list items, the one
    place every gauge mart takes them from: M3 back-pressured = soft + hard, not clamped (up to
    2000); M4/M5 busy = 1000 - min(idle + soft + hard, 1000), NaN in Flink (NULL here) when busy
    time is disabled; B5 the back pressure ratio, back-pressured / 1000; B6 its level.
    `back_pressured` and `busy` name the first two columns (the marts' contract names differ).
-#}
{% macro tidemark_gauge_figures(idle, soft, hard, is_busy_time_enabled, back_pressured, busy) -%}
    {%- set back_pressured_sql = '(' ~ soft ~ ') + (' ~ hard ~ ')' -%}
        -- M3: soft + hard, not clamped.
        {{ back_pressured_sql }} as {{ back_pressured }},
        -- M4/M5: NaN in Flink where busy time is disabled (legacy sources): NULL here.
        case
            when {{ is_busy_time_enabled }}
                then 1000D - least(({{ idle }}) + {{ back_pressured_sql }}, 1000)
        end as {{ busy }},
        -- B5/B6: what the back pressure REST handler derives from the value.
        ({{ back_pressured_sql }}) / 1000 as backpressure_ratio,
        {{ tidemark_backpressure_level('(' ~ back_pressured_sql ~ ') / 1000') }} as backpressure_level
{%- endmacro %}
