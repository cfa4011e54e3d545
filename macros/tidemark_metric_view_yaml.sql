{#-
    The body of the Spark metric view (`WITH METRICS LANGUAGE YAML`, version 0.1) of the semantic
    model `semantic_model_name`, generated from the semantic layer in dbt's `graph` at execution
    time (no warehouse query): the metric view materialization wraps it in one
    CREATE OR REPLACE VIEW statement (docs/decisions/0016-metric-views.md).

    - source: the semantic model's model, left-joined to every semantic model whose primary
      entity is one of its foreign entities (MetricFlow's join: `vertex` brings `vertex_name` from
      `vertices` on dim_vertices; no match gives NULL). `relations` are the model's `ref()`s of
      those models, so dbt's lineage shows every model the view reads; one missing is an error.
    - dimensions: the semantic model's dimensions (a time dimension at its own grain), the joined
      models' categorical dimensions, and the agg time dimension at second, minute and hour grain
      as `second_at`, `minute_at`, `hour_at` (a time dimension of that name and grain, such as
      the marts' partition column `hour_at`, is used as it is, so a filter on it prunes).
    - measures: every metric whose measures all come from this semantic model, under the metric's
      name (tidemark_metric_sql); a metric that mixes semantic models is an error.

    `semantic_models` and `metrics` default to `graph`'s; a test passes its own (lists of dicts of
    the same shape).
-#}
{% macro tidemark_metric_view_yaml(semantic_model_name, relations, semantic_models=none, metrics=none) -%}
    {%- if not execute and semantic_models is none -%}
        {{- return('') -}}
    {%- endif -%}
    {%- set semantic_models = semantic_models if semantic_models is not none else graph.semantic_models.values() | list -%}
    {%- set metrics = metrics if metrics is not none else graph.metrics.values() | list -%}
    {%- set where = "metric view of semantic model '" ~ semantic_model_name ~ "': " -%}

    {%- set models_by_name, metrics_by_name, measures = {}, {}, {} -%}
    {%- for model in semantic_models -%}
        {%- do models_by_name.update({model.name: model}) -%}
        {%- for measure in model.measures or [] -%}
            {%- do measures.update({measure.name: {'measure': measure, 'semantic_model': model.name}}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- for metric in metrics -%}
        {%- do metrics_by_name.update({metric.name: metric}) -%}
    {%- endfor -%}
    {%- set base = models_by_name.get(semantic_model_name) -%}
    {%- if base is none -%}
        {{- exceptions.raise_compiler_error(where ~ "no such semantic model") -}}
    {%- endif -%}

    {#- The relation of a semantic model's model among `relations` (matched by identifier), as
        the table itself: under `dbt run --empty` a ref() renders as an empty subquery, and a
        view reads no rows while it is created. -#}
    {%- set relation_by_alias = {} -%}
    {%- for relation in relations -%}
        {%- do relation_by_alias.update({relation.identifier: api.Relation.create(
            database=relation.database, schema=relation.schema, identifier=relation.identifier
        )}) -%}
    {%- endfor -%}
    {%- set relation_of = {} -%}
    {%- for model in [base] + semantic_models -%}
        {%- set alias = model.node_relation.alias -%}
        {%- do relation_of.update({model.name: relation_by_alias.get(alias)}) -%}
    {%- endfor -%}
    {%- if relation_of[base.name] is none -%}
        {{- exceptions.raise_compiler_error(where ~ "it reads " ~ base.node_relation.alias
            ~ ": pass ref('" ~ base.node_relation.alias ~ "') in the model's relations") -}}
    {%- endif -%}

    {#- Dimensions of the semantic model itself: categorical first, then time (below). -#}
    {%- set dimensions, times = [], [] -%}
    {%- set time_dimensions = {} -%}
    {%- for dimension in base.dimensions or [] -%}
        {%- set expr = (dimension.expr if dimension.expr is not none else dimension.name) | string | trim -%}
        {%- set column = {'name': dimension.name, 'expr': expr,
            'comment': 'dimension: ' ~ (dimension.description or dimension.name) | trim} -%}
        {%- if dimension.type == 'time' -%}
            {%- do time_dimensions.update({dimension.name: {'expr': expr,
                'grain': dimension.type_params.time_granularity, 'column': column}}) -%}
        {%- else -%}
            {%- do dimensions.append(column) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set agg_name = (base.defaults or {}).get('agg_time_dimension') -%}
    {%- if agg_name not in time_dimensions -%}
        {{- exceptions.raise_compiler_error(where ~ "its defaults.agg_time_dimension '" ~ agg_name
            ~ "' is not one of its time dimensions") -}}
    {%- endif -%}
    {%- set agg_time = time_dimensions[agg_name] -%}
    {%- set grains = ['second', 'minute', 'hour'] -%}
    {%- if agg_time.grain not in grains -%}
        {{- exceptions.raise_compiler_error(where ~ "its agg time dimension '" ~ agg_name
            ~ "' has the grain " ~ agg_time.grain ~ ": the views offer second, minute and hour") -}}
    {%- endif -%}
    {%- for grain in grains[grains.index(agg_time.grain):] -%}
        {%- set name = grain ~ '_at' -%}
        {%- set own = time_dimensions.get(name) -%}
        {%- if own is not none and own.grain != grain -%}
            {{- exceptions.raise_compiler_error(where ~ "its time dimension '" ~ name ~ "' has the grain "
                ~ own.grain ~ ", not " ~ grain) -}}
        {%- endif -%}
        {%- set expr = own.expr if own is not none else agg_time.expr if grain == agg_time.grain
            else "date_trunc('" ~ grain | upper ~ "', " ~ agg_time.expr ~ ")" -%}
        {%- do times.append({'name': name, 'expr': expr,
            'comment': 'dimension: ' ~ agg_name ~ ' to the ' ~ grain ~ ' (UTC timestamp)'}) -%}
    {%- endfor -%}
    {%- for name, time in time_dimensions.items() if name not in times | map(attribute='name') | list -%}
        {%- do times.append(time.column) -%}
    {%- endfor -%}

    {#- Joins: each foreign entity whose primary semantic model exists (MetricFlow's left join). -#}
    {%- set joins, joined = [], [] -%}
    {%- for entity in base.entities or [] if entity.type == 'foreign' -%}
        {%- for other in semantic_models if other.name != base.name -%}
            {%- set primary = (other.entities or []) | selectattr('type', 'equalto', 'primary') | selectattr('name', 'equalto', entity.name) | list -%}
            {%- if primary -%}
                {%- if relation_of[other.name] is none -%}
                    {{- exceptions.raise_compiler_error(where ~ "entity '" ~ entity.name ~ "' joins "
                        ~ other.node_relation.alias ~ " (semantic model '" ~ other.name ~ "'): pass ref('"
                        ~ other.node_relation.alias ~ "') in the model's relations") -}}
                {%- endif -%}
                {%- set columns = [] -%}
                {%- for dimension in other.dimensions or [] if dimension.type == 'categorical' -%}
                    {%- if dimension.name in (dimensions + times + joined) | map(attribute='name') | list -%}
                        {{- exceptions.raise_compiler_error(where ~ "dimension '" ~ dimension.name
                            ~ "' of joined semantic model '" ~ other.name ~ "' has the name of one of its own") -}}
                    {%- endif -%}
                    {%- set expr = dimension.expr if dimension.expr is not none else dimension.name -%}
                    {%- do columns.append({'name': dimension.name, 'expr': expr | string | trim}) -%}
                    {%- do joined.append({'name': dimension.name, 'expr': dimension.name,
                        'comment': 'dimension: ' ~ (dimension.description or dimension.name) | trim
                        ~ ' (' ~ other.name ~ ' through entity ' ~ entity.name ~ '; NULL when it has no match)'}) -%}
                {%- endfor -%}
                {%- do joins.append({'entity': entity.name,
                    'key': (entity.expr or entity.name) | string | trim,
                    'other_key': (primary[0].expr or primary[0].name) | string | trim,
                    'relation': relation_of[other.name], 'columns': columns}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}

    {#- Measures: the metrics of this semantic model, by name. -#}
    {%- set view_measures = [] -%}
    {%- for metric in metrics | sort(attribute='name') -%}
        {%- set homes = [] -%}
        {%- for input in metric.type_params.input_measures or [] -%}
            {%- set found = measures.get(input.name) -%}
            {%- if found is not none and found.semantic_model not in homes -%}
                {%- do homes.append(found.semantic_model) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if base.name in homes -%}
            {%- if homes | length > 1 -%}
                {{- exceptions.raise_compiler_error("metric '" ~ metric.name ~ "' combines measures of "
                    ~ "semantic models " ~ homes | join(' and ') ~ ": a metric view reads one semantic model") -}}
            {%- endif -%}
            {%- set expr = tidemark_metric_sql(metric.name, metrics_by_name, measures) -%}
            {%- if expr | length > 1024 -%}
                {{- exceptions.raise_compiler_error("metric '" ~ metric.name ~ "': its expression has "
                    ~ expr | length ~ " characters, and Spark 4.2 keeps at most 1024 per metric view "
                    ~ "column (it then fails with an unrelated message)") -}}
            {%- endif -%}
            {%- do view_measures.append({'name': metric.name, 'expr': expr,
                'comment': 'measure: ' ~ (metric.label or metric.name) ~ ('. ' ~ metric.description | trim if metric.description else '')}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not view_measures -%}
        {{- exceptions.raise_compiler_error(where ~ "no metric of the semantic layer reads it") -}}
    {%- endif -%}

    {%- set yaml -%}
# Generated by tidemark_metric_view_yaml from semantic model {{ base.name }}
# ({{ base.original_file_path or 'the semantic layer' }}): edit that, not this.
version: "0.1"
source: |
  select
      base.*{% for join in joins %}{% for column in join.columns %},
      {{ join.entity }}.{{ join.entity }}__{{ column.name }} as {{ column.name }}{% endfor %}{% endfor %}
  from {{ relation_of[base.name] }} as base
{%- for join in joins %}
  left join (
      select
          {{ join.other_key }} as {{ join.entity }}__key{% for column in join.columns %},
          {{ column.expr }} as {{ join.entity }}__{{ column.name }}{% endfor %}
      from {{ join.relation }}
  ) as {{ join.entity }}
      on {{ join.key }} = {{ join.entity }}.{{ join.entity }}__key
{%- endfor %}
dimensions:
{%- for column in dimensions + joined + times %}
  # {{ column.comment | replace('\n', ' ') }}
  - name: {{ tojson(column.name) }}
    expr: {{ tojson(column.expr) }}
{%- endfor %}
measures:
{%- for column in view_measures %}
  # {{ column.comment | replace('\n', ' ') }}
  - name: {{ tojson(column.name) }}
    expr: {{ tojson(column.expr) }}
{%- endfor %}
    {%- endset -%}
    {{- return(yaml | trim) -}}
{%- endmacro %}
