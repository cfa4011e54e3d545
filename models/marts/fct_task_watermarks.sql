{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['job_id', 'hour_at', 'minute_slice'],
        emptied_partitions={
            'keys': ['seq', 'change_index'],
            'time_column': 'effective_ms',
            'where': "row_kind = 'clock' or (row_kind = 'emission' and size(task_inputs) = 1)",
            'sources': {'change_index': 'emission_index'},
        },
    )
}}
{#-
    Each task's event-time clock as a timeline: one row per change of the task's combined
    watermark or status (C1-C5: the min over the inputs that are not idle, idle only when all
    are), valid from that change until the next. A one-input task's clock is its valve's output.
    Incremental runs recompute a task from its last change before the resume point (whose
    valid_to_ms may move) and rewrite the (job_id, hour_at, minute_slice) partitions involved
    (docs/decisions/0005-valve-incremental.md).
-#}

{%- set tail_from = namespace(sql='min(recompute_from_ms)') %}
with

valve_outputs as (

    select * from {{ ref('int_valve_outputs_computed') }}

),

changes as (

    -- The clock's outputs; for one-input tasks the UDTF leaves them out, as they are exactly
    -- the valve's (C1-C5).
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        seq,
        emission_index as change_index,
        ts_ms,
        effective_ms as valid_from_ms,
        kind as change_kind,
        watermark_ms,
        case when kind = 'status' then status = 'IDLE' end as is_idle,
        -- Progress: the watermark advanced, or the task became active again.
        case when kind = 'watermark' or status = 'ACTIVE' then effective_ms end as progress_ms,
        false as is_seed
    from valve_outputs
    where row_kind = 'clock' or (row_kind = 'emission' and size(task_inputs) = 1)

),

{% if is_incremental() %}

runs as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        resumed_after_seq,
        resumed_effective_ms,
        recompute_from_ms
    from valve_outputs
    where row_kind = 'state'

),

existing as (

    select * from {{ this }}
    where job_id in (select runs.job_id from runs)

),

{#- Each recomputed task's last change before its resume point: the running values start from it,
    and its valid_to_ms is recomputed. Looked for in the partitions from a minute before the
    earliest resume point, and in the others for the tasks resumed from a checkpoint that have
    none there (a clock unchanged for longer), when there are such tasks (tidemark_near_look). Exact: valid_from_ms never decreases
    with seq, so when the near partitions hold a change of the task at or before its resume
    point, they hold the last one. -#}
{%- set seed_found = 't.seq <= runs.resumed_after_seq' %}
{%- set seed_wanted = 'runs.resumed_after_seq >= 0' %}
{%- set look_up = tidemark_near_look(
    "select job_id, vertex_id, subtask_index, attempt, resumed_after_seq, resumed_effective_ms from "
        ~ ref('int_valve_outputs_computed') ~ " where row_kind = 'state'",
    'min(resumed_effective_ms) - 60000',
    this,
    seed_found,
    seed_wanted,
) %}
{%- set near_from_ms = 'cast(' ~ ('null' if look_up.from_ms is none else look_up.from_ms)
    ~ ' as bigint)' %}
{#- The earliest time of a row the run writes or replaces: the seed, or an event fed. With no
    second look every seed lies in the near partitions. -#}
{%- set tail_from.sql = 'least(min(valve_recompute_from_ms), ' ~ near_from_ms ~ ')'
    if not look_up.far else 'min(recompute_from_ms)' %}
{% call(tasks, in_look, hint) tidemark_near_and_far(
    'seeds', look_up, near_from_ms, this, 'existing', seed_found, seed_wanted
) %}
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        seed.seq,
        seed.change_index,
        seed.ts_ms,
        seed.valid_from_ms,
        seed.change_kind,
        seed.watermark_ms,
        seed.is_idle,
        seed.last_progress_ms as progress_ms,
        true as is_seed
    from (
        select {{ hint }}
            existing.job_id,
            existing.vertex_id,
            existing.subtask_index,
            existing.attempt,
            max_by(
                named_struct(
                    'seq', existing.seq,
                    'change_index', existing.change_index,
                    'ts_ms', existing.ts_ms,
                    'valid_from_ms', existing.valid_from_ms,
                    'change_kind', existing.change_kind,
                    'watermark_ms', existing.watermark_ms,
                    'is_idle', existing.is_idle,
                    'last_progress_ms', existing.last_progress_ms
                ),
                named_struct('seq', existing.seq, 'change_index', existing.change_index)
            ) as seed
        from existing
        inner join {{ tasks }}
            on
                {{ tidemark_same_task('existing', tasks) }}
        where
            existing.seq <= {{ tasks }}.resumed_after_seq
            and {{ in_look }}
        group by existing.job_id, existing.vertex_id, existing.subtask_index, existing.attempt
    )
{% endcall %},

points as (

    select * from seeds
    union all
    select * from changes

),

{% else %}

points as (

    select * from changes

),

{% endif %}

timeline as (

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        seq,
        change_index,
        ts_ms,
        valid_from_ms,
        lead(valid_from_ms) over (
            partition by job_id, vertex_id, subtask_index, attempt
            order by seq, change_index
        ) as valid_to_ms,
        change_kind,
        last_value(watermark_ms, true) over running as watermark_ms,
        coalesce(last_value(is_idle, true) over running, false) as is_idle,
        last_value(progress_ms, true) over running as last_progress_ms,
        {{ tidemark_hour_at('valid_from_ms') }} as hour_at,
        {{ tidemark_minute_slice('valid_from_ms') }} as minute_slice
    from points
    window running as (
        partition by job_id, vertex_id, subtask_index, attempt
        order by seq, change_index
        rows between unbounded preceding and current row
    )

),

{% if is_incremental() %}

cutoffs as (

    -- Per fed task, the changes this run replaces: those after its resume point, and its seed.
    select
        runs.job_id,
        runs.vertex_id,
        runs.subtask_index,
        runs.attempt,
        runs.resumed_after_seq,
        -- The valve outputs' own: the earliest event fed.
        runs.recompute_from_ms as valve_recompute_from_ms,
        -- The earliest time of a row the run writes or replaces: the seed, or an event fed.
        least(seeds.valid_from_ms, runs.recompute_from_ms) as recompute_from_ms,
        seeds.seq as seed_seq,
        seeds.change_index as seed_change_index
    from runs
    left join seeds
        on
            {{ tidemark_same_task('runs', 'seeds') }}

),

{% endif %}

final as (

-- A fed task's changes after its resume point and its seed are replaced, and the partitions
-- that held them rewritten; a build from scratch needs a run that fed every task from its
-- first event (int_valve_outputs_computed makes one when a watermark mart is missing).
    {{ tidemark_incremental_tail(
        'timeline', 'cutoffs',
        since='kept.seq > replaced.resumed_after_seq or (kept.seq = replaced.seed_seq'
            ~ ' and kept.change_index = replaced.seed_change_index)',
        jobs='runs', rewrite_replaced=true,
        plan="valve_outputs where row_kind = 'state'",
        replaced_from=tail_from.sql,
    ) }}

)

select * from final
