"""``tidemark run``: the scheduled path on a warm Spark (docs/decisions/0007-warm-schedule.md).

One long-lived process keeps one Spark session and one parsed dbt project. Every ``--every``
seconds it lands the new files of the capture folders (``tidemark ingest``), points the
``bronze.*`` views at the new Delta snapshots and runs ``dbt build`` in-process against the same
session, without unit tests. A cycle that finds nothing new builds nothing, unless the last
build failed: that one is retried on the next cycle, then after 2, 4, 8, ... cycles while
nothing new lands (at most ``RETRY_CAP_S`` apart), and at once when new events land. The cost of
a cycle follows the new data: no JVM start, no Spark warm-up, no project parse.

The loop (`run_every`) and when a cycle builds (`Builds`) are pure and take the cycle and the
build as functions, so their rules are tested without Spark; `WarmCycle` is the thin part that
talks to Spark, ingest and dbt.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tidemark.cycles import KEEPS_FAILING, RECORDER_ENV, CycleResult, in_cycles
from tidemark.ingest.landed import LandedFiles
from tidemark.lake import Lake

log = logging.getLogger("tidemark.run")

# What a scheduled build runs: models, snapshots and data tests; unit tests belong to CI.
BUILD_ARGS = ("build", "--exclude-resource-type", "unit_test")
# What a build runs on a cycle without data tests (``--tests-every``).
WITHOUT_DATA_TESTS = ("--exclude-resource-type", "test")
# A failed build is retried while nothing new lands after 1, 2, 4, 8, ... cycles, at most this
# many seconds of cycles apart. A build that fails for good (a broken model, a full disk) costs a
# whole build each time (most of a minute on two cores, taken from the BI queries `--serve`
# answers); one that failed by chance is retried within ten minutes, and at once when events land.
RETRY_CAP_S = 600.0


def build_args(build: int, tests_every: int, extra: Sequence[str] = ()) -> list[str]:
    """dbt's arguments for the ``build``-th build (1, 2, ...) of a ``tidemark run``: data tests on
    the first build and every ``tests_every``-th after it, models only on the others."""
    if tests_every < 1:
        raise ValueError(f"--tests-every must be 1 or more, got {tests_every}")
    with_tests = (build - 1) % tests_every == 0
    return [*BUILD_ARGS, *(() if with_tests else WITHOUT_DATA_TESTS), *extra]


def retry_cap(every_s: float) -> int:
    """The most cycles between two retries of a failed build: RETRY_CAP_S of ``every_s``."""
    return max(1, math.ceil(RETRY_CAP_S / every_s))


class Builds:
    """Whether a cycle builds, and what its result says: pure, the build is a function.

    A cycle builds when new events landed, on a process's first cycle (a lake whose last build
    failed before a restart builds at once), and to retry a failed build: on the next cycle
    after the first failure, then, while nothing new lands, 2, 4, 8, ... cycles after the last
    failure, at most ``cap`` cycles apart. A cycle that waits to retry builds nothing and fails
    (the marts miss what landed), saying when the retry comes and the last build's error."""

    def __init__(self, cap: int = retry_cap(60.0), clock: Callable[[], float] = time.perf_counter):
        if cap < 1:
            raise ValueError(f"the retry cap must be 1 cycle or more, got {cap}")
        self.cap = cap
        self._clock = clock
        self.built_once = False  # in this process
        self.failed = 0  # failed builds in a row
        self.waited = 0  # cycles without a build since the last failed one
        self.last_error = ""

    def retry_gap(self) -> int:
        """Cycles from the last failed build to its retry while nothing new lands."""
        return min(2 ** (self.failed - 1), self.cap) if self.failed else 0

    def cycle(
        self, landed: int, ingest_s: float, problems: Sequence[str], build: Callable[[], str | None]
    ) -> CycleResult:
        """A cycle after its ingest landed ``landed`` events with ``problems`` (missing paths,
        unreadable files); ``build`` runs dbt build and returns None, or what failed."""
        notes = list(problems)
        if self.failed and not landed and self.waited + 1 < self.retry_gap():
            self.waited += 1
            wait = self.retry_gap() - self.waited
            notes += [
                f"retrying after a failed build {in_cycles(wait)}",
                f"{self._in_a_row()}, the last: {self.last_error}",
            ]
            return CycleResult(landed, ingest_s, None, False, "; ".join(notes), self.failed, wait)
        if not self.failed and self.built_once and not landed:
            return CycleResult(landed, ingest_s, None, not problems, "; ".join(notes))
        if self.failed:
            notes.append(f"retrying after a failed build (attempt {self.failed + 1})")
        began = self._clock()
        error = build()
        build_s = self._clock() - began
        self.waited = 0
        if error is None:
            self.failed, self.built_once, self.last_error = 0, True, ""
            return CycleResult(landed, ingest_s, build_s, not problems, "; ".join(notes))
        self.failed += 1
        self.last_error = f"dbt build failed: {error}"
        notes.append(self.last_error)
        if self.failed >= KEEPS_FAILING:
            notes.append(self._in_a_row())
        detail = "; ".join(notes)
        return CycleResult(landed, ingest_s, build_s, False, detail, self.failed, self.retry_gap())

    def _in_a_row(self) -> str:
        return f"{self.failed} builds in a row failed"


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
    the loop (the cycle retries what failed: ``Builds``). Returns 0 when the last cycle was ok,
    else 1.
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
        every_s: float = 60.0,
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
        self.builds = Builds(retry_cap(every_s))
        # Its builds are parts of cycles, which tidemark run records whole (tidemark.health):
        # the on-run-end hook that records other builds leaves them alone.
        os.environ[RECORDER_ENV] = "tidemark run"
        self.spark = spark_session(lake)
        # The project is parsed once, with the options that shape parsing (vars, target).
        parsed = dbtRunner().invoke(quiet(["parse", *_parse_options(self.dbt_args)]))
        if not parsed.success:
            raise RuntimeError(f"dbt parse failed: {parsed.exception or 'see dbt output above'}")
        self._manifest = parsed.result

    def dbt(self, args: Sequence[str]):
        """A dbt invocation on the parsed project, printing errors only (``quiet``). Each gets
        its own copy of the manifest: dbt marks nodes compiled in the manifest it runs, and a
        second run on the same object skipped injecting ephemeral models (the staging views)
        into the queries that use them."""
        from dbt.cli.main import dbtRunner

        return dbtRunner(manifest=self._manifest.deepcopy()).invoke(quiet(args))

    def __call__(self) -> CycleResult:
        from tidemark.ingest.landing import ingest

        began = time.perf_counter()
        present = [p for p in self.paths if p.exists()]
        missing = [str(p) for p in self.paths if not p.exists()]
        report = ingest(present, self.lake) if present else None
        if report is not None:
            self.landed_files.dispose(report, present)
        landed = sum(f.accepted for f in report.files) if report else 0
        errors = [f.error for f in report.errors] if report else []
        ingest_s = time.perf_counter() - began
        problems = [*(f"{m}: no such file or folder" for m in missing), *errors]
        return self.builds.cycle(landed, ingest_s, problems, self._build)

    def _build(self) -> str | None:
        """One dbt build on the new bronze snapshots: None, or what failed."""
        from tidemark.spark.bronze import register_bronze

        register_bronze(self.spark, self.lake)
        self._builds += 1
        built = self.dbt(build_args(self._builds, self.tests_every, self.extra_args))
        return None if built.success else _failures(built) or "see dbt's output"


def quiet(args: Sequence[str]) -> list[str]:
    """``args`` of a dbt command with ``--quiet`` after the command: a cycle's line says what
    the cycle did, and dbt's 150 lines a build (one a model and test, more for each failure)
    drowned it (issue 64). dbt's log file (``logs/dbt.log``, rotated at 10 MB) keeps them all,
    and ``tidemark.run_log`` the failures. ``--no-quiet`` in ``--dbt`` comes later and wins."""
    command, *rest = args
    return [command, "--quiet", *rest]


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
