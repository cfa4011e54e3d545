"""Benchmark of the timer gauge models: a full refresh, then an incremental run after 1 % more.

    python bench/gauges.py --scale 63          # generate ~5 M timer events, then benchmark
    python bench/gauges.py --events DIR [--lake DIR]

`bench_gauges(lake, events)` splits the event files in arrival order (the generator writes lines
in rough arrival order, with jitter, so the last 1 % holds a few late events too), ingests the
first 99 %, and times with real `dbt` subprocesses, as `dbt build` runs them on the schedule:

* start-up: dbt parsing, the embedded Spark session and its first query (`dbt show` of a query
  that reads no rows);
* floor: Spark reading the bronze rows the gauge models read and writing them as parquet;
* full refresh: `dbt run --full-refresh --select int_timer_tasks_planned+` without the analysis
  marts downstream (issue 5's, not gauge marts): the gauge intermediates and marts;
* incremental, a handful of events: the same selection without --full-refresh after ingesting
  the `SMALL_LINES` lines that precede the tail: the per-run cost that does not grow with the new
  data (planning, dbt-spark's statements per model, the JVM compiling each query shape);
* incremental: the same, after ingesting the last 1 %;
* analysis marts: `dbt run --select fct_backpressure_incidents+` after that, what a scheduled
  `dbt build` adds on top (they are rebuilt in full each run), reported on their own line.

Model times exclude the start-up. Targets (issue 3): full refresh <= 3x the floor, incremental
<= 15 % of the full refresh. Keep Spark small on a shared machine: TIDEMARK_SHUFFLE_PARTITIONS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GAUGE_MODELS = [
    "--select",
    "int_timer_tasks_planned+",
    "--exclude",
    "fct_backpressure_incidents+",
    "fct_capture_conformance",  # also reads the valve marts, which this bench does not build
    # The metric views (issue 42) join dim_vertices, which neither selection builds.
    "path:models/marts/metrics",
]
ANALYSIS_MODELS = [
    "--select",
    "fct_backpressure_incidents+",
    "--exclude",
    "path:models/marts/metrics",
]
SMALL_LINES = 200
# Start-up probe: dbt parses the project, starts Spark and runs one query that reads no rows, so
# the JVM's first-query warm-up counts as start-up, not as the models' work.
PROBE = "select count(*) as n from bronze.timer_events where ingest_id < 0"

FLOOR_SCRIPT = """
import sys, time
from tidemark.lake import Lake
from tidemark.spark.session import spark_session
spark = spark_session(Lake.from_env())
started = time.perf_counter()
for table in ("timer_events", "watermark_events"):
    spark.table(f"bronze.{table}").write.mode("overwrite").parquet(f"{sys.argv[1]}/{table}")
