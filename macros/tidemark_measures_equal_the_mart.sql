{#-
    A singular test's query: a metric view's measures by `keys`, against plain SQL over the mart
    the view reads (decision 0016). Returns the groups where any differs, each with both sides
    (`<measure>` from the mart, `view_<measure>` from the view). A measure listed in
    `tolerances` may differ by that much (a mean's rounding); the others must be equal, NULL
    matching NULL. Over the latest `data_tests_recent_hours` hours when `recent` (the mart is
    partitioned by hour), as the generic tests read.
-#}
{% macro tidemark_measures_equal_the_mart(mart, view, keys, measures, tolerances={}, recent=false) -%}
    {%- set window = tidemark_recent_hours(mart) if recent else none -%}
with

from_mart as (

    select
        {{ keys | join(',\n        ') }},
        {%- for name, aggregate in measures.items() %}
        {{ aggregate }} as {{ name }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ mart }}
    {%- if window %}
    where {{ window }}
    {%- endif %}
    group by {{ keys | join(', ') }}

),

from_view as (

    select
        {{ keys | join(',\n        ') }},
        {%- for name in measures %}
        measure({{ name }}) as {{ name }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ view }}
    {%- if window %}
    where {{ window }}
    {%- endif %}
    group by {{ keys | join(', ') }}

)

select
    {%- for key in keys %}
    coalesce(from_mart.{{ key }}, from_view.{{ key }}) as {{ key }},
    {%- endfor %}
    {%- for name in measures %}
    from_mart.{{ name }},
    from_view.{{ name }} as view_{{ name }}{{ ',' if not loop.last }}
    {%- endfor %}
from from_mart
full outer join from_view
    on
        {%- for key in keys %}
        {{ 'and ' if not loop.first }}from_mart.{{ key }} = from_view.{{ key }}
        {%- endfor %}
where not (
    {%- for name in measures %}
    {{ 'and ' if not loop.first }}
    {%- if name in tolerances -%}
    coalesce(
        abs(from_mart.{{ name }} - from_view.{{ name }}) <= {{ tolerances[name] }},
        from_mart.{{ name }} is null and from_view.{{ name }} is null
    )
    {%- else -%}
    from_mart.{{ name }} <=> from_view.{{ name }}
    {%- endif %}
    {%- endfor %}
)
{%- endmacro %}
