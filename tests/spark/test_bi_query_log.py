"""tidemark.spark.BiQueryLog: a BI client's failed statement in one log line, and the same
failure again within ten minutes counted instead of logged (issue 64). The whole path, a Thrift
client's failed query in the log of a server, is tests/e2e/test_serve.py's."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark

LINE = (
    "BI query failed (TABLE_OR_VIEW_NOT_FOUND): select count(*) from tidemark.fct_subtask_seconds"
)


def test_the_same_failure_within_ten_minutes_is_counted_and_said_once_in_ten(spark) -> None:
    log = spark._jvm.tidemark.spark.BiQueryLog()
    assert log.failed(LINE, 10_000) == LINE
    assert log.failed(LINE, 20_000) is None
    assert log.failed(LINE, 609_990) is None
    other = LINE.replace("TABLE_OR_VIEW_NOT_FOUND", "PARSE_SYNTAX_ERROR")
    assert log.failed(other, 30_000) == other  # another failure is its own line
    assert list(log.expired(609_990)) == []  # the first ten minutes are not over
    assert list(log.expired(610_000)) == [f"{LINE} (2 more like it in the ten minutes before)"]
    assert list(log.expired(630_000)) == []  # `other` never came again: nothing more to say
    # the count was the failure's line of its next ten minutes: a repeat in them is counted
    assert log.failed(LINE, 700_000) is None
    assert list(log.expired(1_209_990)) == []
    assert list(log.expired(1_210_000)) == [f"{LINE} (1 more like it in the ten minutes before)"]
    # a failure that keeps coming is one line in ten minutes, however often it comes
    for at in range(1_220_000, 1_810_000, 10_000):
        assert log.failed(LINE, at) is None
    # ... said by the first failure after them when it comes before the next count
    assert log.failed(LINE, 1_815_000) == f"{LINE} (59 more like it in the ten minutes before)"
    # ten minutes with no repeat end the count; the failure is logged again when it comes back
    assert list(log.expired(2_415_000)) == []
    assert log.failed(LINE, 2_500_000) == LINE


def test_the_line_names_sparks_error_class_else_the_exception_and_cuts_the_statement(
    spark,
) -> None:
    log = spark._jvm.tidemark.spark.BiQueryLog
    message = "[TABLE_OR_VIEW_NOT_FOUND] The table or view `tidemark`.`x` cannot be found."
    assert log.errorClass(message, "org.apache...AnalysisException: ...") == (
        "TABLE_OR_VIEW_NOT_FOUND"
    )
    assert log.errorClass("[PARSE_SYNTAX_ERROR.WITH_DETAIL] near 'form'", None) == (
        "PARSE_SYNTAX_ERROR.WITH_DETAIL"
    )
    trace = "java.lang.IllegalStateException: closed\n\tat a.b.C.d(C.java:1)"
    assert log.errorClass("closed", trace) == "IllegalStateException"
    assert log.errorClass(None, None) == "error"
    statement = "select *\n  from   tidemark.fct_subtask_seconds\nwhere " + "x = 1 and " * 20
    shown = log.shown(statement)
    assert shown.startswith("select * from tidemark.fct_subtask_seconds where x = 1 and")
    assert len(shown) == 83 and shown.endswith("...")