print(time.perf_counter() - started)
"""


@dataclass
class GaugeBench:
    timer_events: int
    watermark_events: int
    tail_lines: int
    startup_s: float
    floor_s: float
    full_refresh_s: float
    small_lines: int
    small_incremental_s: float
    incremental_s: float
    analysis_s: float

    @property
    def full_vs_floor(self) -> float:
        return self.full_refresh_s / self.floor_s

    @property
    def incremental_vs_full(self) -> float:
        return self.incremental_s / self.full_refresh_s

    @property
    def incremental_work_vs_full(self) -> float:
        """What the 1 % run costs beyond a run over a handful of events, over the full refresh."""
        return max(self.incremental_s - self.small_incremental_s, 0.0) / self.full_refresh_s

    def report(self) -> str:
        per_s = self.timer_events / self.full_refresh_s if self.full_refresh_s else 0.0
        return "\n".join(
            [
                f"timer events (after the tail)  {self.timer_events:>12,}",
                f"watermark events                {self.watermark_events:>12,}",
                f"tail lines ingested (~1 %)      {self.tail_lines:>12,}",
                f"dbt + Spark start-up            {self.startup_s:>10.1f} s  (in every dbt run)",
                f"floor: read + write bronze      {self.floor_s:>10.1f} s",
                f"full refresh, gauge models      {self.full_refresh_s:>10.1f} s  "
                f"= {self.full_vs_floor:.2f}x floor (target <= 3x), {per_s:,.0f} timer events/s",
                f"{f'incremental run, +{self.small_lines} lines':<32}"
                f"{self.small_incremental_s:>10.1f} s  "
                "(per-run cost: 7 models' planning, dbt-spark statements, JIT compiling)",
                f"incremental run after +1 %      {self.incremental_s:>10.1f} s  "
                f"= {self.incremental_vs_full:.1%} of full; beyond the per-run cost "
                f"{self.incremental_work_vs_full:.1%} (target <= 15 %)",
                f"analysis marts after it         {self.analysis_s:>10.1f} s  "
                "(incidents and bottlenecks, rebuilt in full; not gauge marts)",
            ]
        )


def generate_backpressure(out: Path, scale: int) -> Path:
    """The `backpressure` scenario at `scale`, seed 7, written to `out` by `tidemark generate`."""
    subprocess.run(
        [str(Path(sys.executable).parent / "tidemark"), "generate", "--scenario", "backpressure",
         "--seed", "7", "--scale", str(scale), "--out", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


def fresh_work(parser: argparse.ArgumentParser, work: Path) -> Path:
    """``work``, resolved and created empty (else a usage error); the current directory becomes
    the repository root, where dbt reads the project and profiles.yml."""
    work = work.resolve()
    os.chdir(ROOT)
    if work.exists() and any(work.iterdir()):
        parser.error(f"{work} is not empty: give a new folder")
    work.mkdir(parents=True, exist_ok=True)
    return work


def _environment(lake: Path) -> dict[str, str]:
    env = dict(os.environ)
    work = lake.parent / ".bench-dbt"
    env.update(
        {
            "TIDEMARK_LAKE": str(lake),
            "DBT_TARGET_PATH": str(work / "target"),
            "DBT_LOG_PATH": str(work / "logs"),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "TIDEMARK_SHUFFLE_PARTITIONS": env.get("TIDEMARK_SHUFFLE_PARTITIONS", "2"),
        }
    )
    return env


def _run(args: list[str], lake: Path) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        args, cwd=ROOT, env=_environment(lake), capture_output=True, text=True, check=False
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(args)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )
    return took, done.stdout


def split_events(
    events: Path, out: Path, tail_fraction: float = 0.01, small_lines: int = SMALL_LINES
) -> tuple[Path, Path, Path, int]:
    """Copy `events` into out/base, out/small and out/tail, in file name and line order (arrival
    order): the last `tail_fraction` of the event lines go to the tail, the `small_lines` before
    them to small, the rest and the graph files to the base."""
    base, small, tail = out / "base", out / "small", out / "tail"
    for folder in (base, small, tail):
        folder.mkdir(parents=True, exist_ok=True)
    files = sorted(p for p in events.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")))
    event_files = [p for p in files if p.name.startswith("events")]
    for path in files:
        if path not in event_files:
            (base / path.name).write_bytes(path.read_bytes())
    total = sum(sum(1 for _ in path.open("rb")) for path in event_files)
    keep = total - int(total * tail_fraction)
    small_from = keep - small_lines
    seen = 0
    with (
        (small / "events-small.jsonl").open("wb") as small_out,
        (tail / "events-tail.jsonl").open("wb") as tail_out,
    ):
        for path in event_files:
            with path.open("rb") as source, (base / path.name).open("wb") as base_out:
                for line in source:
                    out = base_out if seen < small_from else small_out if seen < keep else tail_out
                    out.write(line)
                    seen += 1
    return base, small, tail, total - keep


def bench_gauges(lake: Path | str, events: Path | str, tail_fraction: float = 0.01) -> GaugeBench:
    """Benchmark the gauge models on `events` in the (new or empty) lake folder `lake`."""
    lake, events = Path(lake).resolve(), Path(events).resolve()
    split = lake.parent / "bench-events"
    base, small, tail, tail_lines = split_events(events, split, tail_fraction)
    tidemark, dbt, python = str(BIN / "tidemark"), str(BIN / "dbt"), str(BIN / "python")

    _run([tidemark, "ingest", str(base)], lake)
    startup_s, _ = _run([dbt, "show", "--inline", PROBE], lake)
    floor_out = lake.parent / "bench-floor"
    _, printed = _run([python, "-c", FLOOR_SCRIPT, str(floor_out)], lake)
    floor_s = float(printed.strip().splitlines()[-1])
    full_s, _ = _run([dbt, "run", "--full-refresh", *GAUGE_MODELS], lake)
    _run([tidemark, "ingest", str(small)], lake)
    small_s, _ = _run([dbt, "run", *GAUGE_MODELS], lake)
    _run([tidemark, "ingest", str(tail)], lake)
    incremental_s, _ = _run([dbt, "run", *GAUGE_MODELS], lake)
    analysis_s, _ = _run([dbt, "run", *ANALYSIS_MODELS], lake)

    counts = _count_events(lake)
    return GaugeBench(
        timer_events=counts["timer_events"],
        watermark_events=counts["watermark_events"],
        tail_lines=tail_lines,
        startup_s=startup_s,
        floor_s=floor_s,
        full_refresh_s=max(full_s - startup_s, 0.0),
        small_lines=SMALL_LINES,
        small_incremental_s=max(small_s - startup_s, 0.0),
        incremental_s=max(incremental_s - startup_s, 0.0),
        analysis_s=max(analysis_s - startup_s, 0.0),
    )


def _count_events(lake: Path) -> dict[str, int]:
    from deltalake import DeltaTable

    counts = {}
    for table in ("timer_events", "watermark_events"):
        path = lake / "bronze" / table
        counts[table] = (
            DeltaTable(str(path)).to_pyarrow_dataset().count_rows()
            if DeltaTable.is_deltatable(str(path))
            else 0
        )
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", type=Path, default=ROOT / "bench-data" / "gauges" / "lake")
    parser.add_argument("--events", type=Path, help="generated events (default: generate them)")
    parser.add_argument("--scale", type=int, default=63, help="generator scale when generating")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.lake.exists() and any(args.lake.iterdir()):
        parser.error(f"{args.lake} is not empty: give a new lake folder")
    events = args.events
    if events is None:
        events = args.lake.parent / "generated"
        _run(
            [
                str(BIN / "tidemark"),
                "generate",
                "--scenario",
                "backpressure",
                "--scale",
                str(args.scale),
                "--out",
                str(events),
            ],
            args.lake,
        )
    result = bench_gauges(args.lake, events)
    print(json.dumps(asdict(result), indent=2) if args.json else result.report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
