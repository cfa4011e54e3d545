"""Spark's cache of compiled query code, as tidemark's session sets it up (decision 0007)."""

from __future__ import annotations


def _compiled_again(spark, constant: int, with_number: bool) -> int:
    """Classes compiled for a query that holds a pipeline compiled just before, under another
    stage number (it comes after another pipeline of the query)."""
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
    pipeline = (
        f"select id % 13 as k, sum(id * {constant}) as v from range(5000) "
        f"where id % {constant} != 3 group by id % 13"
    )
    shifted = (
        f"select * from (select max(id) as m from range(50) where id != {constant}) "
        f"cross join ({pipeline})"
    )
    spark.conf.set("spark.sql.codegen.useIdInClassName", str(with_number).lower())
    spark.sql(pipeline).collect()
    before = metrics.METRIC_COMPILATION_TIME().getCount()
    spark.sql(shifted).collect()
    return int(metrics.METRIC_COMPILATION_TIME().getCount() - before)


def test_a_pipeline_numbered_otherwise_reuses_its_compiled_class(spark) -> None:
    """With the stage number in the class name (Spark's default) the same pipeline is compiled
    again under its new number; adaptive execution numbers stages in the order it plans them, so
    every warm build compiled 21 to 49 classes again. tidemark's session leaves the number out."""
    default = spark.conf.get("spark.sql.codegen.useIdInClassName")
    assert default == "false"
    try:
        # Distinct constants: no query reuses another's classes but for the parts without one,
        # which the first call compiles for both.
        _compiled_again(spark, 7_907, with_number=False)
        without_number = _compiled_again(spark, 7_919, with_number=False)
        with_number = _compiled_again(spark, 7_927, with_number=True)
    finally:
        spark.conf.set("spark.sql.codegen.useIdInClassName", default)
    assert with_number >= without_number + 2  # the pipeline's two stages
