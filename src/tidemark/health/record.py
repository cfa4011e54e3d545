"""``tidemark run`` records each cycle in ``tidemark.run_log`` (docs/decisions/0017-health.md).

After every cycle (one that built, one that found nothing new, one that failed, one that raised)
the run reads the lake's figures from its files (``health.landed``: O(new commits) for the landed
events; ``health.marts``: O(jobs x marts) partition folders for the marts' newest seconds) and
appends the rows through the warm dbt project: ``dbt run-operation tidemark_run_log_insert``,
the table's one write path, which the on-run-end hook of other builds uses too. Bytes on disk
cost a walk of the lake's files, so they are measured on the first cycle and then once per
``BYTES_EVERY_S``.
A cycle that cannot be recorded is said in one log line; the run goes on.

As it starts, before Spark, the run notes when in ``_health/run.json`` (``mark_run_started``):
``tidemark status --check`` then judges it by its own cycles, not by those of the process before
it, and leaves it be until its first cycle is recorded (unless that takes ``--max-age-s``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from tidemark.cycles import CycleResult
from tidemark.health.disk import disk_usage
from tidemark.health.landed import landed_newest
from tidemark.health.marts import marts_newest
from tidemark.health.model import (
    Cycle,
    active_jobs,
    freshness,
    macro_args,
    one_line,
    run_log_rows,
)
from tidemark.health.paths import run_marker_path
from tidemark.lake import Lake

log = logging.getLogger("tidemark.run")

BYTES_EVERY_S = 900.0


def mark_run_started(lake: Lake, at: dt.datetime | None = None) -> bool:
    """Note in the lake that its ``tidemark run`` starts now (written whole, then renamed);
    False (and a log line) when it cannot: the check then counts every cycle."""
    path = run_marker_path(lake)
    started = (at or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(prefix=".run.", suffix=".partial", dir=path.parent)
        with os.fdopen(handle, "w") as out:
            json.dump({"started_at": started.isoformat(), "pid": os.getpid()}, out)
        os.replace(partial, path)
    except OSError as exc:
        log.warning("tidemark run: could not note its start in %s: %s", path, exc)
        return False
    return True


class RunRecorder:
    """Writes ``tidemark run``'s cycles; ``dbt`` runs a dbt command on the warm project
    (``WarmCycle.dbt``, whose builds leave the recording to this: it sets RECORDER_ENV, so
    their on-run-end hook records nothing)."""

    def __init__(
        self,
        lake: Lake,
        dbt: Callable[[Sequence[str]], Any],
        bytes_every_s: float = BYTES_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lake = lake
        self._dbt = dbt
        self._bytes_every_s = bytes_every_s
        self._clock = clock
        self._bytes_at: float | None = None

    def wrap(self, cycle: Callable[[], CycleResult]) -> Callable[[], CycleResult]:
        """``cycle``, recorded after it ran: with its result, or failed with what it raised."""

        def recorded() -> CycleResult:
            started = dt.datetime.now(dt.UTC)
            try:
                result = cycle()
            except Exception as exc:
                self.record(Cycle.raised(started, exc))
                raise
            self.record(
                Cycle.of_run(
                    started,
                    result.ok,
                    result.landed,
                    result.ingest_s,
                    result.build_s,
                    result.detail,
                )
            )
            return result

        return recorded

    def record(self, cycle: Cycle) -> bool:
        """Append ``cycle`` with the lake's figures; False (and a log line) when it could not."""
        started = time.perf_counter()
        try:
            landed = landed_newest(self.lake)
            jobs = active_jobs(landed)
            newest, _ = marts_newest(self.lake, landed, jobs)
            now = self._clock()
            due = self._bytes_at is None or now - self._bytes_at >= self._bytes_every_s
            disk = disk_usage(self.lake) if due else None
            if due:
                self._bytes_at = now
            rows = run_log_rows(cycle, freshness(landed, newest, jobs), disk)
            read_s = time.perf_counter() - started
            done = self._dbt(
                [
                    "run-operation",
                    "tidemark_run_log_insert",
                    "--args",
                    macro_args(rows),
                    "--no-write-json",
                    "--quiet",
                ]
            )
            if not done.success:
                raise RuntimeError(str(done.exception or "dbt run-operation failed"))
        except Exception as exc:
            log.warning(
                "tidemark run: this cycle is not in tidemark.run_log: %s",
                one_line(str(exc)) or type(exc).__name__,
            )
            return False
        log.debug(
            "tidemark run: recorded in tidemark.run_log in %.2f s (reading the lake %.3f s%s)",
            time.perf_counter() - started, read_s, ", bytes on disk" if disk else "",
        )  # fmt: skip
        return True
