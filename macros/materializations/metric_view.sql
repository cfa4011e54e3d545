{#-
    Materialization `metric_view`: the model's compiled code is the YAML body of a Spark metric
    view (tidemark_metric_view_yaml), created WITH METRICS LANGUAGE YAML. A `# ...` comment line
    right above a column's `- name:` becomes that column's comment (DESCRIBE TABLE shows
    "measure: ..." or "dimension: ..."), and the model's description the view's comment.

    Spark 4.2.0 ignores OR REPLACE for metric views (CreateMetricViewCommand creates with only
    ignoreIfExists: an existing view fails with TABLE_OR_VIEW_ALREADY_EXISTS) and has no ALTER
    VIEW ... AS for them. So the view carries the MD5 of its whole definition in the table
    property `tidemark.definition_md5`, and a build
    - leaves a view whose definition is unchanged alone (every scheduled build: a BI query never
      finds it missing; the cost is one SHOW TBLPROPERTIES);
    - creates a missing view with one statement;
    - replaces a changed one by creating the new definition beside it (`<name>__tidemark_new`, so
      a definition Spark refuses fails there and the old view stays), dropping the old one and
      renaming the new one: a BI query in the moment between the drop and the rename finds no
      view (decision 0016).
    Nothing is queried while compiling. Spark only (adapter='spark'): metric views are Spark's
    own syntax.
-#}
{% materialization metric_view, adapter='spark' %}
    {%- set target_relation = this.incorporate(type='view') -%}
    {%- set staging_relation = this.incorporate(path={'identifier': this.identifier ~ '__tidemark_new'}, type='view') -%}
    {%- set body = fromyaml(sql) or {} -%}
    {%- set comments = {} -%}
    {%- for comment, name in modules.re.findall('(?m)^  # (.*)\\n  - name: ("[^"\\n]*")$', sql) -%}
        {%- do comments.update({fromjson(name): comment}) -%}
    {%- endfor -%}
    {%- set columns = (body.get('dimensions') or []) + (body.get('measures') or []) -%}
    {%- set head_clauses -%}
        {%- if columns %} (
            {%- for column in columns %}
            `{{ column.name }}`{% if column.name in comments %} comment '{{ comments[column.name] | replace('\\', '\\\\') | replace("'", "\\'") }}'{% endif %}{{ ',' if not loop.last }}
            {%- endfor %}
        )
        {%- endif %}
        {%- if model.description %}
        comment '{{ model.description | trim | replace('\\', '\\\\') | replace("'", "\\'") }}'
        {%- endif %}
    {%- endset -%}
    {%- set body_clauses -%}
        with metrics
        language yaml
        as $$
{{ sql }}
$$
    {%- endset -%}
    {%- set md5 = local_md5(head_clauses ~ body_clauses) -%}
    {%- set create -%}
        {{ head_clauses }}
        tblproperties ('tidemark.definition_md5' = '{{ md5 }}')
        {{ body_clauses }}
    {%- endset -%}

    {{ run_hooks(pre_hooks) }}
    {%- set existing = load_cached_relation(this) -%}
    {%- if existing is none -%}
        {%- call statement('main') -%}
            create view {{ target_relation }} {{ create }}
        {%- endcall -%}
    {%- else -%}
        {%- set stored = run_query("show tblproperties " ~ existing ~ " ('tidemark.definition_md5')") -%}
        {%- if stored.rows | length == 1 and stored.rows[0][1] == md5 -%}
            {{ log(this ~ ': definition unchanged, view kept', info=False) }}
            {%- call statement('main') -%}
                show tblproperties {{ existing }} ('tidemark.definition_md5')
            {%- endcall -%}
        {%- else -%}
            {%- do run_query('drop view if exists ' ~ staging_relation) -%}
            {%- do run_query('create view ' ~ staging_relation ~ ' ' ~ create) -%}
            {%- do adapter.drop_relation(existing) -%}
            {%- call statement('main') -%}
                alter view {{ staging_relation }} rename to {{ target_relation }}
            {%- endcall -%}
        {%- endif -%}
    {%- endif -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
