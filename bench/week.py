"""Benchmark of a lake that has run for days: disk per simulated day under retention, and a
one-minute cycle on a week-old lake against the same cycle on a lake holding one hour (issue 44).

    python bench/week.py --days 9 --minutes-per-day 10

How the week is filled fast: the generator simulates `--minutes-per-day` minutes of a job once
(`backpressure`, `--parallelism`, files rolling every simulated minute, gzipped as the capture
writes them). Each simulated day replays those minutes with `ts_ms` and `watermark_ms` moved to
that day and a new attempt of every task (a daily restart), so a day costs one ingest of the
day's minute files and one incremental build, not 1,440 cycles. After each day, `tidemark
maintain` (retention `--keep-days` for bronze and every mart, so that disk can level off within
the bench) expires and compacts, as `tidemark run --maintain-every` would once a day. The bench
prints, per day, the bytes of bronze, the marts, the intermediate tables and the whole lake, and
bronze's data files.

Then, in a second process, a lake holding only the last simulated day (under an hour of events)
gets the same new minutes as the week-old lake, one cycle each (ingest and build, models only):
both processes stay warm and their minutes take turns, and the bench prints both cycles'
seconds side by side. Targets (issue 44): the week-old lake's
minute <= 1.15x the hour-old lake's; after maintenance, bronze holds <= 1 data file per table per
job per day older than a day; disk flat from day 8 on; every line read accepted, duplicate or
quarantined.
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


def run_lake(work: Path, generated: Path, days: list[int], minutes: int, new: int) -> LakeRun:
    """Fill a lake day by day, maintaining after each, then time one cycle per new minute."""
    from tidemark.ingest.landed import LandedFiles
    from tidemark.lake import Lake
    from tidemark.maintain import maintain
    from tidemark.maintain.retention import Retention
    from tidemark.schedule import WarmCycle

    keep = int(os.environ["TIDEMARK_BENCH_KEEP_DAYS"])
    retention = Retention(keep, keep, keep)
    lake = Lake.from_env(str(work / "lake"))
    feed = work / "feed"
    feed.mkdir()
    shutil.copy(generated / "graph.jsonl", feed / "graph.jsonl")
    found_graph = (generated / "graph.jsonl").read_bytes().count(b"\n")
    files = sorted(generated.glob("events-*.jsonl"))
    vars_ = json.dumps({"replaced_files_keep_s": 0})  # the bench outruns the 10-minute keep
    cycle = WarmCycle(
        lake, [feed], ["--vars", vars_], tests_every=10**6, landed_files=LandedFiles("delete")
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
                total, extra,
            )
        )  # fmt: skip
        print(f"day {day}: {asdict(found.days[-1])}", file=sys.stderr, flush=True)
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


def report(week: LakeRun, hour: LakeRun, keep: int, parallelism: str, minutes: int) -> str:
    mib = 1 << 20
    rows = [
        f"a job at parallelism {parallelism}, {minutes} simulated minutes a day "
        f"({week.days[0].lines:,} events); retention {keep} days for bronze and every mart",
        f"{'day':>4} {'cycle s':>8} {'maint s':>8} {'bronze MiB':>11} {'marts MiB':>10} "
        f"{'interm MiB':>11} {'lake MiB':>9} {'bronze files':>13} {'extra':>6}",
    ]
    for d in week.days:
        rows.append(
            f"{d.day + 1:>4} {d.cycle_s:>8.1f} {d.maintain_s:>8.1f} {d.bronze_bytes / mib:>11.1f} "
            f"{d.marts_bytes / mib:>10.1f} {d.intermediate_bytes / mib:>11.1f} "
            f"{d.lake_bytes / mib:>9.1f} {d.bronze_files:>13} {d.extra_files:>6}"
        )
    extra = sum(d.extra_files for d in week.days)
    rows.append(
        f"bronze files beyond one per table, job and day (days before the newest): {extra} "
        "(target 0)"
    )
    level = [d.lake_bytes for d in week.days if d.day + 1 >= keep + 1]
    if len(level) >= 2:
        rows.append(
            f"lake bytes from day {keep + 1} on: {min(level) / mib:.1f} to {max(level) / mib:.1f} "
            f"MiB, last / first {level[-1] / level[0]:.3f} (target: flat)"
        )
    last = week.days[-1]
    kept = keep * last.lines  # bronze and the marts hold `keep` days of events at the end
    rows.append(
        "bytes per event on disk: capture file (gzip) "
        f"{week.capture_bytes / week.lines:.1f}, bronze {last.bronze_bytes / kept:.1f}, "
        f"marts {last.marts_bytes / kept:.1f}, intermediate {last.intermediate_bytes / kept:.1f}"
        f"; the whole lake {last.lake_bytes / kept:.1f} ({last.lake_bytes / keep / mib:.1f} MiB "
        "a simulated day)"
    )
    subtasks = sum(int(p) for p in parallelism.split(","))  # a total, or S,M,K
    seconds = keep * minutes * 60 * subtasks
    rows.append(f"marts per subtask and second the job ran: {last.marts_bytes / seconds:.0f} bytes")
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
    parser.add_argument("--keep-days", type=int, default=7)
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
    if args.days <= args.keep_days:
        parser.error("--days must be more than --keep-days, to see the disk level off")
    work = fresh_work(parser, args.work)
    generated = work / "generated"
    total = args.minutes_per_day + args.new_minutes
    subprocess.run(
        [str(BIN / "tidemark"), "generate", "--scenario", "backpressure", "--seed", "7",
         "--scale", str(-(-total * 60 // 150)), "--parallelism", args.parallelism,
         "--file-seconds", "60", "--out", str(generated)],
        check=True, capture_output=True,
    )  # fmt: skip
    os.environ["TIDEMARK_BENCH_KEEP_DAYS"] = str(args.keep_days)
    everyday = list(range(args.days))
    week = LakeProcess(work / "week", everyday, args.minutes_per_day, args.new_minutes)
    week.wait_for("ready")
    hour = LakeProcess(work / "hour", everyday[-1:], args.minutes_per_day, args.new_minutes)
    hour.wait_for("ready")
    for number in range(args.new_minutes):  # the same minute on each lake, taking turns
        week.minute(number)
        hour.minute(number)
    print(report(week.result(), hour.result(), args.keep_days, args.parallelism,
                 args.minutes_per_day))  # fmt: skip


if __name__ == "__main__":
    main()
