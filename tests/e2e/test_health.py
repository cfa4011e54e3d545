"""tidemark's own health on the demo lake (contract §7 "health"): tidemark.run_log as builds and
tidemark run write it, read with Spark SQL as a BI tool does, and `tidemark status` (and its
`--check`) while another process (the lake's warm worker) holds the metastore, held to plain SQL
over the marts and bronze. `tidemark run` as a real process: test_health_run.py (deep)."""

from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.e2e.conftest import CHANGED_VARS, DemoLake
from tests.e2e.harness import tidemark
from tidemark.health.model import (
    LAG_MARTS,
    MARTS,
    Cycle,
    Freshness,
    active_jobs,
    macro_args,
    run_log_rows,
)
from tidemark.health.paths import run_log_root

pytestmark = pytest.mark.e2e

CYCLE_COLUMNS = (
    "unix_millis(cycle_started_at) as started_ms, recorded_by, outcome, events_landed, "
    "ingest_s, build_s, error_message, lake_bytes"
)


def _landed_by_sql(warm) -> dict[str, int]:
    rows = warm.sql_rows(
        "select job_id, max(ts_ms) as ts_ms from (select job_id, ts_ms from bronze.timer_events "
        "union all select job_id, ts_ms from bronze.watermark_events) group by job_id"
    )
    return {r["job_id"]: r["ts_ms"] for r in rows}


def _newest_by_sql(warm) -> dict[tuple[str, str], int]:
    """Each mart's newest second per job: a plain max() over the whole mart."""
    query = " union all ".join(
        f"select '{mart}' as mart_name, job_id, max({column}) div 1000 * 1000 as newest_ms "
        f"from tidemark.{mart} group by job_id"
        for mart, column in MARTS.items()
    )
    return {(r["mart_name"], r["job_id"]): r["newest_ms"] for r in warm.sql_rows(query)}


def _iso(ms: int, timespec: str) -> str:
    at = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return at.isoformat(timespec=timespec).replace("+00:00", "Z")


