"""Benchmark: what `tidemark status` and each `tidemark run` cycle pay to read the lake's health
(docs/decisions/0017-health.md). Spark is not involved: every figure comes from files.

    python bench/health.py --lake lake                 # an existing lake (e.g. `make demo`'s)
    python bench/health.py --history-days 90           # a synthetic lake with months of history

For a lake, each part is timed alone, five times (the median): the newest landed ts_ms per job
from the Delta logs, first from nothing (``_health/landed.json`` removed: the whole snapshot)
and then as a cycle pays it (the commits since the last look); the marts' newest seconds (the
jobs' newest partition folders); bytes on disk (a walk of every file); the last ten cycles of
tidemark.run_log; and `tidemark status`'s whole read.

``--history-days N`` first writes a lake that has run for N days: one job's eight partitioned
marts with a partition per ten minutes (one small parquet file each), and bronze with one
commit per hour; then it times the same parts, and a cycle's look after one more commit. What
follows the new data stays flat as N grows; what lists or walks history grows with it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

JOB = "b" * 32
START_MS = 1_767_225_600_000  # 2026-01-01


def timed(call: Callable[[], object], turns: int = 5, before: Callable[[], object] | None = None):
    """The median seconds of ``turns`` calls (``before`` runs untimed ahead of each)."""
    seconds = []
    for _ in range(turns):
        if before:
            before()
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def measure(lake_root: Path) -> dict[str, float]:
    from tidemark.health.disk import disk_usage
    from tidemark.health.landed import landed_newest
    from tidemark.health.marts import marts_newest
    from tidemark.health.model import active_jobs
    from tidemark.health.paths import state_path
    from tidemark.health.read import read_status
    from tidemark.health.run_log import last_cycles
    from tidemark.lake import Lake

    lake = Lake.from_env(lake_root)
    state = state_path(lake)
    landed = landed_newest(lake)
    jobs = active_jobs(landed)
    return {
        "landed, from nothing": timed(
            lambda: landed_newest(lake), 3, lambda: state.unlink(missing_ok=True)
        ),  # fmt: skip
        "landed, nothing new": timed(lambda: landed_newest(lake)),
        "marts' newest seconds": timed(lambda: marts_newest(lake, landed, jobs)),
        "bytes on disk": timed(lambda: disk_usage(lake)),
        "last 10 cycles": timed(lambda: last_cycles(lake, 10)),
        "status, all of it": timed(lambda: read_status(lake, 10)),
    }


def synthetic_history(root: Path, hours: int) -> dict[str, int]:
    """A lake that has run for ``hours``: per mart a partition per ten minutes of one job, and
    bronze timer events committed once an hour; returns what it wrote."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    from tidemark.health.model import MARTS
    from tidemark.lake import Lake

    lake = Lake.from_env(root)
    files = 0
    for mart, column in MARTS.items():
        job = lake.warehouse / "tidemark.db" / mart / f"job_id={JOB}"
        for hour in range(hours):
            at = START_MS + hour * 3_600_000
            name = dt.datetime.fromtimestamp(at / 1000, dt.UTC).strftime("%Y-%m-%d %H%%3A00%%3A00")
            for minute in range(0, 60, 10):
                folder = job / f"hour_at={name}" / f"minute_slice={minute}"
                folder.mkdir(parents=True)
                first = at + minute * 60_000
                table = pa.table({column: pa.array([first, first + 599_000], pa.int64())})
                pq.write_table(table, folder / "part-00000.snappy.parquet")
                files += 1
    timers = str(lake.bronze_table("timer_events"))
    for hour in range(hours):
        at = START_MS + hour * 3_600_000
        rows = pa.table({"job_id": [JOB, JOB], "ts_ms": pa.array([at, at + 3_599_999], pa.int64())})
        write_deltalake(timers, rows, mode="append")
    return {"mart files": files, "bronze commits": hours}


def one_more_commit(root: Path, hour: int) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from tidemark.lake import Lake

    at = START_MS + hour * 3_600_000
    rows = pa.table({"job_id": [JOB], "ts_ms": pa.array([at], pa.int64())})
    write_deltalake(str(Lake.from_env(root).bronze_table("timer_events")), rows, mode="append")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", type=Path, help="an existing lake to time")
    parser.add_argument("--history-days", type=int, help="write and time a synthetic lake")
    parser.add_argument("--work", type=Path, default=None, help="where the synthetic lake goes")
    args = parser.parse_args(argv)
    if (args.lake is None) == (args.history_days is None):
        parser.error("give --lake or --history-days")
    if args.lake is not None:
        for part, seconds in measure(args.lake.resolve()).items():
            print(f"{part:24} {seconds * 1000:10.1f} ms")
        return 0
    work = Path(tempfile.mkdtemp(prefix="tidemark-health-", dir=args.work))
    try:
        started = time.perf_counter()
        wrote = synthetic_history(work / "lake", args.history_days * 24)
        print(f"wrote {wrote} in {time.perf_counter() - started:.0f} s")
        for part, seconds in measure(work / "lake").items():
            print(f"{part:24} {seconds * 1000:10.1f} ms")
        from tidemark.health.landed import landed_newest
        from tidemark.lake import Lake

        lake = Lake.from_env(work / "lake")
        hours = args.history_days * 24
        cycle = timed(lambda: landed_newest(lake), 5,
                      lambda: one_more_commit(work / "lake", hours))  # fmt: skip
        print(f"{'landed, one new commit':24} {cycle * 1000:10.1f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
