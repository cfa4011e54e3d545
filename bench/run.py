"""``make bench``: events/s of each stage and peak memory, against the bare-Spark floor.

Stages, each timed on the same generated events (default 5 million, ``--events``):

* generate: ``tidemark generate --scenario backpressure`` at the scale that gives the events;
* ingest: ``tidemark ingest`` in a subprocess, with its peak resident memory;
* start-up: dbt + Spark with nothing to build (the fixed cost of every run);
* dbt build: a full ``dbt build --full-refresh``;
* floor: a bare Spark read of the same bronze rows, written straight back out as parquet.

* gauges: the gauge models' full refresh against their floor, and an incremental run after 1 %
  more events (bench/gauges.py; issue 3: <= 3x the floor, <= 15 % of the full refresh);
* valve: the StatusWatermarkValve core through Spark against a plain loop, and 4 vs 10,000
  channels (bench/valve.py; issue 4: >= 0.5 of the loop, >= 250,000 events/s per core, <= 2x).

The pipeline's cost is printed as a ratio to the floor. Targets (issue 2): ingest at least
300,000 events/s with peak memory under 2 GB. Figures vary with the machine; run on an idle one.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))


def _run(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Run a command; returns (seconds, peak RSS in bytes)."""
    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    took = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench: {' '.join(args)} failed")
    return took, usage.ru_maxrss * 1024


def _events_per_scale(scenario: str) -> int:
    from tidemark.generate import generate

    with tempfile.TemporaryDirectory() as folder:
        return generate(scenario, Path(folder) / "probe", seed=1, scale=1).events


def _floor(lake_root: Path) -> tuple[float, float, int]:
    """(Spark start-up s, read-and-write s, rows) for a bare copy of the bronze event rows."""
    from tidemark.lake import Lake
    from tidemark.spark.bronze import snapshot_files
    from tidemark.spark.session import spark_session

    lake = Lake.from_env(lake_root)
    started = time.perf_counter()
    spark = spark_session(lake)
    startup = time.perf_counter() - started
    rows = 0
    started = time.perf_counter()
    for name in ("timer_events", "watermark_events"):
        frame = spark.read.parquet(*snapshot_files(str(lake.bronze_table(name))))
        out = lake.root / "bench-floor" / name
        frame.write.mode("overwrite").parquet(str(out))
        rows += spark.read.parquet(str(out)).count()
    took = time.perf_counter() - started
    spark.stop()
    return startup, took, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--scenario", default="backpressure")
    parser.add_argument("--work", type=Path, default=ROOT / "bench-data")
    parser.add_argument("--valve-events", type=int, default=1_000_000)
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    lake = args.work / "lake"
    data = args.work / "events"
    env = dict(os.environ)
    env.update(
        {
            "TIDEMARK_LAKE": str(lake),
            "DBT_TARGET_PATH": str(args.work / "dbt-target"),
            "DBT_LOG_PATH": str(args.work / "dbt-logs"),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        }
    )
    scale = max(1, math.ceil(args.events / _events_per_scale(args.scenario)))
    figures = _Figures()

    took, _ = _run(
        [
            str(BIN / "tidemark"),
            "generate",
            "--scenario",
            args.scenario,
            "--out",
            str(data),
            "--seed",
            "1",
            "--scale",
            str(scale),
        ],
        env,
    )
    from tidemark.ingest.files import find_files

    events = sum(sum(1 for _ in f.open("rb")) for f in find_files([data]))
    figures.append(("generate", f"{events:,} events in {took:.1f} s = {events / took:,.0f}/s"))

    took, rss = _run([str(BIN / "tidemark"), "ingest", str(data)], env)
    figures.append(("ingest", f"{took:.1f} s = {events / took:,.0f} events/s (target 300,000)"))
    figures.append(("ingest peak memory", f"{rss / 2**30:.2f} GiB (target < 2 GiB)"))

    startup, _ = _run([str(BIN / "dbt"), "run", "--select", "tag:no-such-tag"], env)
    figures.append(("dbt + Spark start-up", f"{startup:.1f} s (paid by every dbt run)"))
    took, rss = _run([str(BIN / "dbt"), "build", "--full-refresh"], env)
    figures.append(
        (
            "dbt build --full-refresh",
            f"{took:.1f} s = {events / took:,.0f} events/s, "
            f"{took - startup:.1f} s beyond start-up; peak {rss / 2**30:.2f} GiB",
        )
    )

    spark_startup, floor, rows = _floor(lake)
    figures.append(
        (
            "floor: Spark read + write",
            f"{rows:,} rows in {floor:.1f} s = {rows / floor:,.0f} rows/s "
            f"(Spark start-up {spark_startup:.1f} s not included)",
        )
    )
    figures.append(("dbt build / floor", f"{(took - startup) / floor:.1f}x (beyond start-up)"))

    # Issue 3: the gauge models on the same events, full refresh against their own floor, then
    # an incremental run after 1 % more (bench/gauges.py).
    from bench.gauges import bench_gauges

    gauges = bench_gauges(args.work / "gauges" / "lake", data)
    for line in gauges.report().splitlines():
        name, _, value = line.partition("  ")
        figures.append((f"gauges: {name.strip()}", value.strip()))

    # Issue 4: the valve core in a plain loop and through Spark, and its channel scaling
    # (bench/valve.py), on its own synthetic events.
    from bench.valve import bench_valve
    from tidemark.lake import Lake
    from tidemark.spark.session import spark_session

    spark = spark_session(Lake.from_env(args.work / "valve" / "lake"))
    try:
        for name, value in bench_valve(spark, args.valve_events).items():
            shown = f"{value:,}" if isinstance(value, int) else str(value)
            figures.append((f"valve: {name}", shown))
    finally:
        spark.stop()

    figures.print_all(f"tidemark bench: {events:,} events, {args.scenario}, {os.cpu_count()} cores")
    return 0


class _Figures(list):
    """Figures, each printed as soon as it is measured and all together at the end."""

    def append(self, item: tuple[str, str]) -> None:
        print(f"bench: {item[0]}: {item[1]}", flush=True)
        super().append(item)

    def print_all(self, title: str) -> None:
        width = max(len(name) for name, _ in self)
        print(f"\n{title}")
        for name, value in self:
            print(f"  {name.ljust(width)}  {value}")


if __name__ == "__main__":
    sys.exit(main())
