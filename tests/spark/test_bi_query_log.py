"""tidemark.spark.BiQueryLog: a BI client's failed statement in one log line, and the same
failure again within a minute counted instead of logged (issue 64). The whole path, a Thrift
client's failed query in the log of a server, is tests/e2e/test_serve.py's."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark

LINE = (
    "BI query failed (TABLE_OR_VIEW_NOT_FOUND): select count(*) from tidemark.fct_subtask_seconds"
)


def test_the_same_failure_within_a_minute_is_counted_and_said_once_a_minute(spark) -> None:
    log = spark._jvm.tidemark.spark.BiQueryLog()
    assert log.failed(LINE, 1_000) == LINE
    assert log.failed(LINE, 2_000) is None
    assert log.failed(LINE, 60_999) is None
    other = LINE.replace("TABLE_OR_VIEW_NOT_FOUND", "PARSE_SYNTAX_ERROR")
    assert log.failed(other, 3_000) == other  # another failure is its own line
    assert list(log.expired(60_999)) == []  # the first minute is not over
    assert list(log.expired(61_000)) == [f"{LINE} (2 more like it in the minute before)"]
    assert list(log.expired(63_000)) == []  # `other` never came again: nothing more to say
    # the count was the failure's line of its next minute: a repeat in that minute is counted
    assert log.failed(LINE, 70_000) is None
    assert list(log.expired(120_999)) == []
    assert list(log.expired(121_000)) == [f"{LINE} (1 more like it in the minute before)"]
    # a failure that keeps coming is one line a minute, however often it comes
    for at in range(122_000, 181_000, 1_000):
        assert log.failed(LINE, at) is None
    # ... said by the first failure after the minute when it comes before the next count
    assert log.failed(LINE, 181_500) == f"{LINE} (59 more like it in the minute before)"
    # a minute with no repeat ends the count; the failure is logged again when it comes back
    assert list(log.expired(241_500)) == []
    assert log.failed(LINE, 250_000) == LINE


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
