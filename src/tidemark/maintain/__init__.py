"""`tidemark maintain`: a lake kept bounded for months of running (issue 44).

Bronze past the retention expired and its days compacted (:mod:`.bronze`), the marts' and the
incremental state's partitions past theirs dropped (:mod:`.marts`), the tasks the task marts no
longer hold dropped from the state (:mod:`.state`), and the ingest and the builds told what was
expired (:mod:`.retention`, :mod:`.state`). See docs/decisions/0019-retention.md.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tidemark.lake import Lake, ingest_lock, iso
from tidemark.maintain.bronze import BronzeReport, maintain_bronze, newest_event_ms
from tidemark.maintain.marts import MartsReport, Sql, expire_marts
from tidemark.maintain.retention import Retention, record_expiry
from tidemark.maintain.state import StateReport, expire_state, record_cutoffs


@dataclass
class MaintainReport:
    newest_ms: int | None
    bronze: BronzeReport | None = None
    marts: MartsReport | None = None
    state: StateReport | None = None

    def describe(self) -> str:
        if self.newest_ms is None:
            return "nothing to maintain: bronze holds no event"
        parts = [f"newest event {iso(self.newest_ms)}"]
        parts += [p.describe() for p in (self.bronze, self.marts, self.state) if p is not None]
        return "; ".join(parts)


def maintain(lake: Lake, retention: Retention, sql: Sql | None, keep_ms: int) -> MaintainReport:
    """Expire and compact bronze under the ingest lock (no ingest lands meanwhile), then, with
    ``sql`` (a Spark session's or a Thrift server's), record the cutoffs for the builds, expire
    the marts, and drop from the state the tasks they no longer hold, in this order: a run cut
    short anywhere leaves marts and state that the next build and its data tests agree on, and
    the next maintenance finishes it. What is removed stays on disk ``keep_ms`` for queries
    still reading it (bronze: rounded up to whole hours). A cycle's build must not run
    meanwhile: `tidemark run --maintain-every` runs it between cycles."""

    with ingest_lock(lake):
        newest = newest_event_ms(lake)
        if newest is None:
            return MaintainReport(None)
        cutoffs = retention.cutoffs(newest)
        now_ms = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
        # Bronze's removed files stay for whole hours (delta-rs vacuums by the hour).
        bronze = maintain_bronze(lake, cutoffs, now_ms, -(-keep_ms // 3_600_000))
        record_expiry(lake, cutoffs.bronze_ms)
    if sql is None:
        return MaintainReport(newest, bronze)
    record_cutoffs(sql, cutoffs, newest)
    marts = expire_marts(sql, cutoffs, keep_ms)
    return MaintainReport(newest, bronze, marts, expire_state(sql, cutoffs, keep_ms))
