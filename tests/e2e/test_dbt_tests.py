"""dbt's own tests guarding the project, on a lake of their own without events: every unit test,
and the data tests that catch bronze another tool wrote against the contract.

A unit test reads its fixtures, not the lake, but dbt takes the column types of an input a
fixture leaves untyped from that input's table: the lake holds those tables without rows, made
by `dbt run --empty` (dbt's dry run, which this also holds working on a lake without events).
They are not on the demo lake, whose group is the suite's longest unit of work; one warm worker
serves both tests here (tests/conftest.py keeps them together).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable, write_deltalake

from tests.dbt_files import yaml_entries
from tests.e2e.conftest import CHANGED_VARS
from tests.e2e.harness import ROOT
from tests.e2e.warm import WarmLake
from tests.events import timer, watermark, write_jsonl
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmLake]:
    """A lake without events and its warm worker."""
    with WarmLake(Lake.from_env(tmp_path_factory.mktemp("scratch") / "lake")) as warm:
        yield warm


def unit_test_inputs() -> list[str]:
    """The models a unit test takes column types from (the project's `get_fixture_sql`): each
    model a test gives rows for, and the tested model where a test gives `this` (its table in an
    incremental run). A tested model no test reads this way needs no table."""
    inputs = set()
    for path, test in yaml_entries("unit_tests"):
        for given in test["given"]:
            if ref := re.fullmatch(r"ref\('(\w+)'\)", given["input"]):
                inputs.add(ref.group(1))
            elif given["input"] == "this":
                inputs.add(test["model"])
            else:  # bronze, whose views every lake has, or rows in SQL; another would go unbuilt
                assert given["input"].startswith("source('bronze', ") or (
                    given.get("format") == "sql"
                ), (path, given["input"])
    return sorted(inputs)


def test_unit_tests_pin_the_vars_they_assume(scratch: WarmLake) -> None:
    """Every dbt unit test, in one invocation, with every var changed: each test pins the vars
    its model reads (`overrides: vars:`), so a user's own vars never fail their build."""
    project = yaml.safe_load((ROOT / "dbt_project.yml").read_text())["vars"]
    assert set(CHANGED_VARS) == set(project), "a var was added: change it here too"
    assert all(CHANGED_VARS[v] != project[v] for v in project)
    changed = ("--vars", json.dumps(CHANGED_VARS))  # one parse of the project for both commands
    # The tables a unit test reads its inputs' types from, and what dbt builds them from.
    inputs = " ".join(f"+{model}" for model in unit_test_inputs())
    empty = scratch.dbt("run", "--empty", "--select", inputs, *changed).check()
    assert "ERROR=0" in empty.stdout and "SKIP=0" in empty.stdout, empty.stdout
    args = ("test", "--select", "test_type:unit", *changed)
    result = scratch.dbt(*args).check()
    assert "ERROR=0" in result.stdout and " PASS=" in result.stdout, result.stdout
    # The fixtures ran as inline tables (macros/get_fixture_sql.sql, decision 0014): a dbt that
    # stopped using the project's override would plan each given row as a union branch again.
    target = scratch.target(*args)
    test_path = "tidemark/models/intermediate/int_timer_rounds_replayed.yml"
    [compiled] = (target / "compiled" / test_path).glob("**/*_T5_T10_*.sql")
    sql = compiled.read_text()
    assert "-- Fixture for int_timer_tasks_planned\nselect * from values" in sql, sql[:2000]
    assert "union all\nselect cast(" not in sql
    # ... and the test's query read the model from the temporary view the project's unit
    # materialization made of it for this test (macros/materializations/unit.sql): the model's
    # SQL is not in it, so Spark analysed the model once.
    [run] = (target / "run" / test_path).glob("**/*_T5_T10_*.sql")
    actual = run.read_text().split("dbt_internal_unit_test_expected")[0]
    view = "int_timer_rounds_replayed_T5_T10_follow_each_jobs_flink_release__dbt_unit_"
    assert f"select * from {view}" in actual, actual[:2000]
    assert "-- Fixture for" not in actual


def test_bronze_another_tool_wrote_wrong_fails_the_build_saying_where(
    scratch: WarmLake, tmp_path: Path
) -> None:
    """Contract §1/§3: bronze holds each identity once. Staging does not deduplicate (decision
    0011), so a table another tool wrote with a repeat fails the staging view's uniqueness test
    (in `dbt build`, before any model reads the view); the same lake before the repeat passes.

    A channel outside the valve fails the valve UDTF, naming the task and seq: the Spark tests
    hold its message (tests/spark/test_valve_udtf.py), and the deep test of the valve's bronze
    reach holds it from `dbt run` (tests/e2e/test_watermarks.py)."""
    lake = scratch.lake
    tests = ["test", "--select", "stg_bronze__timer_events stg_bronze__watermark_events"]
    unique = "tidemark_unique_combination_stg_bronze__timer_events_job_id"
    events = [
        timer(1),
        timer(2, action="end"),
        watermark(3, channel_index=0, num_channels=2, watermark_ms=10),
        watermark(4, channel_index=1, num_channels=2, watermark_ms=20),
    ]
    scratch.tidemark("ingest", str(write_jsonl(tmp_path / "events.jsonl", events))).check()
    passed = scratch.dbt(*tests).check()
    assert f"PASS {unique}" in passed.stdout, passed.stdout
    table = lake.bronze_table("timer_events")
    write_deltalake(
        str(table), DeltaTable(str(table)).to_pyarrow_table().slice(0, 1), mode="append"
    )
    failed = scratch.dbt(*tests)
    assert failed.returncode == 1, failed.stdout
    assert f"FAIL 1 {unique}" in failed.stdout, failed.stdout
