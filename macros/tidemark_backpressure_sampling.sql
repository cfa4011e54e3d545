{#-
    B2/B3: Flink <= 1.12's back pressure sampling as configured by the dbt vars, validated: a
    sampling starts at every epoch multiple of `legacy_backpressure_refresh_ms` and takes
    `legacy_backpressure_num_samples` samples `legacy_backpressure_delay_ms` apart. Returns a dict
    (refresh_ms, num_samples, delay_ms). The refresh interval must be a whole number of seconds,
    and a sampling must end before the next one starts ((num_samples - 1) * delay_ms <
    refresh_ms): then every second holds samples of at most one sampling, which is what lets the
    replay count them per second (int_timer_seconds_replayed).
-#}
{% macro tidemark_backpressure_sampling() -%}
    {%- set sampling = {
        'refresh_ms': var('legacy_backpressure_refresh_ms', 60000) | int,
        'num_samples': var('legacy_backpressure_num_samples', 100) | int,
        'delay_ms': var('legacy_backpressure_delay_ms', 50) | int,
    } -%}
    {%- if sampling.refresh_ms < 1000 or sampling.refresh_ms % 1000 != 0 -%}
        {{- exceptions.raise_compiler_error(
            'legacy_backpressure_refresh_ms is ' ~ var('legacy_backpressure_refresh_ms', 60000)
            ~ ': it must be a positive multiple of 1000 (whole seconds)'
        ) -}}
    {%- endif -%}
    {%- if sampling.num_samples < 1 or sampling.delay_ms < 1 -%}
        {{- exceptions.raise_compiler_error(
            'legacy_backpressure_num_samples and legacy_backpressure_delay_ms must be at least 1 (got '
            ~ var('legacy_backpressure_num_samples', 100) ~ ' and '
            ~ var('legacy_backpressure_delay_ms', 50) ~ ')'
        ) -}}
    {%- endif -%}
    {%- if (sampling.num_samples - 1) * sampling.delay_ms >= sampling.refresh_ms -%}
        {{- exceptions.raise_compiler_error(
            'a back pressure sampling of ' ~ sampling.num_samples ~ ' samples '
            ~ sampling.delay_ms ~ ' ms apart must end before the next one starts, '
            ~ sampling.refresh_ms ~ ' ms later: lower legacy_backpressure_num_samples or '
            ~ 'legacy_backpressure_delay_ms, or raise legacy_backpressure_refresh_ms'
        ) -}}
    {%- endif -%}
    {{- return(sampling) -}}
{%- endmacro %}
