{#-
    What an event of stg_bronze__watermark_events is for the `tidemark_valve` UDTF, whose input
    arrays hold no NULLs (udfs/spark.py, CODE_*): -1 a watermark (W1-W4), 0 IDLE and 1 ACTIVE
    (S1-S3), 2 a status that is neither, 3 a watermark without its value. The valve refuses 2 and
    3, naming task and seq. The one definition: udfs.spark.valve_input_sql renders it too.
-#}
{% macro tidemark_valve_input_code() -%}
    case
        when event_type = 'watermark' and watermark_ms is not null then -1
        when event_type = 'watermark' then 3
        when status = 'IDLE' then 0
        when status = 'ACTIVE' then 1
        else 2
    end
{%- endmacro %}
