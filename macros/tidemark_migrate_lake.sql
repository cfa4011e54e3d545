{#-
    on-run-start: brings a table an earlier release built to the columns this one reads, before any
    model reads it, so that no model asks the warehouse for its columns while compiling (one
    metastore lookup and one `describe` a run when there is nothing to do). CHANGELOG.md,
    "Migration": int_valve_states_checkpointed gained `later_from_ms` on 2026-11-26; checkpoints
    kept from before hold NULL there, which bounds no read (docs/decisions/0005-valve-incremental.md).
-#}
{% macro tidemark_migrate_lake() -%}
    {%- set checkpoints = tidemark_model_relation('int_valve_states_checkpointed') -%}
    {%- if checkpoints is not none and 'later_from_ms' not in (
        adapter.get_columns_in_relation(checkpoints) | map(attribute='name') | list
    ) -%}
        alter table {{ checkpoints }} add columns (later_from_ms bigint)
    {%- else -%}
        select 1
    {%- endif -%}
{%- endmacro %}
