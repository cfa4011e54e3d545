{#-
    For the incremental models of the legacy sampled back pressure (B2/B3): fails the run, before
    anything is written, when the model's table holds samplings made with other
    legacy_backpressure_* vars than this run's, so old and new samplings never mix in one table.
    A full refresh of the gauge models rebuilds them with the new vars. Every run checks before it
    writes, so all rows of the table share one set of vars, and one row tells them: it is read
    from the partitions this run rewrites (from the plan's earliest replayed second), and only
    when those hold none, from the rows that differ anywhere in the table. Does nothing when the
    model is built from scratch.
-#}
{% macro tidemark_assert_sampling_unchanged() -%}
    {%- if execute and is_incremental() -%}
        {%- set sampling = tidemark_backpressure_sampling() -%}
        {%- set columns = 'select refresh_interval_ms, num_samples, delay_between_samples_ms from '
            ~ this ~ ' as existing where ' -%}
        {%- set differs = 'not (refresh_interval_ms <=> ' ~ sampling.refresh_ms
            ~ ' and num_samples <=> ' ~ sampling.num_samples
            ~ ' and delay_between_samples_ms <=> ' ~ sampling.delay_ms ~ ')' -%}
        {%- set found = run_query(columns ~ tidemark_partitions_from(
            'existing', 'select min(recompute_from_ms) from ' ~ ref('int_timer_tasks_planned')
        ) ~ ' limit 1') -%}
        {%- if found.rows | length == 0 -%}
            {%- set found = run_query(columns ~ differs ~ ' limit 1') -%}
        {%- endif -%}
        {%- set old = found.rows[0] if found.rows | length > 0 else none -%}
        {%- if old is not none and not (
            old[0] == sampling.refresh_ms and old[1] == sampling.num_samples
            and old[2] == sampling.delay_ms
        ) -%}
            {{- exceptions.raise_compiler_error(
                this ~ ' holds back pressure samplings every ' ~ old[0] ~ ' ms of ' ~ old[1]
                ~ ' samples ' ~ old[2] ~ ' ms apart, but the legacy_backpressure_* vars now say every '
                ~ sampling.refresh_ms ~ ' ms of ' ~ sampling.num_samples ~ ' samples '
                ~ sampling.delay_ms ~ ' ms apart: rebuild the gauge models with the new vars, '
                ~ 'dbt build --full-refresh --select int_timer_events_landed+'
            ) -}}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
