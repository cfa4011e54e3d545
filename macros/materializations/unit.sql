{#-
    dbt's unit-test materialization, overridden for Spark for one change: Spark analyses the
    model once, not twice. dbt's own makes an empty temporary view of the model (`... where
    false limit 0`) only to learn its columns' types, then puts the model's SQL into the test's
    query again, which Spark analyses from the start; for the larger models that second analysis
    was 2 to 3 s of every test (decision 0014). Here the temporary view is the model itself and
    the test's query reads it: tidemark's Spark sessions keep a temporary view as its analysed
    plan (`spark.sql.legacy.storeAnalyzedPlanForView`, src/tidemark/spark/session.py), so the
    model is analysed once, when the view is made. On a Spark without that setting the view is
    analysed again where it is read, as dbt's own does. The expected rows, the comparison and its
    result are dbt's (`get_expected_sql`, `get_unit_test_sql`).
-#}
{%- materialization unit, adapter='spark' -%}

  {% set relations = [] %}
  {% set sql_header = config.get('sql_header') if flags.REQUIRE_SQL_HEADER_IN_TEST_CONFIGS else none %}

  {% set expected_rows = config.get('expected_rows') %}
  {% set expected_sql = config.get('expected_sql') %}
  {% set tested_expected_column_names = expected_rows[0].keys() if (expected_rows | length ) > 0 else get_columns_in_query(sql) %}

  {%- set target_relation = this.incorporate(type='table') -%}
  {#- `this` is named after the unit test; dbt runs tests side by side in one Spark session, and
      two models' tests may share a name: the test's unique id makes the view its own -#}
  {%- set temp_relation = make_temp_relation(target_relation, '__dbt_unit_' ~ local_md5(model.unique_id)[:10]) -%}
  {% do run_query(create_temporary_view(temp_relation, sql)) %}
  {%- set columns_in_relation = adapter.get_columns_in_relation(temp_relation) -%}
  {%- set column_name_to_data_types = {} -%}
  {%- set column_name_to_quoted = {} -%}
  {%- for column in columns_in_relation -%}
  {%-   do column_name_to_data_types.update({column.name|lower: column.data_type}) -%}
  {%-   do column_name_to_quoted.update({column.name|lower: column.quoted}) -%}
  {%- endfor -%}

  {%- set expected_column_names_quoted = [] -%}
  {%- for column_name in tested_expected_column_names -%}
  {%-   do expected_column_names_quoted.append(column_name_to_quoted[column_name|lower]) -%}
  {%- endfor -%}

  {% if not expected_sql %}
  {%   set expected_sql = get_expected_sql(expected_rows, column_name_to_data_types, column_name_to_quoted) %}
  {% endif %}
  {% set unit_test_sql = get_unit_test_sql('select * from ' ~ temp_relation, expected_sql, expected_column_names_quoted) %}

  {% call statement('main', fetch_result=True) -%}

    {% if sql_header %}{{ sql_header }}{% endif %}
    {{ unit_test_sql }}

  {%- endcall %}

  {% do adapter.drop_relation(temp_relation) %}

  {{ return({'relations': relations}) }}

{%- endmaterialization -%}
