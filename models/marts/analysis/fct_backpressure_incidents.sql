{#-
    Per vertex, the maximal periods in which Flink's back pressure tab showed the vertex `high`
    (B6/B7 on fct_vertex_seconds), bridging dips of at most `incident_grace_s` seconds. Rebuilt
    in full on every run: it reads one row per vertex and second, far fewer than the events.
    One window pass numbers the incidents and places every second, dips included, in its
    incident, so figures need no join back from the incidents to the seconds.
-#}
{%- set bridged_ms = ((var('incident_grace_s') | int) + 1) * 1000 -%}

with

vertex_seconds as (

    select * from {{ ref('fct_vertex_seconds') }}

),

subtask_seconds as (

    select * from {{ ref('fct_subtask_seconds') }}

),

high_subtasks as (

    select
        job_id,
        vertex_id,
        second_start_ms,
        collect_list(subtask_index) as high_subtask_indexes
    from subtask_seconds
    where backpressure_level = 'high'
    group by job_id, vertex_id, second_start_ms

),

marked as (

    -- For each second, the nearest high second before it and the nearest at or after it.
    select
        vertex_seconds.job_id,
        vertex_seconds.vertex_id,
        vertex_seconds.second_start_ms,
        vertex_seconds.max_backpressured_ms,
        vertex_seconds.backpressure_level = 'high' as is_high,
        high_subtasks.high_subtask_indexes,
        max(
            case
                when vertex_seconds.backpressure_level = 'high' then vertex_seconds.second_start_ms
            end
        ) over (
            partition by vertex_seconds.job_id, vertex_seconds.vertex_id
            order by vertex_seconds.second_start_ms
            rows between unbounded preceding and 1 preceding
        ) as previous_high_second_ms,
        min(
            case
                when vertex_seconds.backpressure_level = 'high' then vertex_seconds.second_start_ms
            end
        ) over (
            partition by vertex_seconds.job_id, vertex_seconds.vertex_id
            order by vertex_seconds.second_start_ms
            rows between current row and unbounded following
        ) as next_high_second_ms
    from vertex_seconds
    left join high_subtasks
        on
            vertex_seconds.job_id = high_subtasks.job_id
            and vertex_seconds.vertex_id = high_subtasks.vertex_id
            and vertex_seconds.second_start_ms = high_subtasks.second_start_ms

),

numbered as (

    -- A high second starts an incident when more than `incident_grace_s` seconds that are not
    -- high lie since the previous high one. A second that is not high belongs to the incident
    -- of the high seconds around it when those are close enough to be one incident.
    select
        marked.*,
        sum(
            case
                when
                    marked.is_high
                    and (
                        marked.previous_high_second_ms is null
                        or marked.second_start_ms - marked.previous_high_second_ms
                        > {{ bridged_ms }}
                    )
                    then 1
                else 0
            end
        ) over (
            partition by marked.job_id, marked.vertex_id
            order by marked.second_start_ms
            rows between unbounded preceding and current row
        ) as incident_number,
        marked.is_high
        or marked.next_high_second_ms - marked.previous_high_second_ms <= {{ bridged_ms }}
            as is_in_incident
    from marked

),

incidents as (

    select
        job_id,
        vertex_id,
        min(second_start_ms) as incident_start_ms,
        max(case when is_high then second_start_ms end) + 1000 as incident_end_ms,
        count_if(is_high) as high_seconds,
        -- From integer milliseconds, one division each: a mean of summed doubles can land an
        -- ulp above the peak (880 ms in every second gave 0.8800000000000002 > 0.88).
        max(max_backpressured_ms) / 1000 as peak_backpressure_ratio,
        sum(max_backpressured_ms) / (count(max_backpressured_ms) * 1000) as mean_backpressure_ratio,
        array_sort(array_distinct(flatten(collect_list(high_subtask_indexes))))
            as high_subtask_indexes
    from numbered
    where is_in_incident
    group by job_id, vertex_id, incident_number

),

final as (

    select
        job_id,
        vertex_id,
        incident_start_ms,
        incident_end_ms,
        cast((incident_end_ms - incident_start_ms) / 1000 as bigint) as duration_s,
        high_seconds,
        peak_backpressure_ratio,
        mean_backpressure_ratio,
        high_subtask_indexes
    from incidents

)

select * from final
