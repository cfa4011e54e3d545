{#-
    Generic data test (E3, C4): within each `partition_by` group, in `order_by` order, the non-NULL
    values of `column` increase: strictly (`strict`, a valve's emitted watermarks) or never go
    down (a clock's running watermark). Fails for every row below (or equal to) the one before.
-#}
{% test tidemark_watermarks_increase(model, partition_by, order_by, column='watermark_ms', strict=true) %}

with

ordered as (

    select
        {{ partition_by | join(', ') }},
        {{ order_by | join(', ') }},
        {{ column }} as value,
        lag({{ column }}) over (
            partition by {{ partition_by | join(', ') }}
            order by {{ order_by | join(', ') }}
        ) as previous_value
    from {{ model }}
    where {{ column }} is not null

)

select *
from ordered
where value {{ '<=' if strict else '<' }} previous_value

{% endtest %}
