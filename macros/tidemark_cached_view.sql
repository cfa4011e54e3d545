{#-
    Runs `sql` once, while compiling, into a temporary view `name` of this Spark session, cached
    (Spark's CACHE TABLE ... AS, eager), and returns the name: a model that needs a small result
    of a large scan both while compiling (to choose partitions or files) and in its query reads
    the scan once. The model drops the view in a post-hook (`drop view if exists`); a view left
    by a failed run is replaced by the next. Where Spark could compute a CTE once within a query
    (a non-deterministic CTE read twice becomes one shuffle), a compile-time question cannot
    share it, and a scalar subquery over such a CTE failed to plan on Spark 4.0.1
    (ReplaceCTERefWithRepartition): hence a view.
-#}
{% macro tidemark_cached_view(name, sql) -%}
    {%- do run_query('drop view if exists ' ~ name) -%}
    {%- do run_query('cache table ' ~ name ~ ' as ' ~ sql) -%}
    {{- return(name) -}}
{%- endmacro %}
