"""Bronze that another tool wrote against the contract fails the build, saying where (contract
§1/§3): a repeated identity fails its staging test.

A channel outside the valve fails the valve UDTF, naming the task and seq: the Spark tests hold
its message (tests/spark/test_valve_udtf.py), and the deep test of the valve's bronze reach holds
it from `dbt run` (tests/e2e/test_watermarks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable, write_deltalake

from tests.e2e.warm import WarmLake
from tests.events import timer, watermark, write_jsonl
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e


def test_bronze_another_tool_wrote_wrong_fails_the_build_saying_where(tmp_path: Path) -> None:
    """Contract §1/§3: bronze holds each identity once. Staging does not deduplicate (decision
    0011), so a table another tool wrote with a repeat fails the staging view's uniqueness test
    (in `dbt build`, before any model reads the view); the same lake before the repeat passes."""
    lake = Lake.from_env(tmp_path / "lake")
    tests = ["test", "--select", "stg_bronze__timer_events stg_bronze__watermark_events"]
    unique = "tidemark_unique_combination_stg_bronze__timer_events_job_id"
    events = [
        timer(1),
        timer(2, action="end"),
        watermark(3, channel_index=0, num_channels=2, watermark_ms=10),
        watermark(4, channel_index=1, num_channels=2, watermark_ms=20),
    ]
    with WarmLake(lake) as warm:
        warm.tidemark("ingest", str(write_jsonl(tmp_path / "events.jsonl", events))).check()
        passed = warm.dbt(*tests).check()
        assert f"PASS {unique}" in passed.stdout, passed.stdout
        table = lake.bronze_table("timer_events")
        write_deltalake(
            str(table), DeltaTable(str(table)).to_pyarrow_table().slice(0, 1), mode="append"
        )
        failed = warm.dbt(*tests)
        assert failed.returncode == 1, failed.stdout
        assert f"FAIL 1 {unique}" in failed.stdout, failed.stdout
