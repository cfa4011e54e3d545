{#-
    B2/B3: how many sample instants of the legacy back pressure sampling
    (tidemark_backpressure_sampling) lie before epoch milliseconds `ms`, counted from the epoch:
    every full sampling before the one starting at floor(ms, refresh) contributes num_samples,
    and that one the samples at start + k * delay < ms, k < num_samples. So the instants in
    [a, b) number samples_before(b) - samples_before(a), in closed form.
-#}
{% macro tidemark_backpressure_samples_before(ms) -%}
    {%- set sampling = tidemark_backpressure_sampling() -%}
    ({{ tidemark_floor_ms(ms, sampling.refresh_ms) }} div {{ sampling.refresh_ms }} * {{ sampling.num_samples }}
    + least(
        {{ sampling.num_samples }},
        (pmod(({{ ms }}), {{ sampling.refresh_ms }}) + {{ sampling.delay_ms - 1 }}) div {{ sampling.delay_ms }}
    ))
{%- endmacro %}
