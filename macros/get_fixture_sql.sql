{#-
    dbt's own unit-test fixture macros, overridden for one change: a fixture's rows are one inline
    table (`select * from values (...), (...) as fixture(...)`), not one `select` per row joined
    by `union all`. Spark folds an inline table of literals into one local relation while
    analysing; a union is a branch per row that every optimizer rule walks again after each CTE
    is inlined, so a 12-row fixture cost a unit test 10 s of planning instead of 0.5 s
    (docs/decisions/0014-what-make-test-runs.md). Rows, columns, types, the defaults for columns
    a row leaves out (null) and dbt's errors are dbt's; the model's SQL is untouched.
-#}
{% macro get_fixture_sql(rows, column_name_to_data_types) %}
{%- set column_name_to_quoted = {} -%}
{%- if not column_name_to_data_types -%}
{#-- Use defer_relation IFF it is available in the manifest and 'this' is missing from the database --#}
{%-   set this_or_defer_relation = defer_relation if (defer_relation and not load_relation(this)) else this -%}
{%-   set columns_in_relation = adapter.get_columns_in_relation(this_or_defer_relation) -%}
{%-   set column_name_to_data_types = {} -%}
{%-   for column in columns_in_relation -%}
{%-     do column_name_to_data_types.update({column.name | lower: column.data_type}) -%}
{%-     do column_name_to_quoted.update({column.name | lower: column.quoted}) -%}
{%-   endfor -%}
{%- endif -%}
{%- if not column_name_to_data_types -%}
    {{ exceptions.raise_compiler_error("Not able to get columns for unit test '" ~ model.name ~ "' from relation " ~ this ~ " because the relation doesn't exist") }}
{%- endif -%}
{%- set default_row = {} -%}
{%- for column_name, column_type in column_name_to_data_types.items() -%}
{%-   do default_row.update({column_name: (safe_cast("null", column_type) | trim)}) -%}
{%- endfor -%}
{%- set quoted = [] -%}
{%- for column_name in default_row -%}
{%-   do quoted.append(column_name_to_quoted.get(column_name) or adapter.quote(column_name)) -%}
{%- endfor -%}
{{ validate_fixture_rows(rows, row_number) }}
-- Fixture for {{ model.name }}
{% if rows | length == 0 -%}
select {% for column_name, column_value in default_row.items() -%}
    {{ column_value }} as {{ quoted[loop.index0] }}{{ ', ' if not loop.last }}
{%- endfor %} limit 0
{%- else -%}
{{ tidemark_inline_table(rows, default_row, column_name_to_data_types, quoted) }}
{%- endif -%}
{% endmacro %}


{% macro get_expected_sql(rows, column_name_to_data_types, column_name_to_quoted) %}
{%- if rows | length == 0 -%}
    select * from dbt_internal_unit_test_actual
    limit 0
{%- else -%}
{#-  As dbt's: each row's values in the row's own order, named by the first row's columns. -#}
{%-   set quoted = [] -%}
{%-   for column_name in format_row(rows[0], column_name_to_data_types) -%}
{%-     do quoted.append(column_name_to_quoted[column_name]) -%}
{%-   endfor -%}
{{ tidemark_inline_table(rows, {}, column_name_to_data_types, quoted) }}
{%- endif -%}
{% endmacro %}


{#- `select * from values ... as fixture(...)`, a row per fixture row: the row's values, cast as
    dbt casts them, over `defaults` (each column's null, in the relation's column order). -#}
{% macro tidemark_inline_table(rows, defaults, column_name_to_data_types, quoted) -%}
select * from values
{%- for row in rows %}
{%-   set values = defaults.copy() -%}
{%-   do values.update(format_row(row, column_name_to_data_types)) %}
    ({{ values.values() | join(', ') }}){{ ',' if not loop.last }}
{%- endfor %}
    as fixture({{ quoted | join(', ') }})
{%- endmacro %}
