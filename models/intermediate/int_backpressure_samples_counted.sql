{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
        publish=true,
    )
}}
{#-
    Flink <= 1.12's sampled back pressure (B1-B3), per task and second: the samples the task took
    in the second (B2, B3) and how many of them found it back-pressured (B1: from the state at
    the second's start and what its events changed, int_timer_seconds_replayed's pass over them),
    for the seconds with samples (by default 5 of every 60). A table of its own because a run
    replays a task from a checkpointed second that can lie inside a sampling, and the sampling's
    ratio needs its earlier seconds too (fct_vertex_sampled_backpressure sums them). Incremental
    like fct_subtask_seconds: a run rewrites the (job_id, hour_at, minute_slice) partitions
    holding replayed seconds. Which
    samplings exist depends on the legacy_backpressure_* vars, so a run with other vars than the
    table's fails (tidemark_assert_sampling_unchanged) and a full refresh rebuilds it.
-#}
{%- set sampling = tidemark_backpressure_sampling() -%}
{%- do tidemark_assert_sampling_unchanged() %}

with

replayed_seconds as (

    select * from {{ ref('int_timer_seconds_replayed') }}

),

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

sampled_seconds as (

    -- B2/B3: the second's samples belong to the sampling that starts at its refresh interval
    -- (tidemark_backpressure_sampling: one at most). The task takes them only when it was
    -- already running when that sampling started (B2: else no sampling at all) and, within
    -- the second, before its horizon (samples after the task stopped are not taken).
    select
        *,
        case
            when sampling_start_ms >= first_ts_ms
                then
                    {{ tidemark_backpressure_samples_before('second_start_ms + second_length_ms') }}
                    - {{ tidemark_backpressure_samples_before('second_start_ms') }}
            else 0
        end as samples_taken
    from (
        select
            *,
            {{ tidemark_floor_ms('second_start_ms', sampling.refresh_ms) }} as sampling_start_ms
        from replayed_seconds
    ) as seconds_in_samplings

),

recomputed as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        second_start_ms,
        sampling_start_ms,
        samples_taken,
        -- B1: the samples at instants inside the soft or the hard measurements.
        case when is_backpressured_at_start then samples_taken else 0 end
        + backpressured_samples_change as backpressured_samples,
        -- The instant of the second's last sample (B3 end-timestamp).
        sampling_start_ms + (
            least(
                {{ sampling.num_samples }},
                (
                    second_start_ms + second_length_ms - sampling_start_ms
                    + {{ sampling.delay_ms - 1 }}
                ) div {{ sampling.delay_ms }}
            ) - 1
        ) * {{ sampling.delay_ms }} as last_sample_ms,
        {{ sampling.refresh_ms }} as refresh_interval_ms,
        {{ sampling.num_samples }} as num_samples,
        {{ sampling.delay_ms }} as delay_between_samples_ms,
        hour_at,
        minute_slice
    from sampled_seconds
    where samples_taken > 0

),

final as (

    -- A changed task's rows from the second its replay starts are replaced; a build from
    -- scratch needs a plan that replays every task from its first event.
    {{ tidemark_incremental_tail() }}

)

select * from final
