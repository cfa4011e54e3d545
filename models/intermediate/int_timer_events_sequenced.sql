{{ config(materialized='ephemeral') }}
{#-
    The replayed events per task and gauge in seq order, each marked effective or ignored by the
    TimerGauge rules (T2, T3, T11): a start is effective iff the gauge is not measuring, an end iff
    it is. A gauge is measuring after a start and not after an end, effective or not, so an event
    is effective iff the gauge's previous event in seq order was of the other kind (or, for a
    start, there was none). Effective events alternate start, end, start, ...: consecutive ones
    delimit the effective measurements. A new attempt is another task and starts closed; a task
    resumed from an anchor starts with the gauges open there (int_timer_tasks_planned).

    `open_change` (+1 effective start, -1 effective end, 0 otherwise) is what the event does to the
    gauge: int_timer_seconds_replayed integrates it per second. Each gauge's state after the
    event is what a second ends with and what B1's samples ask ("the soft or the hard measures").
    Watermark events pass through with no gauge: they move the clock only. Ephemeral, read by
    int_timer_seconds_replayed.
-#}

with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}
    where is_changed

),

clocked_events as (

    select * from {{ ref('int_timer_events_clocked') }}

),

with_previous as (

    -- Each gauge's latest event before this one in seq order (in the task's own order, no second
    -- sort): its is_start, or NULL when the gauge had none since the anchor.
    select
        clocked_events.*,
        last_value(
            case when clocked_events.gauge = 'idle' then clocked_events.is_start end, true
        ) over earlier_events as previous_idle_is_start,
        last_value(
            case when clocked_events.gauge = 'soft_backpressured' then clocked_events.is_start end,
            true
        ) over earlier_events as previous_soft_backpressured_is_start,
        last_value(
            case when clocked_events.gauge = 'hard_backpressured' then clocked_events.is_start end,
            true
        ) over earlier_events as previous_hard_backpressured_is_start
    from clocked_events
    window earlier_events as (
        partition by clocked_events.task_key
        order by clocked_events.seq
        rows between unbounded preceding and 1 preceding
    )

),

states_before as (

    -- Whether each gauge measures just before the event: as its latest event left it (T2, T3),
    -- else as the anchor left it (closed without anchor).
    select
        with_previous.*,
        coalesce(
            with_previous.previous_idle_is_start, planned.is_idle_open_at_anchor, false
        ) as was_idle_measuring,
        coalesce(
            with_previous.previous_soft_backpressured_is_start,
            planned.is_soft_backpressured_open_at_anchor,
            false
        ) as was_soft_backpressured_measuring,
        coalesce(
            with_previous.previous_hard_backpressured_is_start,
            planned.is_hard_backpressured_open_at_anchor,
            false
        ) as was_hard_backpressured_measuring
    from with_previous
    inner join planned
        on with_previous.task_key = planned.task_key

),

own_gauge_states as (

    select
        states_before.*,
        case states_before.gauge
            when 'idle' then states_before.was_idle_measuring
            when 'soft_backpressured' then states_before.was_soft_backpressured_measuring
            when 'hard_backpressured' then states_before.was_hard_backpressured_measuring
            else false
        end as was_measuring
    from states_before

),

final as (

    select
        task_key,
        seq,
        ts_ms,
        clock_ms,
        gauge,
        is_start,
        -- T2/T11: a start counts only when not measuring; T3/T11: an end only when measuring.
        gauge is not null and is_start != was_measuring as is_effective,
        case
            when gauge is null or is_start = was_measuring then 0
            when is_start then 1
            else -1
        end as open_change,
        -- A gauge measures after its own event iff that was a start (T2, T3), else as before.
        case when gauge = 'idle' then is_start else was_idle_measuring end as is_idle_open_after,
        case
            when gauge = 'soft_backpressured' then is_start else was_soft_backpressured_measuring
        end as is_soft_backpressured_open_after,
        case
            when gauge = 'hard_backpressured' then is_start else was_hard_backpressured_measuring
        end as is_hard_backpressured_open_after
    from own_gauge_states

)

select * from final
