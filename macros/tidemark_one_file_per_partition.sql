{#-
    `sql` with its rows gathered by the model's partition columns (config `partition_by`), so
    that a write makes one file per partition instead of one per Spark task that holds rows of
    it: a partition republished every cycle never gathers small files (docs/decisions/0019).
    `sql` as it is for a model without partitions.
-#}
{% macro tidemark_one_file_per_partition(sql) -%}
    {%- set columns = config.get('partition_by') -%}
    {%- if columns is string -%}
        {%- set columns = [columns] -%}
    {%- endif -%}
    {%- if columns -%}
        select * from (
            {{ sql }}
        ) distribute by {{ columns | join(', ') }}
    {%- else -%}
        {{ sql }}
    {%- endif -%}
{%- endmacro %}
