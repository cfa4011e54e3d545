"""Benchmark of a lake that has run for days: disk per simulated day under retention, and a
one-minute cycle on a week-old lake against the same cycle on a lake holding one hour (issues 44
and 64).

    python bench/week.py --days 9 --minutes-per-day 10

How the week is filled fast: the generator simulates `--minutes-per-day` minutes of a job once
(`backpressure`, `--parallelism`, files rolling every simulated minute, gzipped as the capture
writes them). Each simulated day replays those minutes with `ts_ms` and `watermark_ms` moved to
that day and a new attempt of every task (a daily restart), so a day costs one ingest of the
day's minute files and one incremental `dbt build` with its data tests, not 1,440 cycles. After
each day, `tidemark maintain` expires and compacts, as `tidemark run --maintain-every` would
once a day, with a different retention for bronze, the task marts and the vertex marts
(`--keep-bronze-days`, `--keep-task-marts-days`, `--keep-vertex-marts-days`, defaults 3, 4 and 5
so that the lake runs past all three within the bench). Every day's build runs the data tests,
and a failing one stops the bench. The bench prints, per day, the bytes of bronze, the marts, the
intermediate tables and the whole lake, bronze's data files, and the rows and bytes of the
incremental state (`models/intermediate/state/` and `int_backpressure_samples_counted`).

Then, in a second process, a lake holding only the last simulated day (under an hour of events)
gets the same new minutes as the week-old lake, one cycle each (ingest and build, models only):
both processes stay warm and their minutes take turns, and the bench prints both cycles'
seconds side by side. Targets (issues 44, 64): every build passes its data tests; the week-old
lake's minute <= 1.15x the hour-old lake's; after maintenance, bronze holds <= 1 data file per
table per job per day older than a day; disk, and the state's rows and bytes, flat once the
longest retention is full; every line read accepted, duplicate or quarantined.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gauges import _environment, fresh_work  # noqa: E402

BIN = Path(sys.executable).parent
DAY_MS = 86_400_000
_SHIFTED = re.compile(rb'"(ts_ms|watermark_ms)":(\d+)|"attempt":(\d+)')
# The incremental state: the checkpoints a run resumes from, and the sample counts the legacy mart
# resumes from.
STATE = (
    "int_timer_tasks_checkpointed",
    "int_timer_seconds_checkpointed",
    "int_valve_states_checkpointed",
    "int_backpressure_samples_counted",
)


@dataclass
class Day:
    day: int
    lines: int
    landed: int
    cycle_s: float
    maintain_s: float
    bronze_bytes: int
    marts_bytes: int
    intermediate_bytes: int
    lake_bytes: int
    bronze_files: int
    extra_files: int  # bronze files beyond one per table, job and day, for days before the last
    state_rows: int  # the incremental state's rows (STATE), after maintenance
    state_bytes: int  # and its folders' bytes


@dataclass
class LakeRun:
    days: list[Day] = field(default_factory=list)
    minutes_s: list[float] = field(default_factory=list)
    lines: int = 0
    capture_bytes: int = 0  # the gzipped capture files landed
    accounted: int = 0  # accepted + duplicates + quarantined, from the ingest reports


def shift(source: Path, target: Path, day: int) -> tuple[int, int]:
    """``source``'s events moved ``day`` days on, as attempt ``day``, written gzipped."""
    offset = day * DAY_MS

    def moved(match: re.Match) -> bytes:
        if match.group(3) is not None:
            return b'"attempt":%d' % day
        return b'"%s":%d' % (match.group(1), int(match.group(2)) + offset)

    data = _SHIFTED.sub(moved, source.read_bytes())
    packed = gzip.compress(data, compresslevel=6)  # the capture's gzip=true, Java's level
    target.write_bytes(packed)
    return data.count(b"\n"), len(packed)


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def bronze_files(lake) -> tuple[int, int]:
    """Bronze's data files, and how many of the event tables' files, for days before the newest
    event's, are beyond one per table, job and day."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from tidemark.maintain.bronze import LAYOUTS, newest_event_ms
    from tidemark.maintain.retention import day_start

    today = day_start(newest_event_ms(lake) or 0)
    total = extra = 0
    for name, layout in LAYOUTS.items():
        path = str(lake.bronze_table(name))
        if not DeltaTable.is_deltatable(path):
            continue
        actions = pa.table(DeltaTable(path).get_add_actions(flatten=True))
        total += actions.num_rows
        if layout.time != "ts_ms" or not actions.num_rows:
            continue
        groups: dict[tuple, int] = {}
        for low, high, job in zip(
            actions["min.ts_ms"].to_pylist(),
            actions["max.ts_ms"].to_pylist(),
            actions["min.job_id"].to_pylist(),
            strict=True,
        ):
            if high < today:
                key = (job, day_start(low))
                groups[key] = groups.get(key, 0) + 1
        extra += sum(n - 1 for n in groups.values())
    return total, extra


def state_size(sql, warehouse: Path) -> tuple[int, int]:
    """The incremental state's rows and bytes on disk."""
    present = {row[1] for row in sql("show tables in tidemark_intermediate")}
    tables = [name for name in STATE if name in present]
    rows = sum(sql(f"select count(*) from tidemark_intermediate.{name}")[0][0] for name in tables)
    folder = warehouse / "tidemark_intermediate.db"
    return rows, sum(folder_bytes(folder / name) for name in tables)


