{#- MetricFlow's time spine: one row per day, 2020 through 2040. A view: nothing to rebuild on
    every scheduled run, and a query reads its 7,671 days in no time. -#}
{{ config(materialized='view') }}

with

days as (

    select explode(sequence(date '2020-01-01', date '2040-12-31', interval 1 day)) as date_day

),

final as (

    select cast(date_day as date) as date_day
    from days

)

select * from final
