"""The dbt plugin starts Spark only for tidemark, the session method and commands that run SQL."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tidemark.spark.settings import needs_embedded_spark

SESSION = SimpleNamespace(type="spark", method="session")
THRIFT = SimpleNamespace(type="spark", method="thrift")


@pytest.mark.parametrize(
    ("project", "command", "credentials", "expected"),
    [
        ("tidemark", "build", SESSION, True),
        (
            "tidemark",
            "build",
            SimpleNamespace(type="spark", method=SimpleNamespace(value="session")),
            True,
        ),
        ("tidemark", "run", SESSION, True),
        ("tidemark", "test", SESSION, True),
        ("tidemark", "parse", SESSION, False),
        ("tidemark", "deps", SESSION, False),
        ("tidemark", "list", SESSION, False),
        ("tidemark", "freshness", SESSION, True),
        ("tidemark", "generate", SESSION, True),
        ("tidemark", "validate-configs", SESSION, False),
        ("tidemark", None, SESSION, False),
        ("tidemark", "build", THRIFT, False),
        ("tidemark", "build", SimpleNamespace(type="postgres"), False),
        ("tidemark", "build", None, False),
        ("another_project", "build", SESSION, False),
    ],
)
def test_when_spark_is_started(project, command, credentials, expected) -> None:
    assert needs_embedded_spark(project, command, credentials) is expected
