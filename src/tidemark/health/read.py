"""Reading tidemark's health from the lake's files, without Spark (docs/decisions/0017-health.md).

Nothing here takes the lake's one-process metastore, so ``tidemark status`` works the same while
``tidemark run``, ``tidemark serve`` or a ``dbt build`` holds it, and never stops one from
starting. Each figure costs what is new or what is small, not the lake's history; each has its
module:

- a job's newest landed ``ts_ms`` (:mod:`.landed`): the bronze Delta logs' commits since the last
  look, kept in ``_health/landed.json``;
- a mart's newest second of a job (:mod:`.marts`): its newest partition, then a few footers;
- bytes on disk (:mod:`.disk`): a walk of the lake's files;
- the last cycles, and when the running ``tidemark run`` started (:mod:`.run_log`);
- where each of these is in the lake (:mod:`.paths`).

Here they are put together for ``tidemark status`` and ``tidemark status --check``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tidemark.health.disk import disk_paths, disk_usage
from tidemark.health.landed import landed_newest
from tidemark.health.marts import marts_newest
from tidemark.health.model import (
    Cycle,
    DiskUsage,
    Freshness,
    Limits,
    Verdict,
    active_jobs,
    check,
    freshness,
)
from tidemark.health.run_log import last_cycles, run_started
from tidemark.lake import Lake


@dataclass
class Status:
    cycles: list[Cycle]
    freshness: list[Freshness]
    disk: DiskUsage | None
    paths: dict[str, str]
    notes: list[str]


def read_status(lake: Lake, count: int) -> Status:
    """What ``tidemark status`` prints. A part that cannot be read becomes a note saying so; the
    others are still printed."""
    notes: list[str] = []
    cycles: list[Cycle] = []
    fresh: list[Freshness] = []
    disk = None
    try:
        cycles = last_cycles(lake, count)
        if not cycles:
            notes.append(
                "no cycle recorded yet: tidemark.run_log is written by each cycle of tidemark run "
                "and by each dbt build or dbt run"
            )
    except Exception as exc:
        notes.append(f"the last cycles could not be read: {_one_line(exc)}")
    try:
        fresh, found = _freshness(lake)
        notes += found
    except Exception as exc:
        notes.append(f"the newest events and mart seconds could not be read: {_one_line(exc)}")
    try:
        disk = disk_usage(lake)
    except Exception as exc:
        notes.append(f"the bytes on disk could not be counted: {_one_line(exc)}")
    paths = {area: str(path) for area, path in disk_paths(lake).items()}
    return Status(cycles, fresh, disk, paths, notes)


def read_check(lake: Lake, limits: Limits, now: dt.datetime | None = None) -> Verdict:
    """``tidemark status --check``: the newest ``limits.max_failed`` cycles (at least one), the
    run's start, and the marts' freshness only when ``limits.max_lag_s`` asks for it; no walk of
    the lake for its bytes. A part that cannot be read raises."""
    cycles = last_cycles(lake, max(1, limits.max_failed))
    fresh: list[Freshness] = []
    if limits.max_lag_s is not None:
        fresh, _ = _freshness(lake)
    when = now or dt.datetime.now(dt.UTC)
    return check(cycles, fresh, when, limits, run_started(lake))


def _freshness(lake: Lake) -> tuple[list[Freshness], list[str]]:
    """Each active job's marts against its newest landed event; and notes on what is missing."""
    landed = landed_newest(lake)
    jobs = active_jobs(landed)
    newest, notes = marts_newest(lake, landed, jobs)
    if not jobs:
        notes.insert(0, "bronze holds no timer or watermark event yet")
    return freshness(landed, newest, jobs), notes


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:400]
