{#-
    The TimerGauge rules a job's Flink release ran by (docs/flink-versions.md), as a SQL expression
    over the column `job_id_column`: `rule` 'slots' is the ring's number of 5-second slots (T5:
    1 before Flink 1.17, which had no ring, else tidemark_gauge_window_slots() of the span
    `flink_gauge_window_s`); 'counts_from_start' is true where markEnd adds the time since the
    measurement's start rather than since the last update (before FLINK-35764: Flink 1.15 to 1.18,
    where a measurement spanning an update counts its time before the update twice).

    The release is `flink_release_by_job[job_id]` where that map names the job, else the lake's
    `flink_release`. With no job named, the expression is a constant.
-#}
{% macro tidemark_gauge_rules_by_job(job_id_column, rule) -%}
    {%- set by_job = var('flink_release_by_job', {}) or {} -%}
    {%- if by_job | length == 0 -%}
        {{ tidemark_gauge_rule_of_release(var('flink_release', '2.3'), rule) }}
    {%- else -%}
        case {{ job_id_column }}
        {%- for job_id, release in by_job | dictsort %}
            when '{{ job_id | replace("'", "") }}' then {{ tidemark_gauge_rule_of_release(release, rule) }}
        {%- endfor %}
            else {{ tidemark_gauge_rule_of_release(var('flink_release', '2.3'), rule) }}
        end
    {%- endif -%}
{%- endmacro %}

{#- One release's rule as a literal; a release that is not "MAJOR.MINOR[.PATCH]" fails the build. -#}
{% macro tidemark_gauge_rule_of_release(release, rule) -%}
    {%- set parts = (release | string).split('.') -%}
    {%- if parts | length < 2 or not parts[0].isdigit() or not parts[1].isdigit() -%}
        {{ exceptions.raise_compiler_error(
            "flink_release '" ~ release ~ "' is not a Flink release like 1.15 or 2.3.0") }}
    {%- endif -%}
    {%- set minor = (parts[0] | int) * 100 + (parts[1] | int) -%}
    {%- if rule == 'slots' -%}
        {{ 1 if minor < 117 else tidemark_gauge_window_slots() }}
    {%- elif rule == 'counts_from_start' -%}
        {{ 'true' if minor < 119 else 'false' }}
    {%- else -%}
        {{ exceptions.raise_compiler_error("unknown gauge rule " ~ rule) }}
    {%- endif -%}
{%- endmacro %}
