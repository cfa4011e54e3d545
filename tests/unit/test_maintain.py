"""`tidemark maintain`'s bronze part, without Spark: expiry, compaction, the ingest's rule for an
event older than the retention, and nothing lost (issue 44; docs/decisions/0019-retention.md)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from tests.events import timer, vertex, watermark, write_jsonl
from tidemark.ingest.landing import ingest
from tidemark.lake import Lake, RetentionError, expired_before, too_old_reason
from tidemark.maintain.bronze import COMPACTED, maintain_bronze, newest_event_ms
from tidemark.maintain.retention import DAY_MS, Retention, record_expiry

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _events(job: str, day: int, minute: int, n: int = 3) -> list[dict]:
    """n timer events and a watermark of a task of ``job``, at ``minute`` of ``day``."""
    at = T0 + day * DAY_MS + minute * 60_000
    seq = day * 10_000 + minute * 10
    found = [timer(seq + i, job_id=job, ts_ms=at + i) for i in range(n)]
    return [*found, watermark(seq + n, job_id=job, ts_ms=at + n)]


def _land(tmp_path: Path, lake: Lake, name: str, records: list[dict]) -> None:
    ingest([write_jsonl(tmp_path / f"{name}.jsonl", records)], lake)


def _table(lake: Lake, name: str) -> DeltaTable:
    return DeltaTable(str(lake.bronze_table(name)))


def _rows(lake: Lake, name: str) -> Counter:
    table = _table(lake, name).to_pyarrow_table()
    keep = [c for c in table.column_names if c not in ("ingested_at",)]
    return Counter(
        tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in row.items()))
        for row in table.select(keep).to_pylist()
    )


@pytest.fixture(scope="module")
def landed_week(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Four days of two jobs, files of a minute (as a capture rolls them), landed one by one."""
    files = tmp_path_factory.mktemp("files")
    lake = Lake.from_env(tmp_path_factory.mktemp("week") / "lake")
    _land(files, lake, "graph", [vertex(job_id="a"), vertex(job_id="b")])
    for day in range(4):
        for minute in range(2):
            _land(files, lake, f"d{day}m{minute}", _events("a", day, minute) +
                  _events("b", day, minute))  # fmt: skip
    return lake.root, files


@pytest.fixture
def week(landed_week: tuple[Path, Path], tmp_path: Path) -> Lake:
    """A copy of the landed week for one test, its files beside it."""
    root, files = landed_week
    shutil.copytree(files, tmp_path, dirs_exist_ok=True)
    shutil.copytree(root, tmp_path / "lake")
    return Lake.from_env(tmp_path / "lake")


def test_settings_are_checked_and_the_cutoffs_are_whole_days() -> None:
    cutoffs = Retention(bronze_days=2, task_marts_days=3, vertex_marts_days=4).cutoffs(
        T0 + 3 * DAY_MS + 5
    )
    assert cutoffs.today_ms == T0 + 3 * DAY_MS
    assert cutoffs.bronze_ms == T0 + 2 * DAY_MS  # today and yesterday kept
    assert cutoffs.task_marts_ms == T0 + DAY_MS and cutoffs.vertex_marts_ms == T0
    with pytest.raises(RetentionError, match="--keep-bronze-days must be a whole number"):
        Retention(bronze_days=1)
    with pytest.raises(RetentionError, match="cannot keep fewer days"):
        Retention(bronze_days=30, task_marts_days=10)


