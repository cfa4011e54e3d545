{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id'],
        publish=true,
    )
}}
{#-
    The saved state of every task's valves and clock, a few checkpoints per task, from which the
    next run resumes it (int_valve_tasks_planned reads this table as
    source('previous_run', ...)). Written after the marts, it is the commit point of a run: a run
    that dies before this model leaves the previous checkpoints, so the next run recomputes the
    same work and the marts, which replace what a recomputation covers, converge. See
    docs/decisions/0005-valve-incremental.md.
-#}
-- After the watermark marts (fct_vertex_watermark_seconds follows fct_watermark_seconds, which
-- follows fct_task_watermarks): dbt orders a model only by what it reads.
-- depends_on: {{ ref('fct_valve_emissions') }}
-- depends_on: {{ ref('fct_vertex_watermark_seconds') }}

with

valve_outputs as (

    select * from {{ ref('int_valve_outputs_computed') }}

),

new_checkpoints as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        batch_id,
        seq,
        ts_ms as first_ms,
        effective_ms,
        resumed_after_seq,
        state,
        get_json_object(state, '$.semantics') as semantics,
        task_inputs,
        processed_ingest_id,
        -- Where the events after the checkpoint that its run fed lie: none after the run's final
        -- state; at or after the smallest ts_ms the run fed, after one made along the way.
        case
            when row_kind = 'state' then cast(9223372036854775807 as bigint) else recompute_from_ms
        end as later_from_ms
    from valve_outputs
    where row_kind in ('state', 'checkpoint')

),

{% if is_incremental() %}

previous_checkpoints as (

    -- The other checkpoints of the jobs this run rewrites.
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        batch_id,
        seq,
        first_ms,
        effective_ms,
        resumed_after_seq,
        state,
        semantics,
        task_inputs,
        processed_ingest_id,
        later_from_ms
    from {{ this }}
    where job_id in (select new_checkpoints.job_id from new_checkpoints)

),

all_checkpoints as (

    select * from previous_checkpoints
    union all
    select * from new_checkpoints

),

{% else %}

all_checkpoints as (

    select * from new_checkpoints

),

{% endif %}

superseded as (

    -- A later run that resumed a task from an earlier point (a late event) replaced everything
    -- after that point, so a checkpoint beyond it can never be resumed from again.
    select
        all_checkpoints.*,
        min(all_checkpoints.resumed_after_seq) over (
            partition by
                all_checkpoints.job_id,
                all_checkpoints.vertex_id,
                all_checkpoints.subtask_index,
                all_checkpoints.attempt
            order by all_checkpoints.batch_id
            range between 1 following and unbounded following
        ) as superseded_after_seq
    from all_checkpoints

),

recent as (

    select
        superseded.*,
        row_number() over (
            partition by
                superseded.job_id,
                superseded.vertex_id,
                superseded.subtask_index,
                superseded.attempt
            order by superseded.batch_id desc, superseded.seq desc
        ) as recency
    from superseded
    where
        superseded.superseded_after_seq is null or superseded.seq <= superseded.superseded_after_seq

),

final as (

    -- The 60 newest usable checkpoints per task (10 minutes of its time at one per 10 s): a
    -- late event older than all of them replays its task from its first event, which is exact,
    -- only slower. The columns of previous_checkpoints: a build writes them by name.
    select * except (superseded_after_seq, recency)
    from recent
    where recency <= 60

)

select * from final
