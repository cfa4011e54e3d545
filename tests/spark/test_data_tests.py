"""The project's generic data tests (macros/tests/), run as dbt runs them: their SQL on Spark,
one failing row per offending row (dbt counts the rows)."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest

pytestmark = pytest.mark.spark

TESTS = Path(__file__).resolve().parents[2] / "macros" / "tests"


def generic_test_sql(name: str, model: str, **arguments: object) -> str:
    """The SQL of the generic test ``name`` for ``model``: its ``{% test %}`` block's body,
    rendered with plain Jinja (these tests use no dbt context)."""
    text = (TESTS / f"{name}.sql").read_text()
    body = re.search(r"{%\s*test\s+\w+\([^)]*\)\s*%}(.*){%\s*endtest\s*%}", text, re.S)
    assert body, f"{name}.sql has no test block"
    return jinja2.Environment().from_string(body.group(1)).render(model=model, **arguments)


def test_not_null_fails_once_per_row_and_names_its_null_columns(spark) -> None:
    spark.sql(
        "select * from values (1, 'a', 10), (2, null, 20), (3, null, null), (4, 'd', 40) "
        "as t(id, name, value)"
    ).createOrReplaceTempView("some_model")
    sql = generic_test_sql("tidemark_not_null", "some_model", columns=["id", "name", "value"])
    failures = {row["id"]: row["null_columns"] for row in spark.sql(sql).collect()}
    assert failures == {2: ["name"], 3: ["name", "value"]}
    clean = generic_test_sql("tidemark_not_null", "some_model", columns=["id"])
    assert spark.sql(clean).collect() == []
