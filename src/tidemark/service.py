"""``tidemark run``: the service, composed in one place (contract §7; docs/decisions/0007).

What a run is: the Thrift server (``--serve``) started first, since it starts the process's
Spark session with its settings; the warm cycles (:mod:`tidemark.schedule`) on that session,
each recorded in ``tidemark.run_log`` (:mod:`tidemark.health.record`); maintenance between two
cycles at most every ``--maintain-every`` seconds (:mod:`tidemark.maintain`); a line per cycle;
SIGTERM and SIGINT finishing the running cycle. ``tidemark.cli`` parses the arguments into
:class:`RunOptions` and calls :func:`run`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tidemark.cycles import CycleResult
from tidemark.ingest.landed import LandedFiles
from tidemark.lake import Lake
from tidemark.maintain.retention import Retention
from tidemark.serve import ServeOptions

log = logging.getLogger("tidemark.run")


@dataclass(frozen=True)
class RunOptions:
    """``tidemark run``'s arguments (``tidemark run --help`` says each)."""

    paths: Sequence[Path]
    every_s: float = 60.0
    cycles: int | None = None  # None: until stopped
    dbt_args: Sequence[str] = ()
    tests_every: int = 1
    landed_files: LandedFiles = field(default_factory=lambda: LandedFiles("keep"))
    serve: ServeOptions | None = None
    maintain_every_s: float | None = None
    retention: Retention = field(default_factory=Retention)
    replaced_keep_s: int = 600

    def check(self) -> None:
        """Refuse what cannot run, before Spark starts, so a typo costs no start-up."""
        from tidemark.schedule import build_args
        from tidemark.serve import check_options

        if self.every_s <= 0:
            raise ValueError(f"--every must be a positive number of seconds, got {self.every_s:g}")
        if self.maintain_every_s is not None and self.maintain_every_s <= 0:
            raise ValueError(
                "--maintain-every must be a positive number of seconds, got "
                f"{self.maintain_every_s:g}"
            )
        build_args(1, self.tests_every)
        if self.serve is not None:
            check_options(self.serve)


def run(lake: Lake, options: RunOptions, stop: threading.Event | None = None) -> int:
    """Run the service until ``stop`` (SIGTERM, SIGINT) or ``options.cycles``; the exit code."""
    from tidemark.health.record import RunRecorder, mark_run_started
    from tidemark.schedule import WarmCycle, run_every
    from tidemark.serve import ThriftServer, listening, stop_on_signals

    options.check()
    if stop is None:
        stop = threading.Event()
        stop_on_signals(stop)
    mark_run_started(lake)  # `tidemark status --check` judges this run from now on
    # The server starts the session (with its settings), the cycles then use the same one.
    server = ThriftServer(lake, options.serve) if options.serve is not None else None
    try:
        cycle = WarmCycle(
            lake, options.paths, options.dbt_args, options.tests_every, options.landed_files,
            options.every_s,
        )  # fmt: skip
        if options.serve is not None:
            print(listening(lake, options.serve, "run"), flush=True)
        recorded = RunRecorder(lake, cycle.dbt).wrap(cycle)  # each cycle into tidemark.run_log
        if options.maintain_every_s is not None:
            recorded = maintained(recorded, lake, options, spark_sql(cycle.spark))
        report = reporter(options.every_s)
        return run_every(options.every_s, recorded, stop, report, max_cycles=options.cycles)
    finally:
        if server is not None:
            print("tidemark run: stopping the server", flush=True)
            server.stop()


# A spell of cycles that find nothing new prints its first line, then one line this often.
QUIET_LINE_S = 600.0


def reporter(
    every_s: float, clock: Callable[[], float] = time.monotonic
) -> Callable[[int, CycleResult, bool], None]:
    """What a run prints after each cycle: its line, and when builds keep failing, a second.

    A cycle that landed nothing and built nothing, after another such, is quiet: the first of
    the spell says it, then one line every QUIET_LINE_S while it lasts, naming the cycle the
    spell began with (`tidemark status` and tidemark.run_log hold every cycle)."""
    spell: list[float | int] = []  # the quiet spell's first cycle and when it last printed

    def report(number: int, result: CycleResult, behind: bool) -> None:
        quiet = result.ok and result.build_s is None and result.landed == 0
        line = f"tidemark run: cycle {number}: {result.describe()}"
        if quiet and spell:
            if clock() - spell[1] < QUIET_LINE_S:
                return
            spell[1] = clock()
            line += f"; nothing new since cycle {spell[0]}"
        elif quiet:
            spell[:] = [number, clock()]
        else:
            spell.clear()
        late = f" (took longer than --every {every_s:g} s)" if behind else ""
        print(f"{line}{late}", flush=True)
        failing = result.keeps_failing()
        if failing is not None:
            print(failing, flush=True)

    return report


def maintained(
    cycle: Callable[[], CycleResult],
    lake: Lake,
    options: RunOptions,
    sql: Callable[[str], list[tuple]],
    clock: Callable[[], float] = time.monotonic,
) -> Callable[[], CycleResult]:
    """``cycle`` followed, at most every ``maintain_every_s`` seconds, by maintenance on the same
    session: between two cycles, so never while one writes. A maintenance that fails is said in
    one line and retried at the next; the cycles go on."""
    from tidemark.maintain import maintain

    assert options.maintain_every_s is not None
    last = [float("-inf")]

    def run_then_maintain() -> CycleResult:
        result = cycle()
        if clock() - last[0] >= options.maintain_every_s:
            last[0] = clock()
            started = time.perf_counter()
            try:
                done = maintain(lake, options.retention, sql, options.replaced_keep_s * 1000)
                took = time.perf_counter() - started
                print(f"tidemark run: maintained in {took:.1f} s: {done.describe()}", flush=True)
            except Exception as exc:  # noqa: BLE001 - the next maintenance retries
                first = (str(exc).strip() or type(exc).__name__).splitlines()[0][:400]
                log.warning("tidemark run: maintenance failed: %s", first)
        return result

    return run_then_maintain


def spark_sql(spark) -> Callable[[str], list[tuple]]:
    """One statement on ``spark``, its rows as tuples: maintenance's SQL on a session."""
    return lambda statement: [tuple(row) for row in spark.sql(statement).collect()]
