{#-
    on-run-start: brings the lake an earlier release or a person left to what this release reads,
    before any model reads it, so that no model asks the warehouse about it while compiling.

    - A checkpoint vouches for every table the run built before it, its ancestors in dbt's lineage
      (the marts through its `-- depends_on:` lines; decision 0004, 0005): where one of them is
      missing (a release that adds a mart, a mart dropped by hand), the checkpoint is dropped, and
      the plan replays every task from its first event, rebuilding every mart it feeds.
    - int_valve_states_checkpointed gained `later_from_ms` on 2026-11-26 (CHANGELOG.md,
      "Migration"); checkpoints kept from before hold NULL there, which bounds no read (0005).

    Lookups from dbt's relation cache, and one `describe` of the valve checkpoints.
-#}
{% macro tidemark_migrate_lake() -%}
    {%- if not execute -%}
        {{- return('select 1') -}}
    {%- endif -%}
    {%- for checkpoint_name in ['int_timer_tasks_checkpointed', 'int_valve_states_checkpointed'] -%}
        {%- set checkpoint = load_relation(source('previous_run', checkpoint_name)) -%}
        {%- set vouched = tidemark_persisted_ancestors('model.' ~ project_name ~ '.' ~ checkpoint_name)
            if checkpoint is not none else [] -%}
        {%- for node in vouched
            if adapter.get_relation(node.database, node.schema, node.alias) is none -%}
            {%- if loop.first -%}
                {{- log('tidemark: ' ~ node.name ~ ' is missing, so ' ~ checkpoint
                    ~ ' vouches for nothing: dropped, the next plan replays every task', info=true) -}}
                {%- do adapter.drop_relation(checkpoint) -%}
            {%- endif -%}
        {%- endfor -%}
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

{#- The nodes of the tables and incremental models upstream of model `unique_id` in dbt's lineage
    (refs and `-- depends_on:` lines), itself excluded, by name. -#}
{% macro tidemark_persisted_ancestors(unique_id) -%}
    {%- set ns = namespace(frontier=[unique_id], found=[]) -%}
    {%- for _ in range(100) if ns.frontier -%}
        {%- set parents = [] -%}
        {%- for node_id in ns.frontier -%}
            {%- for parent in graph.nodes[node_id].depends_on.nodes
                if parent.startswith('model.') and parent not in ns.found -%}
                {%- do ns.found.append(parent) -%}
                {%- do parents.append(parent) -%}
            {%- endfor -%}
        {%- endfor -%}
        {%- set ns.frontier = parents -%}
    {%- endfor -%}
    {%- set nodes = [] -%}
    {%- for node_id in ns.found | sort
        if graph.nodes[node_id].config.materialized in ['table', 'incremental'] -%}
        {%- do nodes.append(graph.nodes[node_id]) -%}
    {%- endfor -%}
    {{- return(nodes) -}}
{%- endmacro %}
