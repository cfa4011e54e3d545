{{ config(materialized='ephemeral') }}
{#-
    Per job of the run's gauge plan, the Flink release whose TimerGauge rules its gauge figures
    follow (docs/flink-versions.md), and which source named it: the dbt var flink_release_by_job
    where it names the job ('flink_release_by_job'), else the release its capture recorded in
    the job's `vertex` records ('captured', contract §8), else the var flink_release where set
    ('flink_release'), else the newest rules, "2.3" ('assumed'). A var that is not a release
    fails the build (tidemark_checked_release). Ephemeral: a row per job, inlined where read.
-#}
-- noqa: disable=LT02
{#- (condition, release, source) in order of precedence, then the fallback's release and source. -#}
{%- set choices = [] -%}
{%- for job_id, release in (var('flink_release_by_job', {}) or {}) | dictsort -%}
    {%- do choices.append((
        "jobs.job_id = '" ~ job_id | replace("'", "") ~ "'",
        "'" ~ tidemark_checked_release(release) ~ "'",
        'flink_release_by_job',
    )) -%}
{%- endfor -%}
{%- do choices.append(
    ('recorded.recorded_release is not null', 'recorded.recorded_release', 'captured')
) -%}
{%- set lake_release = var('flink_release', none) -%}
{%- set fallback = ("'" ~ tidemark_checked_release(lake_release) ~ "'", 'flink_release')
    if lake_release else ("'2.3'", 'assumed') -%}
-- noqa: enable=LT02

with

planned as (

    select * from {{ ref('int_timer_tasks_planned') }}

),

vertices as (

    select * from {{ ref('stg_bronze__vertices') }}

),

recorded as (

    select
        job_id,
        max(flink_version) as recorded_release
    from vertices
    group by job_id

),

chosen as (

    select
        jobs.job_id,
        case
            {%- for condition, release, _ in choices %}
            when {{ condition }} then {{ release }}
            {%- endfor %}
            else {{ fallback[0] }}
        end as flink_release,
        case
            {%- for condition, _, source in choices %}
            when {{ condition }} then '{{ source }}'
            {%- endfor %}
            else '{{ fallback[1] }}'
        end as flink_release_source
    from (select distinct job_id from planned) as jobs
    left join recorded
        on jobs.job_id = recorded.job_id

),

numbered as (

    select
        job_id,
        flink_release,
        flink_release_source,
        cast(regexp_extract(flink_release, '^([0-9]+)[.]([0-9]+)', 1) as int) * 100
        + cast(regexp_extract(flink_release, '^([0-9]+)[.]([0-9]+)', 2) as int) as release_number
    from chosen

),

final as (

    select
        job_id,
        flink_release,
        flink_release_source,
        -- T5: no ring of slots before Flink 1.17, each round publishes its last 5 s.
        case
            when release_number < 117 then 1 else {{ tidemark_gauge_window_slots() }}
        end as gauge_window_slots,
        -- Before FLINK-35764 (1.15 to 1.18) markEnd adds the time since the measurement's start.
        release_number < 119 as is_end_counted_from_start
    from numbered

)

select * from final
