{#-
    on-run-start: brings the lake an earlier release or a person left to what this release reads,
    before any model reads it, so that no model asks the warehouse about it while compiling.

    - A checkpoint vouches for marts (decision 0004, 0005): where one of them is missing (a release
      that adds a mart, a mart dropped by hand), the checkpoint is dropped, and the plan replays
      every task from its first event, rebuilding every mart it feeds.
    - int_valve_states_checkpointed gained `later_from_ms` on 2026-11-26 (CHANGELOG.md,
      "Migration"); checkpoints kept from before hold NULL there, which bounds no read (0005).

    Lookups from dbt's relation cache, and one `describe` of the valve checkpoints.
-#}
{% macro tidemark_migrate_lake() -%}
    {%- if not execute -%}
        {{- return('select 1') -}}
    {%- endif -%}
    {%- set vouched = {
        'int_timer_tasks_checkpointed': [
            'fct_subtask_seconds', 'fct_subtask_flink_gauges', 'fct_vertex_seconds',
            'int_backpressure_samples_counted', 'fct_vertex_sampled_backpressure',
        ],
        'int_valve_states_checkpointed': [
            'fct_valve_emissions', 'fct_task_watermarks', 'fct_watermark_seconds',
            'fct_vertex_watermark_seconds',
        ],
    } -%}
    {%- for checkpoint_name, marts in vouched.items() -%}
        {%- set checkpoint = load_relation(source('previous_run', checkpoint_name)) -%}
        {%- if checkpoint is not none -%}
            {%- for mart in marts if tidemark_model_relation(mart) is none -%}
                {%- if loop.first -%}
                    {{- log('tidemark: ' ~ mart ~ ' is missing, so ' ~ checkpoint
                        ~ ' vouches for nothing: dropped, the next plan replays every task', info=true) -}}
                    {%- do adapter.drop_relation(checkpoint) -%}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set valve_checkpoints = load_relation(source('previous_run', 'int_valve_states_checkpointed')) -%}
    {%- if valve_checkpoints is not none and 'later_from_ms' not in (
        adapter.get_columns_in_relation(valve_checkpoints) | map(attribute='name') | list
    ) -%}
        alter table {{ valve_checkpoints }} add columns (later_from_ms bigint)
    {%- else -%}
        select 1
    {%- endif -%}
{%- endmacro %}
