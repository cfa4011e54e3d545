"""Bronze that another tool wrote against the contract fails the build, saying where (contract
§1/§3): a repeated identity fails its staging test, a channel outside the valve fails the UDTF."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.e2e.warm import WarmLake
from tests.events import timer, watermark, write_jsonl
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e


def test_bronze_another_tool_wrote_wrong_fails_the_build_saying_where(tmp_path: Path) -> None:
    """Contract §1/§3: bronze holds each identity once. Staging does not deduplicate (decision
    0011), so a table another tool wrote with a repeat fails the staging view's uniqueness test,
    and nothing downstream is built from it; the same lake before the repeat passes. Ingest
    quarantines a channel outside the valve; one landed by other means fails `dbt run` in the
    valve UDTF, naming the task and seq. One lake and one warm worker for both."""
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

        path = lake.bronze_table("watermark_events")
        table = DeltaTable(str(path)).to_pyarrow_dataset().to_table()
        bad = table.slice(0, 1).to_pylist()[0]
        bad.update(seq=7, channel_index=5, line_number=99, ingest_id=bad["ingest_id"] + 1)
        write_deltalake(str(path), pa.Table.from_pylist([bad], schema=table.schema), mode="append")
        result = warm.dbt("run", "--select", "+int_valve_outputs_computed")
    assert result.returncode != 0
    message = (
        "tidemark_valve: task job_id='job' vertex_id='map' subtask_index=0 attempt=0 "
        "input_index=0 seq=7: channel 5 is outside [0, 2)"
    )
    assert message in result.stdout, result.stdout[-5000:]
