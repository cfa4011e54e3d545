{#-
    The aggregate SQL expression of the semantic layer's metric `metric_name`, as MetricFlow
    (0.213, Databricks renderer) computes it, for a Spark metric view measure
    (tidemark_metric_view_yaml; docs/decisions/0016-metric-views.md).

    `metrics`: metric name -> metric, as dbt's `graph.metrics` holds it; `measures`: measure name
    -> {'measure': the measure of its semantic model, 'semantic_model': that model's name}.

    - simple: the measure's aggregation of its `expr` (else its name). MetricFlow rewrites `count`
      to SUM(CASE WHEN expr IS NOT NULL THEN 1 ELSE 0 END) (SUM(1) for expr 1), `sum_boolean` to
      SUM(CASE WHEN expr THEN 1 ELSE 0 END) and `median` to the continuous 0.5 percentile, which
      Databricks renders PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY (expr)); an approximate
      discrete percentile is APPROX_PERCENTILE(expr, p). `fill_nulls_with` wraps it in COALESCE.
    - ratio: CAST(numerator AS DOUBLE) / CAST(NULLIF(denominator, 0) AS DOUBLE), each side its
      own metric aggregated (metricflow/sql/render/expr_renderer.py, visit_ratio_computation_expr).
    - derived: its `expr` with every input metric's name (or alias) replaced by that metric's
      expression in parentheses.
    Anything else (cumulative and conversion metrics, filters, offsets, joins to the time spine,
    semi-additive measures, the percentiles Databricks refuses) stops the build with a compiler
    error that names the metric and why.
-#}
{% macro tidemark_metric_sql(metric_name, metrics, measures) -%}
    {%- set metric = metrics.get(metric_name) -%}
    {%- if metric is none -%}
        {{- exceptions.raise_compiler_error(
            "tidemark_metric_sql: no metric named '" ~ metric_name ~ "' in the semantic layer") -}}
    {%- endif -%}
    {%- set params = metric.type_params -%}
    {%- set cannot = "metric '" ~ metric_name ~ "' (" ~ metric.type ~ ") cannot be a Spark metric view measure: " -%}
    {%- if metric.filter -%}
        {{- exceptions.raise_compiler_error(cannot ~ "it has a filter, which needs MetricFlow's "
            ~ "Jinja dimension references; put the condition in a measure's expr instead") -}}
    {%- endif -%}

    {%- if metric.type == 'simple' -%}
        {%- if params.metric_aggregation_params or not params.measure -%}
            {{- exceptions.raise_compiler_error(cannot ~ "only simple metrics over a measure "
                ~ "(type_params.measure) are translated") -}}
        {%- endif -%}
        {%- set input = params.measure -%}
        {%- if input.filter or input.join_to_timespine -%}
            {{- exceptions.raise_compiler_error(cannot ~ "its measure input has a filter or "
                ~ "join_to_timespine, which a metric view's aggregate over its own rows cannot express") -}}
        {%- endif -%}
        {%- set found = measures.get(input.name) -%}
        {%- if found is none -%}
            {{- exceptions.raise_compiler_error(cannot ~ "no semantic model has a measure named '"
                ~ input.name ~ "'") -}}
        {%- endif -%}
        {%- set measure = found.measure -%}
        {%- if measure.non_additive_dimension -%}
            {{- exceptions.raise_compiler_error(cannot ~ "measure '" ~ measure.name ~ "' is "
                ~ "semi-additive (non_additive_dimension), which aggregates only the rows at the "
                ~ "latest time of each group: a metric view measure cannot choose rows") -}}
        {%- endif -%}
        {%- set expr = measure.expr if measure.expr is not none else measure.name -%}
        {%- set expr = expr | string | trim -%}
        {%- set agg = measure.agg | lower -%}
        {%- set agg_params = measure.agg_params or {} -%}
        {%- if agg in ('sum', 'min', 'max') -%}
            {%- set sql = agg ~ '(' ~ expr ~ ')' -%}
        {%- elif agg == 'average' -%}
            {%- set sql = 'avg(' ~ expr ~ ')' -%}
        {%- elif agg == 'count_distinct' -%}
            {%- set sql = 'count(distinct ' ~ expr ~ ')' -%}
        {%- elif agg == 'count' -%}
            {%- set sql = 'sum(1)' if expr == '1' else 'sum(case when ' ~ expr ~ ' is not null then 1 else 0 end)' -%}
        {%- elif agg == 'sum_boolean' -%}
            {%- set sql = 'sum(case when ' ~ expr ~ ' then 1 else 0 end)' -%}
        {%- elif agg in ('median', 'percentile') -%}
            {%- set p = 0.5 if agg == 'median' else agg_params.percentile -%}
            {%- if p is none -%}
                {{- exceptions.raise_compiler_error(cannot ~ "percentile measure '" ~ measure.name
                    ~ "' has no agg_params.percentile") -}}
            {%- endif -%}
            {%- set discrete = agg == 'percentile' and agg_params.use_discrete_percentile -%}
            {%- set approximate = agg == 'percentile' and agg_params.use_approximate_percentile -%}
            {%- if discrete and approximate -%}
                {%- set sql = 'approx_percentile(' ~ expr ~ ', ' ~ p ~ ')' -%}
            {%- elif not discrete and not approximate -%}
                {%- set sql = 'percentile_cont(' ~ p ~ ') within group (order by (' ~ expr ~ '))' -%}
            {%- else -%}
                {{- exceptions.raise_compiler_error(cannot ~ "measure '" ~ measure.name ~ "' asks "
                    ~ "for an exact discrete or an approximate continuous percentile, which "
                    ~ "MetricFlow's Databricks renderer refuses too; use a continuous or an "
                    ~ "approximate discrete one") -}}
            {%- endif -%}
        {%- else -%}
            {{- exceptions.raise_compiler_error(cannot ~ "measure '" ~ measure.name
                ~ "' has the aggregation '" ~ agg ~ "', which tidemark_metric_sql does not know") -}}
        {%- endif -%}
        {%- if input.fill_nulls_with is not none -%}
            {%- set sql = 'coalesce(' ~ sql ~ ', ' ~ input.fill_nulls_with ~ ')' -%}
        {%- endif -%}
        {{- return(sql) -}}

    {%- elif metric.type in ('ratio', 'derived') -%}
        {%- set inputs = [params.numerator, params.denominator] if metric.type == 'ratio' else params.metrics -%}
        {%- set replacements = {} -%}
        {%- for input in inputs -%}
            {%- if input is none -%}
                {{- exceptions.raise_compiler_error(cannot ~ "a ratio needs a numerator and a denominator") -}}
            {%- endif -%}
            {%- if input.filter or input.offset_window or input.offset_to_grain -%}
                {{- exceptions.raise_compiler_error(cannot ~ "its input '" ~ input.name ~ "' has a "
                    ~ "filter or an offset, which a metric view's aggregate over its own rows cannot express") -}}
            {%- endif -%}
            {%- do replacements.update({input.alias or input.name: tidemark_metric_sql(input.name, metrics, measures)}) -%}
        {%- endfor -%}
        {%- if metric.type == 'ratio' -%}
            {%- set numerator = replacements[params.numerator.alias or params.numerator.name] -%}
            {%- set denominator = replacements[params.denominator.alias or params.denominator.name] -%}
            {{- return('cast(' ~ numerator ~ ' as double) / cast(nullif(' ~ denominator ~ ', 0) as double)') -}}
        {%- endif -%}
        {#- Derived: one pass over the expression's identifiers, so a replacement is never rescanned. -#}
        {%- set parts = modules.re.split('([A-Za-z_][A-Za-z0-9_]*)', params.expr | trim) -%}
        {%- set out = [] -%}
        {%- for part in parts -%}
            {%- do out.append('(' ~ replacements[part] ~ ')' if loop.index is even and part in replacements else part) -%}
        {%- endfor -%}
        {{- return(out | join('')) -}}

    {%- else -%}
        {{- exceptions.raise_compiler_error(cannot ~ "a " ~ metric.type ~ " metric is computed "
            ~ "over the time spine or across events (a running window, a conversion), not as one "
            ~ "aggregate of a group's rows; query it with MetricFlow (mf query) where it has an engine") -}}
    {%- endif -%}
{%- endmacro %}
