{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
    )
}}
{#-
    What Flink <= 1.12's sampled back pressure tab (B1-B4) would have shown, with the tab kept
    open: per vertex and sampling (one every legacy_backpressure_refresh_ms), the ratio of the
    vertex's most back-pressured subtask and its level. From int_backpressure_samples_counted:
    per task and sampling the samples taken and the back-pressured ones (B1, B2), then the max
    over the subtasks' current attempts (B3).

    Incremental: a run recomputes each vertex with replayed tasks from the sampling holding its
    earliest replayed second, and every vertex of a job whose vertex records changed since the
    last checkpoint (an edge decides which vertices are sinks, B1). A run with other
    legacy_backpressure_* vars than the table's fails (tidemark_assert_sampling_unchanged).
-#}
{%- set sampling = tidemark_backpressure_sampling() -%}
{%- set min_long = 'cast(-9223372036854775808 as bigint)' -%}
{%- do tidemark_assert_sampling_unchanged() %}

with

task_samples as (

    select * from {{ ref('int_backpressure_samples_counted') }}

),

planned as (  -- noqa: ST03

    select * from {{ ref('int_timer_tasks_planned') }}

),

vertices as (

    select * from {{ ref('stg_bronze__vertices') }}

),

downstream_edges as (

    select * from {{ ref('int_vertex_edges_reversed') }}

),

jobs_with_vertices as (

    select distinct job_id
    from vertices

),

vertices_with_outputs as (

    -- B1: a vertex has an output (a result partition writer) iff another vertex of its job
    -- reads from it; the others are sinks.
    select
        job_id,
        vertex_id
    from downstream_edges
    where exists(downstream_vertex_ids, downstream_vertex_id -> downstream_vertex_id != vertex_id)

),

{% if is_incremental() %}

replayed_vertices as (

    -- Vertices with replayed tasks, from the sampling holding their earliest replayed second.
    select
        job_id,
        vertex_id,
        {{ tidemark_floor_ms('recompute_from_ms', sampling.refresh_ms) }} as recompute_from_ms
    from planned
    where is_changed

),

regraphed_vertices as (

    -- Every vertex of a job with a vertex record landed since the last checkpoint, from its
    -- first sampling: the record's edges can make any vertex of the job a sink or not (B1).
    select
        planned.job_id,
        planned.vertex_id,
        {{ min_long }} as recompute_from_ms
    from planned
    left semi join vertices
        on
            planned.job_id = vertices.job_id
            and vertices.ingest_id > planned.previous_processed_ingest_id

),

dirty_vertices as (

    select
        job_id,
        vertex_id,
        min(recompute_from_ms) as recompute_from_ms
    from (
        select * from replayed_vertices
        union all
        select * from regraphed_vertices
    ) as dirty
    group by job_id, vertex_id

),

vertex_task_samples as (

    {{ tidemark_rows_of_dirty_vertices('task_samples', 'sampling_start_ms') }}

),

{% else %}

vertex_task_samples as (

    select * from task_samples

),

{% endif %}

task_samplings as (

    -- B2: per task and sampling, the samples taken (all num_samples unless the task stopped
    -- first) and the back-pressured ones.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        sampling_start_ms,
        sum(samples_taken) as samples_taken,
        sum(backpressured_samples) as backpressured_samples,
        max(last_sample_ms) as sampling_end_ms
    from vertex_task_samples
    group by job_id, vertex_id, subtask_index, attempt, sampling_start_ms

),

current_attempts as (

    -- B3: a sampling samples each subtask's current execution attempt: the latest attempt of
    -- the subtask that was sampled then.
    select
        task_samplings.*,
        {{ tidemark_attempt_rank('task_samplings', 'sampling_start_ms') }} as attempt_rank
    from task_samplings

),

subtask_ratios as (

    -- B1: a sink (or any task without outputs) samples false; a job without vertex records
    -- has no known sinks. B2: true samples / samples taken.
    select
        current_attempts.job_id,
        current_attempts.vertex_id,
        current_attempts.subtask_index,
        current_attempts.sampling_start_ms,
        current_attempts.sampling_end_ms,
        current_attempts.samples_taken,
        jobs_with_vertices.job_id is null
        or vertices_with_outputs.vertex_id is not null as has_outputs,
        case
            when jobs_with_vertices.job_id is null or vertices_with_outputs.vertex_id is not null
                then current_attempts.backpressured_samples / current_attempts.samples_taken
            else 0D
        end as backpressure_ratio
    from current_attempts
    left join jobs_with_vertices
        on current_attempts.job_id = jobs_with_vertices.job_id
    left join vertices_with_outputs
        on
            current_attempts.job_id = vertices_with_outputs.job_id
            and current_attempts.vertex_id = vertices_with_outputs.vertex_id
    where current_attempts.attempt_rank = 1

),

recomputed as (

    -- B3: the vertex ratio is the max over its subtasks; B4: its level.
    select
        job_id,
        vertex_id,
        sampling_start_ms,
        max(sampling_end_ms) as sampling_end_ms,
        count(*) as subtask_count,
        max(samples_taken) as samples_taken,
        min(samples_taken) = {{ sampling.num_samples }} as is_complete,
        max(backpressure_ratio) as backpressure_ratio,
        {{ tidemark_backpressure_level('max(backpressure_ratio)') }} as backpressure_level,
        -- The most back-pressured subtask; the lowest index among equals.
        max_by(subtask_index, struct(backpressure_ratio, -subtask_index))
            as max_ratio_subtask_index,
        bool_and(has_outputs) as has_outputs,
        {{ sampling.refresh_ms }} as refresh_interval_ms,
        {{ sampling.num_samples }} as num_samples,
        {{ sampling.delay_ms }} as delay_between_samples_ms,
        {{ tidemark_hour_at('sampling_start_ms') }} as hour_at,
        {{ tidemark_minute_slice('sampling_start_ms') }} as minute_slice
    from subtask_ratios
    group by job_id, vertex_id, sampling_start_ms

),

final as (

-- A dirty vertex's samplings from its recompute_from_ms are replaced; a build from scratch
-- reads all of int_backpressure_samples_counted, so it needs no full plan.
    {{ tidemark_incremental_tail(
        replaced='dirty_vertices',
        since='kept.sampling_start_ms >= replaced.recompute_from_ms',
        keys=['job_id', 'vertex_id'],
        plan=none,
        replaced_from='min(recompute_from_ms)',
    ) }}

)

select * from final
