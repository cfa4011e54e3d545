"""dbt commands that plan but run nothing start no Spark: a fresh lake, no build."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import dbt
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e


def test_dbt_parse_needs_no_spark(lake: Lake) -> None:
    result = dbt("parse", lake=lake).check()
    assert "Spark" not in result.stderr
    assert not (lake.root / "metastore").exists()


def test_a_selection_runs_only_tests_it_can_build(lake: Lake) -> None:
    """`dbt build --select +fct_subtask_seconds` on a fresh lake: every test it selects reads only
    models the same selection builds (issue 10: with eager indirect selection, tests that also
    read fct_vertex_seconds and fct_subtask_flink_gauges ran against tables never built)."""
    listed = dbt(
        "ls", "--select", "+fct_subtask_seconds", "--output", "json",
        "--output-keys", "unique_id resource_type depends_on", lake=lake,
    ).check()  # fmt: skip
    nodes = [json.loads(line) for line in listed.stdout.splitlines() if line.startswith("{")]
    built = {n["unique_id"] for n in nodes if n["resource_type"] != "test"}
    tests = [n for n in nodes if n["resource_type"] == "test"]
    assert tests, "the selection runs no test at all, so this would prove nothing"
    unbuildable = {
        t["unique_id"]: sorted(
            p for p in t["depends_on"]["nodes"] if p.startswith("model.") and p not in built
        )
        for t in tests
    }
    assert {t: p for t, p in unbuildable.items() if p} == {}
