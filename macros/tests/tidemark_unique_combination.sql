{#- Generic data test: no two rows share the values of `columns` (dbt has no built-in for it). -#}
{% test tidemark_unique_combination(model, columns) %}

select
    {{ columns | join(', ') }},
    count(*) as row_count
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1

{% endtest %}
