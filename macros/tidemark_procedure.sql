{#-
    The name to CALL one of tidemark's Spark procedures by (src/tidemark/spark/java/, registered
    as the catalog `tidemark_system` by tidemark's session factory).
-#}
{% macro tidemark_procedure(name) -%}
    tidemark_system.marts.{{ name }}
{%- endmacro %}
