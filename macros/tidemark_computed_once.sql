{#-
    A column that makes the CTE it is selected in computed once per query, however many times the
    query reads the CTE. Spark inlines a deterministic CTE at every reference, so a CTE read three
    times is scanned and aggregated three times; a CTE that is not deterministic and is read more
    than once is planned once, as a shuffle every reference reuses (Spark's InlineCTE and
    ReplaceCTERefWithRepartition). `spark_partition_id()` is such an expression; nothing reads the
    column. Two limits: filters of the references do not reach below it (filter inside the CTE),
    and the CTE must not filter a partitioned table by a join or subquery on a partition column:
    Spark 4.0.1 fails to plan dynamic partition pruning there (SPARK-51692).
-#}
{% macro tidemark_computed_once() -%}
    spark_partition_id() as computed_once
{%- endmacro %}
