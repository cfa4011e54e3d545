{#- Generic data test: fails for every row where `expression` is not true (false or NULL). -#}
{% test tidemark_expression_is_true(model, expression) %}

select *
from {{ model }}
where not coalesce({{ expression }}, false)

{% endtest %}
