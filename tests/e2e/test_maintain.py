"""`tidemark maintain` on a lake of several days, as a user runs it between builds (issue 44):
bronze, the marts and the incremental state keep what the retention says; a late event older
than bronze's retention is quarantined; an incremental build on the maintained lake equals a full
refresh over the same bronze for the retained range. Deep: five `dbt run`s (decision 0019)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from tests.e2e.harness import dbt, tidemark, warehouse_tables
from tests.events import timer, vertex, watermark, write_jsonl
from tidemark.lake import Lake
from tidemark.maintain.retention import DAY_MS

pytestmark = [pytest.mark.e2e, pytest.mark.deep]

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
RETENTION = ["--keep-bronze-days", "2", "--keep-task-marts-days", "3",
             "--keep-vertex-marts-days", "4"]  # fmt: skip
SELECT = ["--select", "+fct_subtask_seconds", "+fct_vertex_seconds", "+fct_watermark_seconds",
          "--exclude", "metricflow_time_spine"]  # fmt: skip


def _day(day: int, late_ms: int = 0) -> list[dict]:
    """One short attempt of a task on ``day``: idle for two seconds, and its watermarks."""
    at = T0 + day * DAY_MS + late_ms
    seq = 0
    found = []
    for second in range(4):
        found.append(timer(seq, attempt=day, ts_ms=at + second * 1000, action="start"))
        found.append(timer(seq + 1, attempt=day, ts_ms=at + second * 1000 + 400, action="end"))
        found.append(watermark(seq + 2, attempt=day, ts_ms=at + second * 1000 + 500,
                               watermark_ms=at + second * 1000))  # fmt: skip
        seq += 3
    return found


def _first_seconds(lake: Lake, *names: str) -> dict[str, int]:
    """Each mart's first second, read in one query (a Spark start)."""
    tables = warehouse_tables(lake, names=names)
    return {
        name: min(int(row[rows[0].index("second_start_ms")]) for row in rows[1:])
        for name, rows in tables.items()
    }


def test_maintain_keeps_what_the_retention_says_and_builds_go_on(tmp_path: Path) -> None:
    files = [write_jsonl(tmp_path / "graph.jsonl", [vertex(vertex_id="map", parallelism=1)])]
    files += [write_jsonl(tmp_path / f"day{d}.jsonl", _day(d)) for d in range(5)]
    lake = Lake.from_env(tmp_path / "incremental" / "lake")
    for landed in (files[:3], files[3:]):  # two builds, after days 1 and 4: the second incremental
        tidemark("ingest", *map(str, landed), lake=lake).check()
        dbt("run", *SELECT, lake=lake).check()

    done = tidemark("maintain", *RETENTION, lake=lake).check()
    assert "rows expired" in done.stdout and "partitions past the retention dropped" in done.stdout
    timers = DeltaTable(str(lake.bronze_table("timer_events"))).to_pyarrow_table()
    assert pc.min(timers["ts_ms"]).as_py() == T0 + 3 * DAY_MS  # days 3 and 4 kept
    assert _first_seconds(lake, "fct_subtask_seconds", "fct_vertex_seconds") == {
        "fct_subtask_seconds": T0 + 2 * DAY_MS,
        "fct_vertex_seconds": T0 + DAY_MS,
    }

    # Day 5 arrives with a late event of day 1 (expired: quarantined, saying so) and one of
    # day 4 (kept); the next build goes on from its checkpoints.
    late = [timer(900, attempt=1, ts_ms=T0 + DAY_MS + 9_000),
            timer(900, attempt=4, ts_ms=T0 + 4 * DAY_MS + 9_000, action="start")]  # fmt: skip
    files += [write_jsonl(tmp_path / "day5.jsonl", _day(5) + late)]
    landed = tidemark("ingest", str(files[-1]), lake=lake).check()
    assert "1 quarantined" in landed.stdout
    reasons = DeltaTable(str(lake.bronze_table("quarantine"))).to_pyarrow_table()["reason"]
    assert reasons.to_pylist() == [
        "older than bronze's retention: events before 2026-01-04T00:00:00Z were expired "
        "(tidemark maintain --keep-bronze-days), so this one cannot join them"
    ]
    dbt("run", *SELECT, lake=lake).check()

    # A full refresh over the same bronze (the same files, the same maintenance) gives the
    # same rows for the days bronze keeps.
    full = Lake.from_env(tmp_path / "full" / "lake")
    tidemark("ingest", *map(str, files[:-1]), lake=full).check()
    tidemark("maintain", "--bronze-only", *RETENTION, lake=full).check()
    tidemark("ingest", str(files[-1]), lake=full).check()
    dbt("run", "--full-refresh", *SELECT, lake=full).check()
    kept_from = T0 + 3 * DAY_MS
    names = ("fct_subtask_seconds", "fct_vertex_seconds", "fct_watermark_seconds")
    got, want = (warehouse_tables(x, names=names) for x in (lake, full))
    for name in names:
        assert _retained(got[name], kept_from) == _retained(want[name], kept_from), name
        assert len(_retained(got[name], kept_from)) >= 4 * 3, name  # days 3 to 5, 4 s each


def _retained(rows: list[tuple], from_ms: int) -> list[tuple]:
    columns = rows[0]
    at = columns.index("second_start_ms")
    return [row for row in rows[1:] if int(row[at]) >= from_ms]
