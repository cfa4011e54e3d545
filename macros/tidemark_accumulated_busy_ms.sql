{#-
    M7: Flink's accumulated busy time at a round, the time since markTaskStart less the
    accumulated idle and back-pressured time (T9), never below 0; NaN in Flink (NULL here) when
    busy time is disabled (M5). Events do not carry markTaskStart: the task's first event stands
    for it. The one place the epoch rounds and the captured rounds take it from.
-#}
{% macro tidemark_accumulated_busy_ms(
    update_ms, first_ts_ms, accumulated_idle_ms, accumulated_back_pressured_ms,
    is_busy_time_enabled
) -%}
    case
        when {{ is_busy_time_enabled }}
            then cast(
                greatest(
                    {{ update_ms }} - {{ first_ts_ms }} - ({{ accumulated_idle_ms }})
                    - ({{ accumulated_back_pressured_ms }}),
                    0
                ) as double
            )
    end
{%- endmacro %}
