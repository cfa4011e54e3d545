{#-
    The first epoch round (V1, V4) a changed task of `planned` (int_timer_tasks_planned) has
    recomputed: its first round when it is replayed from its first event, else the first round
    whose slot (T4, T10: the time since the round before) holds a replayed second.
-#}
{% macro tidemark_epoch_recompute_from_ms(planned) -%}
    case
        when {{ planned }}.is_replayed_from_start
            then {{ planned }}.first_ts_ms + pmod(-{{ planned }}.first_ts_ms, 5000)
        else greatest(
            {{ planned }}.first_ts_ms + pmod(-{{ planned }}.first_ts_ms, 5000),
            {{ tidemark_floor_ms(planned ~ '.recompute_from_ms', 5000) }} + 5000
        )
    end
{%- endmacro %}