def test_status_matches_plain_sql_while_another_process_holds_the_lake(
    demo_lake: DemoLake,
) -> None:
    """The demo build's on-run-end hook recorded it; `tidemark status` (files only, no Spark)
    shows that cycle, each job's newest landed ts_ms and each mart's newest second as plain
    max() over bronze and the marts, and the bytes on disk; the hook's own freshness rows say
    the same."""
    warm, lake = demo_lake.warm, demo_lake.lake
    landed, newest = _landed_by_sql(warm), _newest_by_sql(warm)
    assert len(landed) == 4 and len(newest) > len(landed)  # the demo's jobs, in many marts

    status = tidemark("status", "--format", "jsonl", "--cycles", "50", lake=lake).check()
    records = [json.loads(line) for line in status.stdout.splitlines()]
    cycles = [r for r in records if r["section"] == "cycles"]
    assert any(c["recorded_by"] == "dbt build" and c["outcome"] == "ok" for c in cycles), cycles
    shown = {(r["job_id"], r["mart_name"]): r for r in records if r["section"] == "freshness"}
    assert {job for job, _ in shown} == set(active_jobs(landed))
    assert {mart for _, mart in shown} == set(MARTS)
    for (job, mart), row in shown.items():
        assert row["landed_at"] == _iso(landed[job], "milliseconds"), (job, mart)
        want = newest.get((mart, job))
        assert row["newest_second_at"] == (None if want is None else _iso(want, "seconds"))
        assert row["lag_s"] == (
            None if want is None else (landed[job] // 1000 * 1000 - want) // 1000
        )
    disk = {r["area"]: r["bytes"] for r in records if r["section"] == "disk"}
    assert 0 < disk["marts"] < disk["lake"] and 0 < disk["bronze"] < disk["lake"]
    assert "Traceback" not in status.stderr

    # The hook's rows of a build: landed as the gauge plan saw it, the marts' newest seconds
    # from their latest partitions; read as a BI tool reads the table.
    (latest,) = warm.sql_rows(
        "select max(unix_millis(cycle_started_at)) as at_ms from tidemark.run_log "
        "where recorded_by = 'dbt build' and row_kind = 'freshness'"
    )
    hook = warm.sql_rows(
        "select job_id, mart_name, landed_ts_ms, newest_second_ms, lag_s from tidemark.run_log "
        f"where row_kind = 'freshness' and unix_millis(cycle_started_at) = {latest['at_ms']}"
    )
    planned = {
        r["job_id"]: r["ts"]
        for r in warm.sql_rows(
            "select job_id, max(horizon_ms) as ts "
            "from tidemark_intermediate.int_timer_tasks_checkpointed group by job_id"
        )
    }
    assert {r["job_id"] for r in hook} == set(active_jobs(planned))
    assert len(hook) == len(active_jobs(planned)) * len(MARTS)
    for row in hook:
        assert row["landed_ts_ms"] == planned[row["job_id"]]
        assert row["newest_second_ms"] == newest.get((row["mart_name"], row["job_id"])), row


def test_status_check_reads_the_newest_cycle_and_the_lag_as_plain_sql(
    demo_lake: DemoLake,
) -> None:
    """`tidemark status --check` (the probe: files only, while the warm worker holds the lake):
    the newest cycle Spark wrote to tidemark.run_log and the per-second marts' largest lag as
    plain SQL sees them; one line, 0 within the limits, 1 past one."""
    warm, lake = demo_lake.warm, demo_lake.lake
    landed, newest = _landed_by_sql(warm), _newest_by_sql(warm)
    most = max(
        (landed[job] // 1000 * 1000 - newest[(mart, job)]) // 1000
        for job in active_jobs(landed)
        for mart in LAG_MARTS
        if (mart, job) in newest
    )
    (last,) = warm.sql_rows(
        "select max_by(outcome, cycle_started_at) as outcome, "
        "date_format(max(cycle_started_at), \"yyyy-MM-dd'T'HH:mm:ss'Z'\") as at "
        "from tidemark.run_log where row_kind = 'cycle'"
    )
    probe = ("status", "--check", "--max-failed", "0", "--max-lag-s")
    healthy = tidemark(*probe, str(most), lake=lake)
    assert (healthy.returncode, healthy.stderr) == (0, ""), healthy.stderr
    (line,) = healthy.stdout.splitlines()
    assert line.startswith(f"ok: the newest cycle {last['outcome']}, at {last['at']}, "), line
    assert line.endswith(f" s ago; marts at most {most} s behind"), line
    stale = tidemark(*probe, str(most), "--max-age-s", "0", lake=lake)
    assert (stale.returncode, stale.stdout) == (1, ""), stale.stdout
    (line,) = stale.stderr.splitlines()
    assert line.startswith(f"tidemark status: unhealthy: no cycle since {last['at']}, "), line
    assert line.endswith(" s ago (--max-age-s 0)"), line
    if most > 0:  # 3 s on the demo lake as built; other tests of the group rebuild marts
        behind = tidemark(*probe, str(most - 1), lake=lake)
        assert (behind.returncode, behind.stdout) == (1, ""), behind.stdout
        (line,) = behind.stderr.splitlines()
        assert line.startswith("tidemark status: unhealthy: tidemark.fct_"), line
        assert f" is {most} s behind job " in line and f"(--max-lag-s {most - 1})" in line


def test_a_failed_build_is_recorded_with_its_error(demo_lake: DemoLake) -> None:
    """A run whose model fails is recorded failed, with the model's message. The legacy sampled
    back pressure models refuse an incremental run with other sampling vars than their rows'
    (docs/gauges.md), while compiling, so nothing is written and old and new samplings never mix
    in one table. (A command that stops before it runs anything, e.g. on a project that does not
    compile, runs no hook: only `tidemark run` records those, as failed cycles.)"""
    warm = demo_lake.warm
    # Every var changed, the sampling vars among them, as test_pipeline's latest-hours test runs:
    # one saved parse serves both (tests/e2e/warm.py).
    failed = warm.dbt(
        "run", "--select", "int_backpressure_samples_counted", "fct_vertex_sampled_backpressure",
        "--vars", json.dumps(CHANGED_VARS),
    )  # fmt: skip
    assert failed.returncode == 1 and "ERROR=1 SKIP=1" in failed.stdout, failed.stdout
    assert "dbt build --full-refresh --select int_timer_events_landed+" in failed.stdout
    (row,) = warm.sql_rows(
        f"select {CYCLE_COLUMNS} from tidemark.run_log where row_kind = 'cycle' "
        "order by cycle_started_at desc limit 1"
    )
    assert (row["recorded_by"], row["outcome"]) == ("dbt run", "failed")
    assert row["error_message"].startswith("int_backpressure_samples_counted: "), row
    assert "--full-refresh --select int_timer_events_landed+" in row["error_message"]
    assert row["build_s"] > 0 and row["events_landed"] is None and row["lake_bytes"] is None
    status = tidemark("status", "--cycles", "1", lake=demo_lake.lake).check()
    (line,) = [x for x in status.stdout.splitlines() if "| dbt run " in x]
    assert "| failed " in line and "int_timer_events_landed+" in line


def _insert(warm, rows: list[dict]) -> None:
    warm.dbt("run-operation", "tidemark_run_log_insert", "--args", macro_args(rows)).check()


def test_run_cycles_go_through_the_insert_macro_whole_and_bounded(demo_lake: DemoLake) -> None:
    """The rows `tidemark run` hands the macro come back from SQL as they were; a reader of the
    table's files during appends sees whole appends; a new day compacts the day before into one
    file and drops the days past the retention (14). (Its days are 2020's: the table's other
    rows, the builds', are today's and no upkeep of these touches them.)"""
    warm = demo_lake.warm
    started = dt.datetime(2020, 1, 10, 6, 30, 15, 125000, tzinfo=dt.UTC)
    cycle = Cycle.of_run(started, False, 7, 0.25, 12.5, "feed: no such file; it's a \\ quote")
    fresh = [Freshness("job'1", "fct_subtask_seconds", 1_578_637_815_999, 1_578_637_800_000)]
    older = Cycle.of_run(started.replace(day=1), True, 0, 0, None)  # a day the upkeep drops
    _insert(warm, [*run_log_rows(cycle, fresh, None), *run_log_rows(older, [], None)])
    rows = warm.sql_rows(
        f"select {CYCLE_COLUMNS}, row_kind, job_id, mart_name, landed_ts_ms, newest_second_ms, "
        "lag_s, cycle_date from tidemark.run_log where cycle_date = date'2020-01-10'"
    )
    (kept_cycle,) = [r for r in rows if r["row_kind"] == "cycle"]
    assert kept_cycle["started_ms"] == int(started.timestamp() * 1000)
    assert kept_cycle["error_message"] == "feed: no such file; it's a \\ quote"
    assert (kept_cycle["ingest_s"], kept_cycle["build_s"], kept_cycle["events_landed"]) == (
        0.25, 12.5, 7,
    )  # fmt: skip
    (kept_fresh,) = [r for r in rows if r["row_kind"] == "freshness"]
    assert (kept_fresh["job_id"], kept_fresh["lag_s"], kept_fresh["cycle_date"]) == (
        "job'1", 15, "2020-01-10",
    )  # fmt: skip

    # Appends while a reader lists and reads the day's files, as `tidemark status` does (and as
    # Spark plans a query: the files present when it lists them, each whole).
    day = run_log_root(demo_lake.lake) / "cycle_date=2020-01-10"
    seen: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            files = [p for p in day.iterdir() if not p.name.startswith((".", "_"))]
            seen.append(sum(pq.ParquetFile(p).metadata.num_rows for p in files))

    reader = threading.Thread(target=watch)
    reader.start()
    try:
        for n in range(2):
            later = Cycle.of_run(started + dt.timedelta(minutes=n + 1), True, n, 0.1, 1.0)
            _insert(warm, run_log_rows(later, fresh * 2, None))  # three rows an append
    finally:
        done.set()
        reader.join()
    assert len(seen) > 2 and {count % 3 for count in seen} == {2 % 3}, sorted(set(seen))
    assert seen == sorted(seen) and seen[-1] == 2 + 2 * 3
    assert len(_files(day)) == 3

    assert (day.parent / "cycle_date=2020-01-01").is_dir()
    next_day = started + dt.timedelta(days=13)  # 2020-01-23: the 10th is compacted, the 1st goes
    _insert(warm, run_log_rows(Cycle.of_run(next_day, True, 0, 0, None), [], None))
    assert len(_files(day)) == 1 and pq.read_table(_files(day)[0]).num_rows == 8
    assert not (day.parent / "cycle_date=2020-01-01").exists()
    (count,) = warm.sql_rows(
        "select count(*) as n from tidemark.run_log where cycle_date < date'2020-02-01'"
    )
    assert count["n"] == 8 + 1


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if not p.name.startswith((".", "_"))]
