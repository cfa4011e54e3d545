-- M4: where busy time is defined and idle and back pressure do not overlap (their sum fits in
-- the second), busy + idle + back-pressured is exactly 1000 ms. Returns the seconds where not.
with

subtask_seconds as (

    -- Row by row: with data_tests_recent_hours, the latest hours only (get_where_subquery).
    select * from {{ get_where_subquery(ref('fct_subtask_seconds')) }}

),

final as (

    select *
    from subtask_seconds
    where
        busy_ms is not null
        and idle_ms + backpressured_ms <= 1000
        and busy_ms + idle_ms + backpressured_ms != 1000

)

-- A data test returns the failing rows whole.
select * from final  -- noqa: AM04
