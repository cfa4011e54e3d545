{#-
    Per vertex, the maximal periods in which Flink's back pressure tab showed the vertex `high`
    (B6/B7 on fct_vertex_seconds), bridging dips of at most `incident_grace_s` seconds. Rebuilt
    in full on every run: it reads one row per vertex and second, far fewer than the events.
-#}

with

vertex_seconds as (

    select * from {{ ref('fct_vertex_seconds') }}

),

subtask_seconds as (

    select * from {{ ref('fct_subtask_seconds') }}

),

high_seconds as (

    select
        job_id,
        vertex_id,
        second_start_ms,
        lag(second_start_ms) over (
            partition by job_id, vertex_id
            order by second_start_ms
        ) as previous_high_second_ms
    from vertex_seconds
    where backpressure_level = 'high'

),

flagged as (

    select
        high_seconds.*,
        case
            when previous_high_second_ms is null then 1
            -- more than `incident_grace_s` seconds that are not high since the previous high one
            when second_start_ms - previous_high_second_ms
                > ({{ var('incident_grace_s') }} + 1) * 1000 then 1
            else 0
        end as is_incident_start
    from high_seconds

),

numbered as (

    select
        flagged.*,
        sum(is_incident_start) over (
            partition by job_id, vertex_id
            order by second_start_ms
            rows between unbounded preceding and current row
        ) as incident_number
    from flagged

),

spans as (

    select
        job_id,
        vertex_id,
        incident_number,
        min(second_start_ms) as incident_start_ms,
        max(second_start_ms) + 1000 as incident_end_ms,
        count(*) as high_seconds
    from numbered
    group by job_id, vertex_id, incident_number

),

span_hours as (

    -- each incident once per hour it touches, to join the marts' seconds by (job, vertex, hour)
    select
        spans.job_id,
        spans.vertex_id,
        spans.incident_start_ms,
        spans.incident_end_ms,
        spanned.hour_at
    from spans
    lateral view explode(
        {{ tidemark_hours_spanned('spans.incident_start_ms', 'spans.incident_end_ms') }}
    ) spanned as hour_at

),

ratios as (

    select
        span_hours.job_id,
        span_hours.vertex_id,
        span_hours.incident_start_ms,
        max(vertex_seconds.max_backpressure_ratio) as peak_backpressure_ratio,
        avg(vertex_seconds.max_backpressure_ratio) as mean_backpressure_ratio
    from span_hours
    inner join vertex_seconds
        on
            span_hours.job_id = vertex_seconds.job_id
            and span_hours.vertex_id = vertex_seconds.vertex_id
            and span_hours.hour_at = vertex_seconds.hour_at
            and vertex_seconds.second_start_ms >= span_hours.incident_start_ms
            and vertex_seconds.second_start_ms < span_hours.incident_end_ms
    group by span_hours.job_id, span_hours.vertex_id, span_hours.incident_start_ms

),

involved as (

    select
        span_hours.job_id,
        span_hours.vertex_id,
        span_hours.incident_start_ms,
        array_sort(collect_set(subtask_seconds.subtask_index)) as high_subtask_indexes
    from span_hours
    inner join subtask_seconds
        on
            span_hours.job_id = subtask_seconds.job_id
            and span_hours.vertex_id = subtask_seconds.vertex_id
            and span_hours.hour_at = subtask_seconds.hour_at
            and subtask_seconds.second_start_ms >= span_hours.incident_start_ms
            and subtask_seconds.second_start_ms < span_hours.incident_end_ms
    where subtask_seconds.backpressure_level = 'high'
    group by span_hours.job_id, span_hours.vertex_id, span_hours.incident_start_ms

),

final as (

    select
        spans.job_id,
        spans.vertex_id,
        spans.incident_start_ms,
        spans.incident_end_ms,
        cast((spans.incident_end_ms - spans.incident_start_ms) / 1000 as bigint) as duration_s,
        spans.high_seconds,
        ratios.peak_backpressure_ratio,
        ratios.mean_backpressure_ratio,
        coalesce(involved.high_subtask_indexes, array()) as high_subtask_indexes
    from spans
    inner join ratios
        on
            spans.job_id = ratios.job_id
            and spans.vertex_id = ratios.vertex_id
            and spans.incident_start_ms = ratios.incident_start_ms
    left join involved
        on
            spans.job_id = involved.job_id
            and spans.vertex_id = involved.vertex_id
            and spans.incident_start_ms = involved.incident_start_ms

)

select * from final
