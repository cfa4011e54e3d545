{#-
    For the incremental models of the legacy sampled back pressure (B2/B3): fails the run, before
    anything is written, when the model's table holds samplings made with other
    legacy_backpressure_* vars than this run's, so old and new samplings never mix in one table.
    A full refresh of the gauge models rebuilds them with the new vars. Reads only rows that
    differ, so the check stops at the first one. Does nothing when the model is built from scratch.
-#}
{% macro tidemark_assert_sampling_unchanged() -%}
    {%- if execute and is_incremental() -%}
        {%- set sampling = tidemark_backpressure_sampling() -%}
        {%- set found = run_query(
            'select refresh_interval_ms, num_samples, delay_between_samples_ms from ' ~ this
            ~ ' where not (refresh_interval_ms <=> ' ~ sampling.refresh_ms
            ~ ' and num_samples <=> ' ~ sampling.num_samples
            ~ ' and delay_between_samples_ms <=> ' ~ sampling.delay_ms ~ ') limit 1'
        ) -%}
        {%- if found.rows | length > 0 -%}
            {%- set old = found.rows[0] -%}
            {{- exceptions.raise_compiler_error(
                this ~ ' holds back pressure samplings every ' ~ old[0] ~ ' ms of ' ~ old[1]
                ~ ' samples ' ~ old[2] ~ ' ms apart, but the legacy_backpressure_* vars now say every '
                ~ sampling.refresh_ms ~ ' ms of ' ~ sampling.num_samples ~ ' samples '
                ~ sampling.delay_ms ~ ' ms apart: rebuild the gauge models with the new vars, '
                ~ 'dbt build --full-refresh --select int_timer_tasks_planned+'
            ) -}}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