def run_lake(work: Path, generated: Path, days: list[int], minutes: int, new: int) -> LakeRun:
    """Fill a lake day by day, each day's build with its data tests and maintaining after each,
    then time one cycle per new minute (models only)."""
    from tidemark.ingest.landed import LandedFiles
    from tidemark.lake import Lake
    from tidemark.maintain import maintain
    from tidemark.maintain.retention import Retention
    from tidemark.schedule import WarmCycle

    retention = Retention(*json.loads(os.environ["TIDEMARK_BENCH_RETENTION"]))
    lake = Lake.from_env(str(work / "lake"))
    feed = work / "feed"
    feed.mkdir()
    shutil.copy(generated / "graph.jsonl", feed / "graph.jsonl")
    found_graph = (generated / "graph.jsonl").read_bytes().count(b"\n")
    files = sorted(generated.glob("events-*.jsonl"))
    vars_ = json.dumps({"replaced_files_keep_s": 0})  # the bench outruns the 10-minute keep
    cycle = WarmCycle(
        lake, [feed], ["--vars", vars_], tests_every=1, landed_files=LandedFiles("delete")
    )
    sql = lambda q: [tuple(r) for r in cycle.spark.sql(q).collect()]  # noqa: E731
    found = LakeRun(lines=found_graph)

    def one_cycle(names: list[Path], day: int) -> tuple[int, int, float]:
        shifted = [shift(f, feed / f"{f.stem}-day{day}.jsonl.gz", day) for f in names]
        lines = sum(n for n, _ in shifted)
        found.capture_bytes += sum(b for _, b in shifted)
        started = time.perf_counter()
        result = cycle()
        took = time.perf_counter() - started
        if not result.ok:
            raise RuntimeError(f"day {day}: {result.describe()}")
        found.lines += lines
        return lines, result.landed, took

    for day in days:
        lines, landed, took = one_cycle(files[:minutes], day)
        started = time.perf_counter()
        maintain(lake, retention, sql, keep_ms=0)
        maintained = time.perf_counter() - started
        total, extra = bronze_files(lake)
        warehouse = lake.warehouse
        found.days.append(
            Day(
                day, lines, landed, took, maintained,
                folder_bytes(lake.bronze), folder_bytes(warehouse / "tidemark.db"),
                folder_bytes(warehouse / "tidemark_intermediate.db"), folder_bytes(lake.root),
                total, extra, *state_size(sql, warehouse),
            )
        )  # fmt: skip
        print(f"day {day}: {asdict(found.days[-1])}", file=sys.stderr, flush=True)
    cycle.tests_every = 10**6  # the new minutes: models only, on both lakes alike
    (work / "ready").touch()
    for number, minute in enumerate(files[minutes : minutes + new]):
        while not (work / f"go-{number}").exists():
            time.sleep(0.1)
        found.minutes_s.append(one_cycle([minute], days[-1])[2])
        (work / f"done-{number}").touch()
    found.accounted = accounted(lake)
    cycle.spark.stop()
    return found


