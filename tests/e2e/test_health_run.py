"""`tidemark run` records every cycle in tidemark.run_log, and `tidemark status` reads it while
the run holds the lake (contract §7 "health"). Deep: a real run builds, as a user runs it (a
JVM, a parse and a build, two minutes on two cores, and a `tidemark sql` after it); `make
test` holds the recorder with a fake dbt (tests/unit/test_health.py) and the insert macro, the
hook and status on the demo lake (tests/e2e/test_health.py)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.e2e.harness import TidemarkRun, tidemark, warehouse_rows
from tests.events import timer, write_jsonl
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e


def _idle_seconds(first: int, last: int) -> list[dict]:
    events = []
    for second in range(first, last):
        events.append(timer(2 * second, ts_ms=1_000 * second + 250, action="start"))
        events.append(timer(2 * second + 1, ts_ms=1_000 * second + 750, action="end"))
    return events


def _status(lake: Lake) -> dict[str, list[dict]]:
    result = tidemark("status", "--format", "jsonl", lake=lake).check()
    assert "Traceback" not in result.stderr
    sections: dict[str, list[dict]] = {}
    for line in result.stdout.splitlines():
        record = json.loads(line)
        sections.setdefault(record.pop("section"), []).append(record)
    return sections


@pytest.mark.deep
def test_run_records_ok_nothing_new_and_failed_cycles_and_status_reads_them_meanwhile(
    tmp_path: Path, lake: Lake
) -> None:
    feed = tmp_path / "feed"
    feed.mkdir()
    write_jsonl(feed / "a.jsonl", _idle_seconds(0, 30))
    run = TidemarkRun(
        lake, str(feed), "--every", "2",
        "--dbt", "--select +fct_subtask_seconds --exclude-resource-type test",
    )  # fmt: skip
    next_cycle, seen = run.next_cycle, run.seen
    with run:
        assert ": ok: 60 events landed" in next_cycle(), "".join(seen)
        # The run holds the metastore: status reads the lake's files.
        status = _status(lake)
        first = status["cycles"][-1]
        assert (first["recorded_by"], first["outcome"], first["events_landed"]) == (
            "tidemark run", "ok", 60,
        )  # fmt: skip
        assert first["build_s"] > 0 and first["error_message"] is None
        landed = DeltaTable(str(lake.bronze_table("timer_events"))).to_pyarrow_table()
        assert max(landed["ts_ms"].to_pylist()) == 29_750
        seconds = warehouse_rows(lake, "tidemark", "fct_subtask_seconds")
        newest = max(r["second_start_ms"] for r in seconds)
        (row,) = [r for r in status["freshness"] if r["mart_name"] == "fct_subtask_seconds"]
        assert (row["job_id"], row["landed_at"], row["newest_second_at"], row["lag_s"]) == (
            "job", "1970-01-01T00:00:29.750Z", "1970-01-01T00:00:29Z", (29_000 - newest) // 1000,
        )  # fmt: skip
        assert {r["area"] for r in status["disk"]} == {"bronze", "marts", "intermediate", "lake"}

        while "no build (nothing new)" not in next_cycle():
            pass
        feed.rename(tmp_path / "gone")
        while "FAILED" not in next_cycle():
            pass
        run.process.send_signal(signal.SIGTERM)
        assert run.process.wait(timeout=120) == 1  # the last cycle failed
        seen += run.process.stdout.readlines() if run.process.stdout else []

    # What a BI tool reads: the same rows through Spark SQL, next to plain max() over the mart
    # and bronze.
    query = (
        "select 'cycle' as kind, unix_millis(cycle_started_at) as at_ms, outcome, error_message, "
        "events_landed, lake_bytes is not null as has_bytes, null as value "
        "from tidemark.run_log where row_kind = 'cycle' "
        "union all select 'mart', null, null, null, null, null, max(second_start_ms) "
        "from tidemark.fct_subtask_seconds "
        "union all select 'bronze', null, null, null, null, null, max(ts_ms) "
        "from bronze.timer_events "
        "union all select 'recorded', null, null, null, null, null, newest_second_ms "
        "from tidemark.run_log where row_kind = 'freshness' and mart_name = 'fct_subtask_seconds'"
    )
    found = tidemark("sql", query, "--format", "jsonl", lake=lake).check().stdout.splitlines()
    rows = [json.loads(line) for line in found]
    cycles = sorted((r for r in rows if r["kind"] == "cycle"), key=lambda r: r["at_ms"])
    assert len(cycles) == sum(line.startswith("tidemark run: cycle ") for line in seen)
    outcomes = [c["outcome"] for c in cycles]
    assert outcomes[0] == "ok" and "nothing new" in outcomes and outcomes[-1] == "failed"
    assert cycles[0]["has_bytes"] and cycles[0]["events_landed"] == 60
    failed = [c for c in cycles if c["outcome"] == "failed"]
    assert {c["error_message"] for c in failed} == {f"{feed}: no such file or folder"}
    values = {kind: {r["value"] for r in rows if r["kind"] == kind} for kind in
              ("mart", "bronze", "recorded")}  # fmt: skip
    assert values == {"mart": {newest}, "bronze": {29_750}, "recorded": {newest}}
