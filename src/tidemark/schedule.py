"""``tidemark run``: the scheduled path on a warm Spark (docs/decisions/0007-warm-schedule.md).

One long-lived process keeps one Spark session and one parsed dbt project. Every ``--every``
seconds it lands the new files of the capture folders (``tidemark ingest``), points the
``bronze.*`` views at the new Delta snapshots and runs ``dbt build`` in-process against the same
session, without unit tests. A cycle that finds nothing new builds nothing. The cost of a cycle
follows the new data: no JVM start, no Spark warm-up, no project parse.

The loop (`run_every`) is pure and takes the cycle as a function, so its timing rules are tested
without Spark; `WarmCycle` is the thin part that talks to Spark, ingest and dbt.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tidemark.health.model import RECORDER_ENV
from tidemark.ingest.landed import LandedFiles
from tidemark.lake import Lake

log = logging.getLogger("tidemark.run")

# What a scheduled build runs: models, snapshots and data tests; unit tests belong to CI.
BUILD_ARGS = ("build", "--exclude-resource-type", "unit_test")
# What a build runs on a cycle without data tests (``--tests-every``).
WITHOUT_DATA_TESTS = ("--exclude-resource-type", "test")


def build_args(build: int, tests_every: int, extra: Sequence[str] = ()) -> list[str]:
    """dbt's arguments for the ``build``-th build (1, 2, ...) of a ``tidemark run``: data tests on
    the first build and every ``tests_every``-th after it, models only on the others."""
    if tests_every < 1:
        raise ValueError(f"--tests-every must be 1 or more, got {tests_every}")
    with_tests = (build - 1) % tests_every == 0
    return [*BUILD_ARGS, *(() if with_tests else WITHOUT_DATA_TESTS), *extra]


@dataclass(frozen=True)
class CycleResult:
    landed: int  # events accepted into bronze by this cycle's ingest
    ingest_s: float
    build_s: float | None  # None: nothing new, no build
    ok: bool  # ingest had no file error and the build (if any) succeeded
    detail: str = ""

    def describe(self) -> str:
        build = "no build (nothing new)" if self.build_s is None else f"build {self.build_s:.1f} s"
        state = "ok" if self.ok else "FAILED"
        text = f"{state}: {self.landed} events landed in {self.ingest_s:.1f} s, {build}"
        return f"{text}; {self.detail}" if self.detail else text


def run_every(
    every_s: float,
    cycle: Callable[[], CycleResult],
    stop: threading.Event,
    report: Callable[[int, CycleResult, bool], None],
    max_cycles: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    wait: Callable[[float], object] | None = None,
) -> int:
    """Run ``cycle`` at every multiple of ``every_s`` from now until ``stop`` is set (a cycle in
    progress finishes first) or ``max_cycles`` ran. A cycle that overruns its slot is followed at
    once by the next, and the slots it covered are skipped, not queued: a schedule that falls
    behind catches up with one cycle, which ingests everything new. A failed cycle does not end
    the loop (the next one retries what failed). Returns 0 when the last cycle was ok, else 1.
    """
    if every_s <= 0:
        raise ValueError(f"--every must be a positive number of seconds, got {every_s}")
    wait = wait or stop.wait  # returns early when stop is set
    start = clock()
    number = 0
    last_ok = True
    while not stop.is_set() and (max_cycles is None or number < max_cycles):
        number += 1
        began = clock()
        result = cycle()
        last_ok = result.ok
        ended = clock()
        behind = ended - began > every_s
        report(number, result, behind)
        if max_cycles is not None and number >= max_cycles:
            break
        slots_done = int((ended - start) // every_s) + 1
        wait(max(0.0, start + slots_done * every_s - clock()))
    return 0 if last_ok else 1


class WarmCycle:
    """One Spark session and one parsed dbt project for the life of the process."""

    def __init__(
        self,
        lake: Lake,
        paths: Sequence[Path],
        dbt_args: Sequence[str] = (),
        tests_every: int = 1,
        landed_files: LandedFiles | None = None,
    ) -> None:
        from dbt.cli.main import dbtRunner

        from tidemark.spark.session import spark_session

        self.lake = lake
        self.landed_files = landed_files or LandedFiles("keep")
        self.paths = list(paths)
        self.extra_args = list(dbt_args)
        self.tests_every = tests_every
        self.dbt_args = build_args(1, tests_every, dbt_args)
        self._builds = 0
        # Its builds are parts of cycles, which tidemark run records whole (tidemark.health):
        # the on-run-end hook that records other builds leaves them alone.
        os.environ[RECORDER_ENV] = "tidemark run"
        self.spark = spark_session(lake)
        # The project is parsed once, with the options that shape parsing (vars, target).
        parsed = dbtRunner().invoke(["parse", *_parse_options(self.dbt_args)])
        if not parsed.success:
            raise RuntimeError(f"dbt parse failed: {parsed.exception or 'see dbt output above'}")
        self._manifest = parsed.result
        self._built_once = False

    def dbt(self, args: Sequence[str]):
        """A dbt invocation on the parsed project. Each gets its own copy of the manifest: dbt
        marks nodes compiled in the manifest it runs, and a second run on the same object skipped
        injecting ephemeral models (the staging views) into the queries that use them."""
        from dbt.cli.main import dbtRunner

        return dbtRunner(manifest=self._manifest.deepcopy()).invoke(list(args))

    def __call__(self) -> CycleResult:
        from tidemark.ingest.landing import ingest
        from tidemark.spark.bronze import register_bronze

        began = time.perf_counter()
        present = [p for p in self.paths if p.exists()]
        missing = [str(p) for p in self.paths if not p.exists()]
        report = ingest(present, self.lake) if present else None
        if report is not None:
            self.landed_files.dispose(report, present)
        landed = sum(f.accepted for f in report.files) if report else 0
        errors = [f.error for f in report.errors] if report else []
        ingest_s = time.perf_counter() - began
        detail = "; ".join([*(f"{m}: no such file or folder" for m in missing), *errors])
        if landed == 0 and self._built_once:
            return CycleResult(landed, ingest_s, None, not (missing or errors), detail)
        began = time.perf_counter()
        register_bronze(self.spark, self.lake)
        self._builds += 1
        built = self.dbt(build_args(self._builds, self.tests_every, self.extra_args))
        self._built_once = self._built_once or built.success
        if not built.success:
            detail = "; ".join(filter(None, [detail, f"dbt build failed: {_failures(built)}"]))
        ok = built.success and not (missing or errors)
        return CycleResult(landed, ingest_s, time.perf_counter() - began, ok, detail.strip("; "))


def _failures(built) -> str:
    """What failed in a dbt invocation: its exception, else the first failed nodes' messages."""
    if built.exception is not None:
        return str(built.exception)
    failed = [
        f"{result.node.name}: {' '.join(str(result.message or result.status).split())}"
        for result in getattr(built.result, "results", None) or []
        if str(result.status) in ("error", "fail", "runtime error")
    ]
    more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
    return "; ".join(failed[:3]) + more


def _parse_options(args: Sequence[str]) -> list[str]:
    """The options of ``args`` that change what dbt parses: ``--vars``, ``--target``."""
    kept: list[str] = []
    for i, arg in enumerate(args):
        name, sep, _ = arg.partition("=")
        if name in ("--vars", "--target", "-t"):
            kept += [arg] if sep else list(args[i : i + 2])
    return kept
