{#-
    Runs `sql` once, while compiling, into a temporary view `name` of this Spark session, cached
    (Spark's CACHE TABLE ... AS, eager), and returns the name: a model that needs a small result
    of a large scan both while compiling (to choose partitions or files) and in its query reads
    the scan once. The model drops the view in a post-hook (tidemark_drop_cached_view); a view
    left by a failed run is replaced by the next.
-#}
{% macro tidemark_cached_view(name, sql) -%}
    {%- do run_query('drop view if exists ' ~ name) -%}
    {%- do run_query('cache table ' ~ name ~ ' as ' ~ sql) -%}
    {{- return(name) -}}
{%- endmacro %}
