"""tidemark's own health without Spark: the row shapes of tidemark.run_log, what `tidemark status`
prints, and reading the lake's files (Delta logs, mart partitions, run_log, bytes on disk).
The run_log's SQL side and the real commands: tests/e2e/test_health.py."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from tidemark.cycles import CycleResult
from tidemark.health import disk, landed, marts, paths, read, run_log
from tidemark.health.model import (
    ACTIVE_JOB_HOURS,
    LAG_MARTS,
    MARTS,
    MAX_JOBS,
    RETENTION_DAYS,
    RUN_LOG_COLUMNS,
    Cycle,
    DiskUsage,
    Freshness,
    Limits,
    Verdict,
    active_jobs,
    check,
    freshness,
    human_bytes,
    macro_args,
    run_log_rows,
    second_of,
    status_sections,
    write_sections,
)
from tidemark.health.record import RunRecorder, mark_run_started
from tidemark.lake import Lake
from tidemark.schedule import _failures
from tidemark.sql import write_rows

ROOT = Path(__file__).resolve().parents[2]
AT = dt.datetime(2026, 11, 28, 23, 59, 58, 250000, tzinfo=dt.UTC)


def test_reading_health_never_imports_pyspark() -> None:
    """`tidemark status` reads files only: it starts no JVM and takes no metastore."""
    code = (
        "import sys, tidemark.health.model, tidemark.health.read, tidemark.health.record, "
        "tidemark.delta_log; "
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# -- cycles and rows --------------------------------------------------------------------------


def test_a_run_cycle_says_ok_nothing_new_or_failed() -> None:
    assert Cycle.of_run(AT, True, 20, 0.12345, 41.5).outcome == "ok"
    quiet = Cycle.of_run(AT, True, 0, 0.01, None)
    assert (quiet.outcome, quiet.build_s, quiet.error_message) == ("nothing new", None, None)
    failed = Cycle.of_run(AT, False, 0, 0.2, 3.0, "x: no such file or folder;\n  dbt build failed")
    assert failed.outcome == "failed"
    assert failed.error_message == "x: no such file or folder; dbt build failed"
    assert Cycle.of_run(AT, True, 20, 0.12345, 41.5).ingest_s == 0.123
    raised = Cycle.raised(AT, RuntimeError("Spark went away\nat ..."))
    assert raised.outcome == "failed"
    assert raised.error_message == "RuntimeError: Spark went away at ..."

    with pytest.raises(ValueError, match="unknown outcome 'late'"):
        Cycle(AT, "tidemark run", "late")
    with pytest.raises(ValueError, match="UTC"):
        Cycle(AT.replace(tzinfo=None), "tidemark run", "ok")
    assert len(Cycle.of_run(AT, False, 0, 0, None, "e" * 5000).error_message) == 2000


def test_lag_is_whole_seconds_from_the_marts_newest_second_to_the_landed_one() -> None:
    assert Freshness("j", "fct_subtask_seconds", 29_998, 29_000).lag_s == 0
    assert Freshness("j", "fct_subtask_flink_gauges", 29_998, 25_000).lag_s == 4
    assert Freshness("j", "fct_subtask_seconds", 29_998, None).lag_s is None
    assert Freshness("j", "fct_subtask_seconds", None, 29_000).lag_s is None
    assert second_of(-1) == -1000 and second_of(1999) == 1000


def test_jobs_reported_are_the_recent_ones_newest_first_and_at_most_max_jobs() -> None:
    hour = 3_600_000
    landed = {"old": -1, "b": ACTIVE_JOB_HOURS * hour, "a": ACTIVE_JOB_HOURS * hour, "c": hour}
    assert active_jobs(landed) == ["a", "b", "c"]
    many = {f"j{i:03}": i for i in range(MAX_JOBS + 10)}
    assert active_jobs(many) == [f"j{i:03}" for i in range(MAX_JOBS + 9, 9, -1)]
    assert active_jobs({}) == []


def test_freshness_has_a_row_per_job_and_mart_and_none_where_a_mart_has_nothing() -> None:
    rows = freshness({"j": 5_500}, {"fct_subtask_seconds": {"j": 5_000}}, ["j"])
    assert [r.mart_name for r in rows] == list(MARTS)
    assert rows[0] == Freshness("j", "fct_subtask_seconds", 5_500, 5_000)
    assert {r.newest_second_ms for r in rows[1:]} == {None}
    # a mart's newest time (an event's ts_ms) is shown as its second
    (row,) = [r for r in freshness({"j": 9_000}, {"fct_valve_emissions": {"j": 8_765}}, ["j"])
              if r.mart_name == "fct_valve_emissions"]  # fmt: skip
    assert (row.newest_second_ms, row.lag_s) == (8_000, 1)


def test_a_cycle_adds_its_cycle_row_then_a_freshness_row_per_job_and_mart() -> None:
    cycle = Cycle.of_run(AT, True, 20, 0.5, 41.5)
    fresh = [Freshness("j", "fct_subtask_seconds", 29_998, 27_000)]
    rows = run_log_rows(cycle, fresh, DiskUsage(1, 2, 3, 10))
    assert [list(r) for r in rows] == [[name for name, _ in RUN_LOG_COLUMNS]] * 2
    first, second = rows
    assert (first["row_kind"], first["outcome"], first["events_landed"]) == ("cycle", "ok", 20)
    assert (first["bronze_bytes"], first["lake_bytes"], first["job_id"]) == (1, 10, None)
    assert (second["row_kind"], second["lag_s"], second["outcome"]) == ("freshness", 2, None)
    assert second["bronze_bytes"] is None
    assert first["cycle_date"] == second["cycle_date"] == dt.date(2026, 11, 28)
    # the day is UTC's: 20:00 in New York on the 28th is the 29th
    eastern = dt.timezone(dt.timedelta(hours=-5))
    later = Cycle.of_run(dt.datetime(2026, 11, 28, 20, 0, tzinfo=eastern), True, 1, 0, None)
    assert run_log_rows(later, [], None)[0]["cycle_date"] == dt.date(2026, 11, 29)
    assert run_log_rows(later, [], None)[0]["lake_bytes"] is None  # bytes not measured


def test_macro_args_are_json_rows_in_column_order_with_spark_literal_forms() -> None:
    rows = run_log_rows(Cycle.of_run(AT, False, 3, 0.5, None, "it's \\ broken"), [], None)
    args = json.loads(macro_args(rows))
    (row,) = args["rows"]
    assert len(row) == len(RUN_LOG_COLUMNS)
    assert row[0] == "2026-11-28 23:59:58.250" and row[-1] == "2026-11-28"
    assert row[7] == "it's \\ broken"


def _macro(name: str) -> str:
    return (ROOT / "macros" / f"{name}.sql").read_text()


def test_the_macros_agree_with_the_python_side() -> None:
    """The table the macro creates has RUN_LOG_COLUMNS; the on-run-end hook reads the same marts
    and time columns as tidemark status; the same retention and job bounds."""
    insert = _macro("tidemark_run_log_insert")
    block = insert[insert.index("set columns = [") : insert.index("] -%}")]
    columns = re.findall(r"\('(\w+)', '(\w+)'\)", block)
    assert tuple(columns) == RUN_LOG_COLUMNS
    assert f"env_var('TIDEMARK_RUN_LOG_DAYS', '{RETENTION_DAYS}')" in insert
    hook = _macro("tidemark_record_run")
    assert dict(re.findall(r"'(fct_\w+)': '(\w+)'", hook)) == MARTS
    assert f"limit {MAX_JOBS}" in hook and f"- {ACTIVE_JOB_HOURS} * 3600000" in hook
    assert "env_var('TIDEMARK_RUN_LOG_RECORDER'" in hook
    project = (ROOT / "dbt_project.yml").read_text()
    assert "{{ tidemark_record_run(results) }}" in project


# -- tidemark status's output ---------------------------------------------------------------


def _sections():
    cycles = [
        Cycle.of_run(AT - dt.timedelta(minutes=1), True, 10, 0.4, 30.0),
        Cycle.of_run(AT, False, 0, 0.1, None, "feed: no such file or folder"),
    ]
    fresh = [Freshness("j", "fct_subtask_seconds", 1_704_067_349_998, 1_704_067_348_000)]
    return status_sections(cycles, fresh, DiskUsage(1500, 2_000_000, 0, 3_000_000_000))


def test_status_prints_the_newest_cycle_first_then_freshness_then_bytes() -> None:
    out, err = io.StringIO(), io.StringIO()
    write_sections(_sections(), ["a note"], "table", write_rows, out, err)
    text = out.getvalue()
    assert text.index("last cycles") < text.index("newest second per job") < text.index("bytes")
    assert text.index("2026-11-28T23:59:58Z") < text.index("2026-11-28T23:58:58Z")
    assert "feed: no such file or folder" in text
    assert "| 2024-01-01T00:02:29.998Z | 2024-01-01T00:02:28Z | 1 " in text
    assert "| 2.0 MB " in text and "| 3.0 GB " in text and "| 1.5 KB " in text
    assert text.rstrip().endswith("note: a note") and err.getvalue() == ""


def test_status_as_csv_and_jsonl_keeps_notes_out_of_the_data() -> None:
    out, err = io.StringIO(), io.StringIO()
    write_sections(_sections(), ["a note"], "csv", write_rows, out, err)
    blocks = out.getvalue().split("\n\n")
    assert [b.splitlines()[0] for b in blocks] == ["# cycles", "# freshness", "# disk"]
    assert blocks[0].splitlines()[1].startswith("started_at,recorded_by,outcome")
    assert err.getvalue() == "tidemark status: note: a note\n"
    out, err = io.StringIO(), io.StringIO()
    write_sections(_sections(), [], "jsonl", write_rows, out, err)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["section"] for r in records] == ["cycles"] * 2 + ["freshness"] + ["disk"] * 4
    assert records[2]["lag_s"] == 1 and records[3] == {
        "section": "disk", "area": "bronze", "path": None, "bytes": 1500, "size": "1.5 KB",
    }  # fmt: skip


def test_human_bytes() -> None:
    assert [human_bytes(n) for n in (0, 999, 1000, 123_456_789, 5 * 10**15)] == [
        "0 B", "999 B", "1.0 KB", "123.5 MB", "5000.0 TB",
    ]  # fmt: skip


# -- a job's newest landed ts_ms, from the Delta logs ------------------------------------------


def _add(path: str, low: str | None, high: str | None, ts: int | None) -> dict:
    stats = {"minValues": {"job_id": low}, "maxValues": {"job_id": high, "ts_ms": ts}}
    return {"path": path, "dataChange": True, "stats": json.dumps(stats)}


def test_a_file_of_one_job_is_settled_by_its_statistics_others_are_read() -> None:
    read_paths: list[str] = []

    def reader(path: str) -> dict[str, int]:
        read_paths.append(path)
        return {"a": 50, "b": 70}

    adds = [_add("one", "a", "a", 90), _add("two", "a", "b", 80),
            _add("nostats", None, None, None), _add("long", "x" * 64, "x" * 64, 5)]  # fmt: skip
    files = [landed.FileFacts.of_add(add) for add in adds]
    assert landed.newest_per_job(files, reader) == {"a": 90, "b": 70}
    assert read_paths == ["two", "nostats", "long"]


def _events(*rows: tuple[str, int]) -> pa.Table:
    return pa.table({"job_id": [r[0] for r in rows], "ts_ms": pa.array([r[1] for r in rows],
                     pa.int64())})  # fmt: skip


def test_landed_newest_follows_only_the_new_commits(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    timers = str(lake.bronze_table("timer_events"))
    write_deltalake(timers, _events(("a", 10), ("a", 30)))
    write_deltalake(str(lake.bronze_table("watermark_events")), _events(("a", 40), ("b", 5)))
    assert landed.landed_newest(lake) == {"a": 40, "b": 5}  # the snapshots, once
    saved = json.loads(paths.state_path(lake).read_text())
    assert saved["tables"]["timer_events"] == {"version": 0, "jobs": {"a": 30}}

    def no_snapshot(root: Path) -> landed.TableState:
        raise AssertionError(f"read {root} whole")

    monkeypatch.setattr(landed, "_snapshot", no_snapshot)
    write_deltalake(timers, _events(("a", 35), ("b", 99)), mode="append")  # read: two jobs
    write_deltalake(timers, _events(("c", 7)), mode="append")  # its statistics settle it
    assert landed.landed_newest(lake) == {"a": 40, "b": 99, "c": 7}
    DeltaTable(timers).optimize.compact()  # rows moved, not changed: no snapshot
    assert landed.landed_newest(lake) == {"a": 40, "b": 99, "c": 7}
    assert json.loads(paths.state_path(lake).read_text())["tables"]["timer_events"]["version"] == 3

    monkeypatch.undo()
    DeltaTable(timers).delete("job_id = 'b'")  # rows removed: the newest may have left
    assert landed.landed_newest(lake) == {"a": 40, "b": 5, "c": 7}


def test_a_lost_or_unreadable_state_is_rebuilt(lake: Lake) -> None:
    write_deltalake(str(lake.bronze_table("timer_events")), _events(("a", 10)))
    paths.state_path(lake).parent.mkdir(parents=True)
    paths.state_path(lake).write_text("{nope")
    assert landed.landed_newest(lake) == {"a": 10}
    state = json.loads(paths.state_path(lake).read_text())
    state["tables"]["timer_events"]["version"] = 7  # a log cleaned up past it, or another table
    paths.state_path(lake).write_text(json.dumps(state))
    assert landed.landed_newest(lake) == {"a": 10}
    assert landed.landed_newest(Lake.from_env(lake.root / "empty")) == {}


# -- a mart's newest second, from its partitions ---------------------------------------------


def _partition(lake: Lake, mart: str, job: str, hour: str, minute: int) -> Path:
    folder = (paths.marts_root(lake) / mart / f"job_id={job}" / f"hour_at={hour}"
              / f"minute_slice={minute}")  # fmt: skip
    folder.mkdir(parents=True)
    return folder


def _parquet(folder: Path, column: str, values: list[int], name: str = "part-0.parquet",
             statistics: bool = True) -> None:  # fmt: skip
    table = pa.table({column: pa.array(values, pa.int64()), "x": [1] * len(values)})
    pq.write_table(table, folder / name, write_statistics=statistics, row_group_size=2)


def test_a_marts_newest_second_comes_from_the_jobs_newest_partition(lake: Lake) -> None:
    mart = "fct_subtask_seconds"
    early = _partition(lake, mart, "a", "2024-01-01 00%3A00%3A00", 50)
    _parquet(early, "second_start_ms", [3_000_000, 3_599_000])
    late = _partition(lake, mart, "a", "2024-01-01 01%3A00%3A00", 0)
    _parquet(late, "second_start_ms", [3_600_000, 3_659_000, 3_601_000])
    (late / ".part-9.parquet.crc").write_bytes(b"x")
    _parquet(late, "second_start_ms", [9_999_999_000], name="_temporary-part.parquet")
    _partition(lake, mart, "a", "2024-01-01 01%3A00%3A00", 10)  # being rewritten: empty
    other = _partition(lake, mart, "b%2Fc", "2024-01-01 00%3A00%3A00", 0)
    _parquet(other, "second_start_ms", [5_000], statistics=False)
    _parquet(_partition(lake, mart, "old", "2023-01-01 00%3A00%3A00", 0), "second_start_ms", [1])
    watermarks = _partition(lake, "fct_watermark_seconds", "a", "2024-01-01 01%3A00%3A00", 0)
    (watermarks.parents[2] / "_delta_log").mkdir()
    newest, notes = marts.marts_newest(lake, {"a": 3_700_000}, ["a", "b/c"])
    assert newest[mart] == {"a": 3_659_000, "b/c": 5_000}  # "old" not asked for
    assert "tidemark.fct_vertex_seconds is not built yet" in notes
    assert any("fct_watermark_seconds is a Delta table" in n for n in notes)


def test_the_newest_partition_is_looked_up_back_from_the_landed_hour_not_listed(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    mart = "fct_subtask_seconds"
    for hour in range(30):  # a day and more of history, the newest partition 2 hours back
        name = marts.hour_folder(hour * 3_600_000).removeprefix("hour_at=")
        _parquet(_partition(lake, mart, "a", name, 50), "second_start_ms", [hour * 3_600_000])
    assert marts.hour_folder(0) == "hour_at=1970-01-01 00%3A00%3A00"  # as Spark names it
    job = paths.marts_root(lake) / mart / "job_id=a"
    listed: list[str] = []
    partitions = marts.partitions

    def listing(folder: Path, column: str):
        listed.append(column)
        return partitions(folder, column)

    monkeypatch.setattr(marts, "partitions", listing)
    assert marts.newest_in_job(job, "second_start_ms", 31 * 3_600_000 + 5) == 29 * 3_600_000
    assert "hour_at" not in listed
    # further back than the probe: the hours are listed
    assert marts.newest_in_job(job, "second_start_ms", 31 * 3_600_000, probe_hours=2) == (
        29 * 3_600_000
    )
    assert "hour_at" in listed


def test_bytes_on_disk_add_up_by_area(lake: Lake) -> None:
    (lake.bronze / "timer_events").mkdir(parents=True)
    (lake.bronze / "timer_events" / "a.parquet").write_bytes(b"x" * 100)
    marts = paths.marts_root(lake) / "fct_subtask_seconds"
    marts.mkdir(parents=True)
    (marts / "b.parquet").write_bytes(b"x" * 20)
    (lake.root / "metastore").mkdir()
    (lake.root / "metastore" / "c").write_bytes(b"x" * 3)
    (lake.root / "link").symlink_to(lake.bronze)  # not followed, not counted twice
    assert disk.disk_usage(lake) == DiskUsage(100, 20, 0, 123)


# -- the last cycles, from run_log's files ----------------------------------------------------


def _run_log_file(lake: Lake, day: str, name: str, rows: list[dict]) -> None:
    names = [n for n, _ in RUN_LOG_COLUMNS if n != "cycle_date"]
    folder = paths.run_log_root(lake) / f"cycle_date={day}"
    folder.mkdir(parents=True, exist_ok=True)
    columns = {n: [r.get(n) for r in rows] for n in names}
    types = {
        "cycle_started_at": pa.timestamp("ns"),  # as Spark writes it (INT96)
        "events_landed": pa.int64(),
        "ingest_s": pa.float64(),
        "build_s": pa.float64(),
    }
    kept = {*types, "recorded_by", "row_kind", "outcome", "error_message"}
    arrays = {n: pa.array(v, types.get(n, pa.string())) for n, v in columns.items() if n in kept}
    pq.write_table(pa.table(arrays), folder / name)


def test_last_cycles_read_the_newest_files_and_skip_freshness_rows(lake: Lake) -> None:
    def cycle(minute: int, outcome: str = "ok") -> dict:
        started = dt.datetime(2026, 11, 28, 12, minute)
        return {"cycle_started_at": started, "recorded_by": "dbt build", "row_kind": "cycle",
                "outcome": outcome, "build_s": 1.5}  # fmt: skip

    fresh = {"row_kind": "freshness", "cycle_started_at": dt.datetime(2026, 11, 28)}
    _run_log_file(lake, "2026-11-27", "part-a.parquet", [cycle(1), cycle(2)])
    _run_log_file(lake, "2026-11-28", "part-b.parquet", [cycle(3, "failed"), fresh])
    found = run_log.last_cycles(lake, 2)
    assert [(c.started_at.minute, c.outcome) for c in found] == [(3, "failed"), (2, "ok")]
    assert found[0].started_at.tzinfo == dt.UTC
    assert len(run_log.last_cycles(lake, 10)) == 3
    assert run_log.last_cycles(Lake.from_env(lake.root / "none"), 5) == []


def test_status_reads_what_it_can_and_says_what_it_cannot(lake: Lake) -> None:
    lake.root.mkdir(parents=True)
    found = read.read_status(lake, 5)
    assert found.cycles == [] and found.freshness == [] and found.disk is not None
    assert any("no cycle recorded yet" in n for n in found.notes)
    assert any("bronze holds no timer or watermark event" in n for n in found.notes)
    broken = lake.bronze_table("timer_events") / "_delta_log"
    broken.mkdir(parents=True)
    (broken / "00000000000000000000.json").write_text("{not json")
    found = read.read_status(lake, 5)
    assert any(n.startswith("the newest events and mart seconds could not be read") for n in
               found.notes)  # fmt: skip
    assert found.disk is not None  # the other parts still answer


def test_the_status_command_prints_one_line_errors(tmp_path: Path, capsys) -> None:
    from tidemark.cli import main

    assert main(["--lake", str(tmp_path / "none"), "status"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"tidemark status: error: no lake at {tmp_path / 'none'}: set TIDEMARK_LAKE or --lake"
    )
    assert main(["--lake", str(tmp_path), "status", "--cycles", "0"]) == 1
    assert "tidemark status: error: --cycles must be 1 or more, got 0" in capsys.readouterr().err
    assert main(["--lake", str(tmp_path), "status", "--format", "jsonl"]) == 0
    captured = capsys.readouterr()
    assert {json.loads(line)["section"] for line in captured.out.splitlines()} == {"disk"}
    assert "tidemark status: note: no cycle recorded yet" in captured.err


# -- tidemark status --check: the verdict -----------------------------------------------------

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)


def _ago(minutes: float, outcome: str = "ok", error: str | None = None) -> Cycle:
    return Cycle(NOW - dt.timedelta(minutes=minutes), "tidemark run", outcome, error_message=error)


def test_check_fails_when_the_last_cycles_all_failed() -> None:
    failed = [_ago(1, "failed", "dbt build failed: fct_x: boom"), _ago(2, "failed", "b"),
              _ago(3, "failed", "c"), _ago(4)]  # fmt: skip
    verdict = check(failed, [], NOW)
    assert not verdict.healthy
    assert verdict.line() == (
        "unhealthy: the last 3 cycles failed (--max-failed 3); the newest, at "
        "2026-11-28T11:59:00Z, 60 s ago: dbt build failed: fct_x: boom"
    )
    assert check(failed[1:], [], NOW).healthy  # failed, failed, ok: not three in a row
    assert check(failed[:3], [], NOW, Limits(max_failed=4)).healthy
    assert check(failed, [], NOW, Limits(max_failed=0)).healthy  # 0: not checked
    ok = check([_ago(1, "nothing new"), *failed[1:]], [], NOW)
    assert ok == Verdict(True, "the newest cycle nothing new, at 2026-11-28T11:59:00Z, 60 s ago")


def test_check_judges_a_restarted_run_by_its_own_cycles_and_spares_it_until_its_first() -> None:
    """The process before it failed three times (a liveness probe restarted it): the new run is
    starting, not failing; once it has cycles of its own only those count."""
    before = [_ago(10, "failed", "x"), _ago(11, "failed", "x"), _ago(12, "failed", "x")]
    started = NOW - dt.timedelta(minutes=5)
    assert not check(before, [], NOW).healthy
    starting = check(before, [], NOW, run_started=started)
    assert starting.line() == "ok: tidemark run started 300 s ago; its first cycle is not " \
        "recorded yet"  # fmt: skip
    late = check(before, [], NOW, Limits(max_age_s=120), run_started=started)
    assert late.line() == (
        "unhealthy: tidemark run started 300 s ago and has recorded no cycle (--max-age-s 120)"
    )
    own = [_ago(1, "failed", "y"), _ago(2, "failed", "y"), *before]
    assert check(own, [], NOW, run_started=started).healthy  # two of its own failed, not three
    assert not check([_ago(0.5, "failed", "y"), *own], [], NOW, run_started=started).healthy


def test_check_fails_when_no_cycle_came_for_max_age_s() -> None:
    cycles = [_ago(20), _ago(21)]
    assert check(cycles, [], NOW).healthy  # not checked by default
    verdict = check(cycles, [], NOW, Limits(max_age_s=900))
    assert verdict.line() == (
        "unhealthy: no cycle since 2026-11-28T11:40:00Z, 1200 s ago (--max-age-s 900)"
    )
    assert check(cycles, [], NOW, Limits(max_age_s=1200)).healthy


def test_check_with_nothing_recorded_is_healthy() -> None:
    """A lake no cycle was recorded on has not failed; a run that is starting notes its start."""
    assert check([], [], NOW, Limits(max_lag_s=0, max_age_s=0)).line() == (
        "ok: no cycle recorded yet"
    )


def test_check_holds_the_per_second_marts_to_max_lag_s() -> None:
    landed = 1_704_067_349_998  # 00:02:29.998
    fresh = [
        Freshness("a", "fct_subtask_seconds", landed, landed // 1000 * 1000 - 400_000),
        Freshness("b", "fct_vertex_seconds", landed, landed // 1000 * 1000 - 301_000),
        Freshness("a", "fct_watermark_seconds", landed, None),  # nothing of the job: not behind
        Freshness("a", "fct_valve_emissions", landed, 0),  # a mart of changes: no delay
        Freshness("a", "fct_subtask_flink_gauges", landed, landed - 900_000),
    ]
    assert set(LAG_MARTS) == {"fct_subtask_seconds", "fct_vertex_seconds",
                              "fct_watermark_seconds", "fct_vertex_watermark_seconds"}  # fmt: skip
    cycles = [_ago(1)]
    assert check(cycles, fresh, NOW).healthy  # not checked by default
    verdict = check(cycles, fresh, NOW, Limits(max_lag_s=300))
    assert verdict.line() == (
        "unhealthy: tidemark.fct_subtask_seconds is 400 s behind job a's newest landed event "
        "(--max-lag-s 300), and 1 more (job, mart) pairs"
    )
    assert check(cycles, fresh, NOW, Limits(max_lag_s=400)).line() == (
        "ok: the newest cycle ok, at 2026-11-28T11:59:00Z, 60 s ago; marts at most 400 s behind"
    )
    assert (
        check(cycles, fresh[2:4], NOW, Limits(max_lag_s=0))
        .line()
        .endswith("; no mart second to compare yet")
    )
    # failed cycles are said before lag
    failed = [_ago(m, "failed", "e") for m in (1, 2, 3)]
    assert "cycles failed" in check(failed, fresh, NOW, Limits(max_lag_s=300)).reason


def test_check_limits_and_its_one_line() -> None:
    with pytest.raises(ValueError, match="--max-failed must be 0 .* got -1"):
        Limits(max_failed=-1)
    with pytest.raises(ValueError, match="--max-lag-s must be 0 or more seconds, got -5"):
        Limits(max_lag_s=-5)
    long = check([_ago(1, "failed", "e" * 2000)] * 3, [], NOW).line()
    assert len(long) == 400 and long.endswith("e…") and "\n" not in long


# -- tidemark status --check: the command -----------------------------------------------------


def _cycle_row(at: dt.datetime, outcome: str, error: str | None = None) -> dict:
    at = at.replace(tzinfo=None, microsecond=at.microsecond // 1000 * 1000)  # as the writers do
    return {"cycle_started_at": at, "recorded_by": "tidemark run",
            "row_kind": "cycle", "outcome": outcome, "error_message": error}  # fmt: skip


def test_the_run_notes_its_start_for_the_check(lake: Lake) -> None:
    assert run_log.run_started(lake) is None
    at = dt.datetime(2026, 11, 28, 11, 0, 0, 125000, tzinfo=dt.UTC)
    assert mark_run_started(lake, at)
    assert run_log.run_started(lake) == at
    assert [p.name for p in paths.run_marker_path(lake).parent.iterdir()] == ["run.json"]
    paths.run_marker_path(lake).write_text("{broken")
    assert run_log.run_started(lake) is None  # then every cycle counts
    elsewhere = Lake.from_env(lake.root / "other")
    elsewhere.root.mkdir()
    (elsewhere.root / "_health").write_text("a file")  # a lake it cannot note in: the run goes on
    assert not mark_run_started(elsewhere, at)


def test_status_check_prints_one_line_and_exits_1_when_unhealthy(
    lake: Lake, capsys: pytest.CaptureFixture[str]
) -> None:
    from tidemark.cli import main

    lake.root.mkdir(parents=True)
    args = ["--lake", str(lake.root), "status", "--check"]
    assert main(args) == 0
    assert capsys.readouterr() == ("ok: no cycle recorded yet\n", "")
    now = dt.datetime.now(dt.UTC)
    rows = [_cycle_row(now - dt.timedelta(seconds=s), "failed", f"dbt build failed: {s}")
            for s in (30, 90, 150)]  # fmt: skip
    _run_log_file(lake, now.date().isoformat(), "part-0.parquet", rows)
    assert main(args) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("tidemark status: unhealthy: the last 3 cycles failed (--max-failed 3)")
    assert line.endswith(": dbt build failed: 30")
    assert main([*args, "--max-failed", "4"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("ok: the newest cycle failed, at ")
    # a new run started after them: spared until its first cycle
    mark_run_started(lake, now - dt.timedelta(seconds=10))
    assert main(args) == 0
    assert "its first cycle is not recorded yet" in capsys.readouterr().out
    assert main([*args, "--max-age-s", "5"]) == 1
    assert "has recorded no cycle (--max-age-s 5)\n" in capsys.readouterr().err
    # the limits go with --check; the check of a lake that is not there is an error
    assert main(["--lake", str(lake.root), "status", "--max-lag-s", "60"]) == 1
    assert capsys.readouterr().err == (
        "tidemark status: error: --max-failed, --max-lag-s and --max-age-s go with --check\n"
    )
    assert main(["--lake", str(lake.root / "none"), "status", "--check"]) == 1
    assert "tidemark status: error: no lake at " in capsys.readouterr().err


def test_status_check_reads_files_only(lake: Lake) -> None:
    """The probe starts no JVM and walks no lake: it imports no pyspark and counts no bytes."""
    write_deltalake(str(lake.bronze_table("timer_events")), _events(("j", 29_998)))
    code = (
        "import sys\n"
        "from tidemark.health import read\n"
        "read.disk_usage = lambda lake: sys.exit('the probe walked the lake')\n"
        "from tidemark.cli import main\n"
        f"code = main(['--lake', {str(lake.root)!r}, 'status', '--check', '--max-lag-s', '5'])\n"
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok: no cycle recorded yet\n", "")


# -- tidemark run's recorder ------------------------------------------------------------------


class FakeDbt:
    def __init__(self, ok: bool = True) -> None:
        self.calls: list[list[str]] = []
        self.ok = ok

    def __call__(self, args):
        self.calls.append(list(args))
        return SimpleNamespace(success=self.ok, exception=None if self.ok else "no Spark")

    def rows(self) -> list[list]:
        (args,) = [json.loads(c[c.index("--args") + 1]) for c in self.calls[-1:]]
        return args["rows"]


def test_the_recorder_writes_every_cycle_through_the_insert_macro(lake: Lake) -> None:
    write_deltalake(str(lake.bronze_table("timer_events")), _events(("j", 29_998)))
    dbt, now = FakeDbt(), [0.0]
    recorder = RunRecorder(lake, dbt, bytes_every_s=60, clock=lambda: now[0])
    results = iter([CycleResult(20, 0.1, 2.0, True), CycleResult(0, 0.1, None, False, "x: gone")])
    cycle = recorder.wrap(lambda: next(results))
    assert cycle().ok
    assert dbt.calls[0][:2] == ["run-operation", "tidemark_run_log_insert"]
    assert "--no-write-json" in dbt.calls[0]  # the build's run_results.json stays
    first, *fresh = dbt.rows()
    assert first[2:5] == ["cycle", "ok", 20] and first[-2] > 0  # bytes measured
    assert [(r[2], r[8], r[10]) for r in fresh] == [("freshness", "j", 29_998)] * len(MARTS)
    now[0] = 30.0
    assert not cycle().ok
    second, *_ = dbt.rows()
    assert second[2:4] == ["cycle", "failed"] and second[7] == "x: gone"
    assert second[-2] is None  # bytes again only after bytes_every_s
    dbt.calls.clear()
    with pytest.raises(RuntimeError, match="boom"):
        recorder.wrap(lambda: (_ for _ in ()).throw(RuntimeError("boom")))()
    assert dbt.rows()[0][3] == "failed" and dbt.rows()[0][7] == "RuntimeError: boom"


def test_a_cycle_that_cannot_be_recorded_is_logged_and_the_run_goes_on(
    lake: Lake, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = RunRecorder(lake, FakeDbt(ok=False))
    assert recorder.wrap(lambda: CycleResult(0, 0.0, None, True))().ok
    assert "this cycle is not in tidemark.run_log: no Spark" in caplog.text


def test_a_failed_build_names_the_nodes_that_failed() -> None:
    def result(name: str, status: str, message: str | None) -> SimpleNamespace:
        return SimpleNamespace(node=SimpleNamespace(name=name), status=status, message=message)

    built = SimpleNamespace(
        exception=None,
        result=SimpleNamespace(results=[
            result("ok_model", "success", "OK"),
            result("fct_x", "error", "Runtime Error\n  division by zero"),
            result("a_test", "fail", "Got 3 results"),
        ]),
    )  # fmt: skip
    assert _failures(built) == "fct_x: Runtime Error division by zero; a_test: Got 3 results"
    assert _failures(SimpleNamespace(exception=RuntimeError("parse"), result=None)) == "parse"
