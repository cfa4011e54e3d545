"""Temporary views keep their analysed plan in tidemark's own session only (decision 0014)."""

from __future__ import annotations

from tidemark.spark.session import STORE_VIEW_PLANS


def _analysed_again(spark, view: str) -> int:
    """How often Spark's analyser ran its resolution rules while planning a read of ``view``
    (a view kept as SQL text is parsed and resolved again; a kept plan is not)."""
    executor = spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
    executor.resetMetrics()
    spark.sql(f"select count(*) from {view}").collect()
    metrics = executor.dumpTimeSpent()
    # "ResolveRelations" runs once per analysis; its line gives the number of runs.
    line = next(
        li
        for li in metrics.splitlines()
        if li.strip().startswith("org.apache.spark.sql.catalyst.analysis.Analyzer$ResolveRelations")
    )
    return int(line.split()[-1])


def test_tidemarks_session_keeps_view_plans_and_new_sessions_do_not(spark) -> None:
    """dbt's unit tests and dbt-spark's incremental models read a temporary view of a model right
    after making it: kept as a plan, the model is analysed once. A new session starts from
    Spark's configuration and keeps Spark's default (the Thrift server, whose BI tools share
    tidemark's session, sets it back: tests/e2e/test_serve.py)."""
    assert spark.conf.get(STORE_VIEW_PLANS) == "true"
    assert spark.newSession().conf.get(STORE_VIEW_PLANS) == "false"

    table = "default.view_plans_source"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} using parquet as select id from range(10)")
    spark.sql(f"create or replace temporary view kept_plan as select id * 2 as x from {table}")
    other = spark.newSession()
    other.sql(f"create or replace temporary view kept_text as select id * 2 as x from {table}")
    try:
        # a kept plan: reading the view resolves only the outer query's one relation (the view)
        assert _analysed_again(spark, "kept_plan") < _analysed_again(other, "kept_text")
        # ... and still reads the table's rows as they are now
        spark.sql(f"insert into {table} select 10")
        assert spark.sql("select count(*) as n from kept_plan").first().n == 11
    finally:
        spark.sql(f"drop table {table}")
