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
    in the second and how many of them found it back-pressured, for the seconds with samples
    (by default 5 of every 60). Counted by int_timer_seconds_replayed in the same pass as the
    milliseconds; kept here because a run replays a task from a checkpointed second that can lie
    inside a sampling, and the sampling's ratio needs its earlier seconds too
    (fct_vertex_sampled_backpressure sums them). Incremental like fct_subtask_seconds: a run
    rewrites the (job_id, hour_at, minute_slice) partitions holding replayed seconds. Which
    samplings exist depends on the legacy_backpressure_* vars, so a run with other vars than the
    table's fails (tidemark_assert_sampling_unchanged) and a full refresh rebuilds it.
-#}
{%- set sampling = tidemark_backpressure_sampling() -%}
{%- do tidemark_assert_sampling_unchanged() %}

with

sampled_seconds as (

    select * from {{ ref('int_timer_seconds_replayed') }}
    where samples_taken > 0

),

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

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
        backpressured_samples,
        last_sample_ms,
        {{ sampling.refresh_ms }} as refresh_interval_ms,
        {{ sampling.num_samples }} as num_samples,
        {{ sampling.delay_ms }} as delay_between_samples_ms,
        hour_at,
        minute_slice
    from sampled_seconds

),

final as (

    -- A changed task's rows from the second its replay starts are replaced; a build from
    -- scratch needs a plan that replays every task from its first event.
    {{ tidemark_incremental_tail() }}

)

select * from final
