{#- Generic data test: none of `columns` is NULL in any row. One query for all of a model's
    columns, where dbt's `not_null` runs one per column (a build ran 103 of them, a third of its
    test time); each failing row says which columns are NULL. -#}
{% test tidemark_not_null(model, columns) %}

select
    filter(
        array(
            {%- for column in columns %}
            case when {{ column }} is null then '{{ column }}' end{{ ',' if not loop.last }}
            {%- endfor %}
        ),
        name -> name is not null
    ) as null_columns,
    *
from {{ model }}
where
    {%- for column in columns %}
    {{ 'or ' if not loop.first }}{{ column }} is null
    {%- endfor %}

{% endtest %}