def accounted(lake) -> int:
    """Lines the ingest log says it read, every one accepted, duplicate or quarantined."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    log = DeltaTable(str(lake.bronze_table("ingest_log"))).to_pyarrow_table()
    read = pc.sum(log["lines_read"]).as_py()
    placed = sum(pc.sum(log[c]).as_py() for c in ("accepted", "duplicates", "quarantined"))
    if read != placed:
        raise RuntimeError(f"lines read {read} != accepted + duplicates + quarantined {placed}")
    return placed


class LakeProcess:
    """``run_lake`` in a process of its own (one Spark session per process and lake), which fills
    its lake, then runs one new minute each time the bench says go, so that the two lakes'
    minutes take turns on the machine."""

    def __init__(self, work: Path, days: list[int], minutes: int, new: int) -> None:
        work.mkdir(parents=True)
        self.work = work
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--lake-run", str(work),
             "--generated", str(work.parent / "generated"),
             "--day-list", ",".join(map(str, days)), "--minutes-per-day", str(minutes),
             "--new-minutes", str(new)],
            env=_environment(work / "lake"),
        )  # fmt: skip

    def wait_for(self, name: str) -> None:
        while not (self.work / name).exists():
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the lake run in {self.work} failed ({self.process.returncode})"
                )
            time.sleep(0.2)

    def minute(self, number: int) -> None:
        (self.work / f"go-{number}").touch()
        self.wait_for(f"done-{number}")

    def result(self) -> LakeRun:
        if self.process.wait() != 0:
            raise RuntimeError(f"the lake run in {self.work} failed ({self.process.returncode})")
        raw = json.loads((self.work / "result.json").read_text())
        days = [Day(**d) for d in raw.pop("days")]
        return LakeRun(days, **raw)


def flat(values: list[int], unit: int, name: str, since: int) -> str:
    return (
        f"{name} from day {since} on: {min(values) / unit:,.1f} to {max(values) / unit:,.1f}, "
        f"last / first {values[-1] / values[0]:.3f} (target: flat)"
    )


def report(
    week: LakeRun, hour: LakeRun, keep: tuple[int, int, int], parallelism: str, minutes: int
) -> str:
    mib, kib = 1 << 20, 1 << 10
    bronze_days, task_days, vertex_days = keep
    rows = [
        f"a job at parallelism {parallelism}, {minutes} simulated minutes a day "
        f"({week.days[0].lines:,} events); retention: bronze {bronze_days} days, task marts "
        f"{task_days}, vertex marts {vertex_days}; every day's build ran its data tests and passed",
        f"{'day':>4} {'cycle s':>8} {'maint s':>8} {'bronze MiB':>11} {'marts MiB':>10} "
        f"{'interm MiB':>11} {'lake MiB':>9} {'bronze files':>13} {'extra':>6} "
        f"{'state rows':>11} {'state KiB':>10}",
    ]
    for d in week.days:
        rows.append(
            f"{d.day + 1:>4} {d.cycle_s:>8.1f} {d.maintain_s:>8.1f} {d.bronze_bytes / mib:>11.1f} "
            f"{d.marts_bytes / mib:>10.1f} {d.intermediate_bytes / mib:>11.1f} "
            f"{d.lake_bytes / mib:>9.1f} {d.bronze_files:>13} {d.extra_files:>6} "
            f"{d.state_rows:>11,} {d.state_bytes / kib:>10.1f}"
        )
    extra = sum(d.extra_files for d in week.days)
    rows.append(
        f"bronze files beyond one per table, job and day (days before the newest): {extra} "
        "(target 0)"
    )
    since = vertex_days + 1  # the first day after the longest retention is full
    full = [d for d in week.days if d.day + 1 >= since]
    if len(full) >= 2:
        rows.append(flat([d.lake_bytes for d in full], mib, "lake MiB", since))
        rows.append(flat([d.state_rows for d in full], 1, "state rows", since))
        rows.append(flat([d.state_bytes for d in full], kib, "state KiB", since))
    last = week.days[-1]
    per_day = last.lines  # events a simulated day
    rows.append(
        f"bytes per event on disk: capture file (gzip) {week.capture_bytes / week.lines:.1f}, "
        f"bronze {last.bronze_bytes / (bronze_days * per_day):.1f}, the marts (task "
        f"{task_days} days, vertex {vertex_days}) {last.marts_bytes / (task_days * per_day):.1f} "
        "per event of the task marts' days, the intermediate tables "
        f"{last.intermediate_bytes / (bronze_days * per_day):.1f} per event of bronze's; the "
        f"whole lake {last.lake_bytes / vertex_days / mib:.1f} MiB a day of the longest retention"
    )
    w, h = statistics.median(week.minutes_s), statistics.median(hour.minutes_s)
    rows.append(
        f"one new minute, cycle s (each):  week-old lake {week.minutes_s}  hour-old lake "
        f"{hour.minutes_s}"
    )
    rows.append(f"median: week-old {w:.1f} s, hour-old {h:.1f} s = {w / h:.2f}x (target <= 1.15x)")
    rows.append(
        f"nothing lost: lines read {week.lines:,} / {hour.lines:,}, accepted + duplicate + "
        f"quarantined {week.accounted:,} / {hour.accounted:,}"
    )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", type=Path, default=Path("bench-data") / f"week-{int(time.time())}"
    )
    parser.add_argument("--days", type=int, default=9)
    parser.add_argument("--minutes-per-day", type=int, default=10)
    parser.add_argument("--new-minutes", type=int, default=3)
    parser.add_argument("--keep-bronze-days", type=int, default=3)
    parser.add_argument("--keep-task-marts-days", type=int, default=4)
    parser.add_argument("--keep-vertex-marts-days", type=int, default=5)
    parser.add_argument("--parallelism", default="1,1,1")
    parser.add_argument("--lake-run", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--generated", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--day-list", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lake_run is not None:
        days = [int(d) for d in args.day_list.split(",")]
        run = run_lake(args.lake_run, args.generated, days, args.minutes_per_day, args.new_minutes)
        (args.lake_run / "result.json").write_text(json.dumps(asdict(run)))
        return
    keep = (args.keep_bronze_days, args.keep_task_marts_days, args.keep_vertex_marts_days)
    if args.days <= keep[2] + 1:
        parser.error("--days must be more than --keep-vertex-marts-days + 1, to see it level off")
    from tidemark.maintain.retention import Retention

    Retention(*keep)  # the same checks as tidemark maintain's, before the lakes start
    work = fresh_work(parser, args.work)
    generated = work / "generated"
    total = args.minutes_per_day + args.new_minutes
    subprocess.run(
        [str(BIN / "tidemark"), "generate", "--scenario", "backpressure", "--seed", "7",
         "--scale", str(-(-total * 60 // 150)), "--parallelism", args.parallelism,
         "--file-seconds", "60", "--out", str(generated)],
        check=True, capture_output=True,
    )  # fmt: skip
    os.environ["TIDEMARK_BENCH_RETENTION"] = json.dumps(keep)
    everyday = list(range(args.days))
    week = LakeProcess(work / "week", everyday, args.minutes_per_day, args.new_minutes)
    week.wait_for("ready")
    hour = LakeProcess(work / "hour", everyday[-1:], args.minutes_per_day, args.new_minutes)
    hour.wait_for("ready")
    for number in range(args.new_minutes):  # the same minute on each lake, taking turns
        week.minute(number)
        hour.minute(number)
    print(report(week.result(), hour.result(), keep, args.parallelism,
                 args.minutes_per_day))  # fmt: skip


if __name__ == "__main__":
    main()
