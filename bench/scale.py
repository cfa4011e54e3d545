"""Benchmark at scale: a 1,000-subtask job, one simulated minute per cycle of `tidemark run`.

    python bench/scale.py --parallelism 1000 --minutes 10

The generator simulates the job (`backpressure`, pointwise edges: every valve has the channels
Flink's scheduler would give it) with its files rolling every simulated minute
(`--file-seconds 60`). One warm `tidemark run` process (tidemark.schedule.WarmCycle: one Spark
session, one parsed dbt project) then takes the minutes one after another: the minute's files
arrive in the capture folder, one cycle ingests them and builds every mart, with the data tests
on the first build only, as the README's one-minute schedule runs them (`--tests-every 60`).
Per minute it prints the events, ingest seconds, build seconds, whether the minute was kept
(ingest and build in under 60 s, issue 11), and what the JVM spent compiling code: the query
classes Spark generated and compiled, and the JIT compilers' seconds (decision 0007). Landed
files are deleted as it goes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gauges import _environment, fresh_work  # noqa: E402

BIN = Path(sys.executable).parent
MINUTE_S = 60.0


@dataclass
class Minute:
    minute: int
    events: int
    ingest_s: float
    build_s: float
    classes: int  # query classes Spark generated and compiled (Janino) in the minute
    jit_s: float  # seconds the JVM's JIT compilers spent in the minute
    models: dict[str, float]  # each model's seconds in the minute's build (dbt's run_results)

    @property
    def total_s(self) -> float:
        return self.ingest_s + self.build_s

    @property
    def kept(self) -> bool:
        return self.total_s < MINUTE_S


@dataclass
class ScaleBench:
    parallelism: str
    generate_s: float
    events_generated: int
    start_s: float
    minutes: list[Minute]

    def report(self) -> str:
        rows = [
            f"job: {self.parallelism} subtasks, pointwise; generated {self.events_generated:,} "
            f"events in {self.generate_s:.1f} s",
            f"warm start (Spark, dbt parse): {self.start_s:.1f} s",
            "minute      events   ingest s   build s   total s   kept (< 60 s)   classes   JIT s",
        ]
        rows += [
            f"{m.minute:>6} {m.events:>11,} {m.ingest_s:>10.1f} {m.build_s:>9.1f} "
            f"{m.total_s:>9.1f}   {'yes' if m.kept else 'no ':<13} {m.classes:>7} {m.jit_s:>7.1f}"
            for m in self.minutes
        ]
        first, second, last = (
            self.minutes[0],
            self.minutes[min(1, len(self.minutes) - 1)],
            self.minutes[-1],
        )
        kept = sum(m.kept for m in self.minutes)
        rows.append(
            f"kept {kept} of {len(self.minutes)} minutes (target: all); last / first minute "
            f"{last.total_s / first.total_s:.2f} (target <= 1.00); last / second (the first "
            f"incremental one) {last.total_s / second.total_s:.2f}"
        )
        streak = longest_kept_run(self.minutes)
        rows.append(
            f"longest run of kept minutes: {len(streak)} (target: ten in a row)"
            + (
                f", minutes {streak[0].minute} to {streak[-1].minute}; its last / its first "
                f"{streak[-1].total_s / streak[0].total_s:.2f}"
                if streak
                else ""
            )
        )
        return "\n".join(rows)

    def models_report(self, top: int) -> str:
        """The ``top`` models with the most seconds summed over the minutes, one column a
        minute (dbt runs four at a time on two cores, so a model's seconds include waiting)."""
        totals: dict[str, float] = {}
        for m in self.minutes:
            for name, seconds in m.models.items():
                totals[name] = totals.get(name, 0.0) + seconds
        names = sorted(totals, key=totals.__getitem__, reverse=True)[:top]
        width = max((len(n) for n in names), default=5)
        rows = [f"{'model':<{width}} " + "".join(f"{m.minute:>7}" for m in self.minutes)]
        rows += [
            f"{name:<{width}} "
            + "".join(
                f"{m.models[name]:>7.1f}" if name in m.models else f"{'-':>7}" for m in self.minutes
            )
            for name in names
        ]
        return "\n".join(rows)


def model_seconds(run_results: Path) -> dict[str, float]:
    """Each model's execution seconds from dbt's ``run_results.json`` (tests left out)."""
    results = json.loads(run_results.read_text())["results"]
    return {
        r["unique_id"].split(".")[-1]: r["execution_time"]
        for r in results
        if r["unique_id"].startswith("model.")
    }


def longest_kept_run(minutes: list[Minute]) -> list[Minute]:
    """The longest run of consecutive kept minutes (the earliest of equal ones), or []."""
    best: list[Minute] = []
    run: list[Minute] = []
    for minute in minutes:
        run = [*run, minute] if minute.kept else []
        if len(run) > len(best):
            best = run
    return best


class JvmCompiling:
    """What the local Spark JVM spends on code it compiles: the classes Spark generates for its
    queries (a query whose generated source is new is compiled again) and the JVM's JIT
    compilation time (its CompilationMXBean, summed over the compiler threads)."""

    def __init__(self, spark) -> None:
        jvm = spark._jvm
        self._codegen = jvm.org.apache.spark.metrics.source.CodegenMetrics
        self._jit = jvm.java.lang.management.ManagementFactory.getCompilationMXBean()

    def reading(self) -> tuple[float, float]:
        classes = self._codegen.METRIC_COMPILATION_TIME().getCount()
        return float(classes), self._jit.getTotalCompilationTime() / 1000


def bench_scale(
    work: Path, parallelism: str, minutes: int, seed: int, tests_every: int
) -> ScaleBench:
    from tidemark.lake import Lake
    from tidemark.schedule import WarmCycle

    generated = work / "generated"
    scale = -(-minutes * 60 // 150)  # one scale unit is 150 simulated seconds
    started = time.perf_counter()
    subprocess.run(
        [str(BIN / "tidemark"), "generate", "--scenario", "backpressure", "--seed", str(seed),
         "--scale", str(scale), "--parallelism", parallelism, "--edges", "pointwise",
         "--file-seconds", "60", "--out", str(generated)],
        check=True, capture_output=True,
    )  # fmt: skip
    generate_s = time.perf_counter() - started
    manifest = json.loads((generated / "manifest.json").read_text())
    spans = manifest["file_spans"]["events_files"][:minutes]

    os.environ.update(_environment(work / "lake"))
    feed = work / "feed"
    feed.mkdir()
    shutil.move(generated / "graph.jsonl", feed / "graph.jsonl")
    started = time.perf_counter()
    cycle = WarmCycle(Lake.from_env(str(work / "lake")), [feed], tests_every=tests_every)
    start_s = time.perf_counter() - started
    jvm = JvmCompiling(cycle.spark)
    done: list[Minute] = []
    for number, names in enumerate(spans, 1):
        for name in names:
            shutil.move(generated / name, feed / name)
        before = jvm.reading()
        result = cycle()
        if not result.ok or result.build_s is None:
            raise RuntimeError(f"minute {number}: {result.describe()}")
        classes, jit_s = (now - was for now, was in zip(jvm.reading(), before, strict=True))
        models = model_seconds(Path(os.environ["DBT_TARGET_PATH"]) / "run_results.json")
        done.append(
            Minute(
                number, result.landed, result.ingest_s, result.build_s, int(classes), jit_s, models
            )
        )
        print(f"minute {number}: {result.describe()}", file=sys.stderr, flush=True)
        for name in names:
            (feed / name).unlink()
    cycle.spark.stop()
    return ScaleBench(parallelism, generate_s, manifest["events"], start_s, done)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("bench-data") / "scale")
    parser.add_argument("--parallelism", default="1000", help="N or S,M,K (tidemark generate)")
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--tests-every",
        type=int,
        default=60,
        help="data tests on the first build and every N-th (default 60, the README's schedule)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the lake and generated files")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--models",
        type=int,
        default=0,
        metavar="N",
        help="also print the N slowest models a minute",
    )
    args = parser.parse_args(argv)
    work = fresh_work(parser, args.work)
    try:
        result = bench_scale(work, args.parallelism, args.minutes, args.seed, args.tests_every)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(asdict(result), indent=2) if args.json else result.report())
    if args.models and not args.json:
        print(result.models_report(args.models))
    return 0


if __name__ == "__main__":
    sys.exit(main())
