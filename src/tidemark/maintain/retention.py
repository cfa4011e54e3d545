"""How long a lake keeps what (issue 44), and what `tidemark maintain` left behind for ingest.

Pure: no Spark, no Delta. The settings are :class:`Retention`; the cutoffs follow from the
newest event the lake landed (the task clock of the Flink job, as `ts_ms` is), not the wall
clock, so a lake of last month's events is kept like today's. What an expiry removed is written to
``LAKE/_maintain/state.json``; ingest reads it and quarantines an event older than what bronze
still keeps (it would otherwise be half-applied to marts that no longer hold its neighbours).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from tidemark.lake import Lake, RetentionError, expired_before, state_path

DAY_MS = 86_400_000


@dataclass(frozen=True)
class Retention:
    """How many days of events each part of the lake keeps, counted back from the day of the
    newest landed event (that day included)."""

    bronze_days: int = 7
    task_marts_days: int = 90
    vertex_marts_days: int = 365

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int) or value < 2:
                raise RetentionError(
                    f"--keep-{name.removesuffix('_days').replace('_', '-')}-days must be a whole "
                    f"number of days, 2 or more, got {value!r}"
                )
        if self.task_marts_days < self.bronze_days:
            raise RetentionError(
                f"the marts cannot keep fewer days ({self.task_marts_days}) than bronze "
                f"({self.bronze_days}): a build recomputes from bronze what the marts dropped"
            )
        if self.vertex_marts_days < self.task_marts_days:
            raise RetentionError(
                f"the vertex marts cannot keep fewer days ({self.vertex_marts_days}) than the "
                f"task marts ({self.task_marts_days}): they are built from them"
            )

    def cutoffs(self, newest_ms: int) -> Cutoffs:
        today = day_start(newest_ms)
        return Cutoffs(
            today_ms=today,
            bronze_ms=today - (self.bronze_days - 1) * DAY_MS,
            task_marts_ms=today - (self.task_marts_days - 1) * DAY_MS,
            vertex_marts_ms=today - (self.vertex_marts_days - 1) * DAY_MS,
        )


@dataclass(frozen=True)
class Cutoffs:
    """Epoch milliseconds: what lies before each is expired; `today_ms` starts the newest day,
    the one compaction leaves alone (its files still grow)."""

    today_ms: int
    bronze_ms: int
    task_marts_ms: int
    vertex_marts_ms: int


def day_start(ms: int) -> int:
    return ms - ms % DAY_MS


def record_expiry(lake: Lake, before_ms: int) -> None:
    """Remember that bronze holds no event before ``before_ms`` (it only moves forward)."""
    known = expired_before(lake)
    path = state_path(lake)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    state = {"bronze_expired_before_ms": max(before_ms, known or before_ms)}
    partial.write_text(json.dumps(state) + "\n")
    os.replace(partial, path)