def test_days_before_today_become_one_file_per_job_and_nothing_else_changes(week: Lake) -> None:
    before = {name: _rows(week, name) for name in ("timer_events", "watermark_events")}
    files_before = len(_table(week, "timer_events").file_uris())
    newest = newest_event_ms(week)
    assert newest == T0 + 3 * DAY_MS + 60_000 + 3
    report = maintain_bronze(week, Retention(bronze_days=30, task_marts_days=30,
                                             vertex_marts_days=30).cutoffs(newest), T0)  # fmt: skip
    for name in ("timer_events", "watermark_events"):
        assert _rows(week, name) == before[name]  # the same rows, lineage included
        names = [uri.rsplit("/", 1)[-1] for uri in _table(week, name).file_uris()]
        compacted = [n for n in names if n.startswith(COMPACTED)]
        assert len(compacted) == 3 * 2  # days 0-2, jobs a and b
        assert len(names) - len(compacted) == 2  # today's two files, as landed
    assert files_before == 8 and report.tables[0].rows_expired == 0
    # The bounds the bronze views and the incremental models choose files by are there.
    actions = pa.table(_table(week, "timer_events").get_add_actions(flatten=True))
    assert pc.all(pc.is_valid(actions["min.ts_ms"])).as_py()
    assert pc.all(pc.is_valid(actions["max.ingest_id"])).as_py()

    # The files compaction removed stay for queries planned before it (an hour by default)...
    folder = week.bronze_table("timer_events")
    on_disk = {p.name for p in folder.glob("*.parquet")}
    live = {uri.rsplit("/", 1)[-1] for uri in _table(week, "timer_events").file_uris()}
    assert len(on_disk - live) == 6  # days 0-2 as landed: two files a day
    # A second run finds nothing to do; kept for 0 hours, the removed files are vacuumed.
    again = maintain_bronze(week, Retention(30, 30, 30).cutoffs(newest), T0, removed_keep_hours=0)
    assert sum(t.rows_rewritten for t in again.tables) == 0
    assert {p.name for p in folder.glob("*.parquet")} == live


def test_expired_days_go_and_a_late_event_before_them_is_quarantined(
    tmp_path: Path, week: Lake
) -> None:
    cutoffs = Retention(bronze_days=2, task_marts_days=2, vertex_marts_days=2).cutoffs(
        newest_event_ms(week)
    )
    before = _rows(week, "timer_events")
    report = maintain_bronze(week, cutoffs, T0)
    record_expiry(week, cutoffs.bronze_ms)
    after = _rows(week, "timer_events")
    kept = Counter({row: n for row, n in before.items() if dict(row)["ts_ms"] >= cutoffs.bronze_ms})
    expired = 2 * 2 * 2 * 3  # days 0 and 1, two files a day, two jobs, three timer events
    assert after == kept and sum(before.values()) - sum(after.values()) == expired
    assert report.tables[0].rows_expired == expired
    assert expired_before(week) == T0 + 2 * DAY_MS

    # A late event of day 1 (expired) is quarantined with a reason that says so; one of day 2
    # (kept) lands; the graph (never expired) is all there; a file landed before is recognised.
    late = write_jsonl(tmp_path / "late.jsonl", [
        timer(99_990, job_id="a", ts_ms=T0 + DAY_MS + 7),
        timer(99_991, job_id="a", ts_ms=T0 + 2 * DAY_MS + 7),
    ])  # fmt: skip
    result = ingest([late, tmp_path / "d0m0.jsonl"], week)
    assert (result.accepted, result.quarantined) == (1, 1)
    assert result.files[1].skipped_as_seen
    [reason] = DeltaTable(str(week.bronze_table("quarantine"))).to_pyarrow_table()["reason"]
    assert reason.as_py() == too_old_reason(T0 + 2 * DAY_MS)
    assert "2026-01-03T00:00:00Z" in reason.as_py()
    assert len(_rows(week, "vertices")) == 2


def test_a_late_file_of_a_compacted_day_is_merged_into_that_days_file(
    tmp_path: Path, week: Lake
) -> None:
    retention = Retention(30, 30, 30)
    maintain_bronze(week, retention.cutoffs(newest_event_ms(week)), T0)
    _land(tmp_path, week, "late", _events("a", 1, 30, n=2))
    before = _rows(week, "timer_events")
    maintain_bronze(week, retention.cutoffs(newest_event_ms(week)), T0)
    assert _rows(week, "timer_events") == before
    names = [u.rsplit("/", 1)[-1] for u in _table(week, "timer_events").file_uris()]
    groups = Counter(
        n[len(COMPACTED) :].split("-")[:2][0] for n in names if n.startswith(COMPACTED)
    )
    assert groups == {"20260101": 2, "20260102": 2, "20260103": 2}  # still one per job and day


def test_removed_files_stay_for_readers_of_the_snapshot_before(week: Lake) -> None:
    table = _table(week, "timer_events")
    old_files = table.file_uris()
    maintain_bronze(week, Retention(30, 30, 30).cutoffs(newest_event_ms(week)), T0)
    # Vacuumed only after REMOVED_KEEP_HOURS: a query planned on the old file list still reads.
    assert all(Path(uri.removeprefix("file://")).exists() for uri in old_files)
