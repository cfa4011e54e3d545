"""The last cycles, from the newest files of ``tidemark.run_log`` (one per cycle until its day is
compacted), and when the running ``tidemark run`` started (``_health/run.json``, which it writes
as it starts: ``tidemark status --check`` judges that run by its own cycles)."""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path

from tidemark.health.model import Cycle
from tidemark.health.paths import data_files, partitions, run_log_root, run_marker_path
from tidemark.lake import Lake

log = logging.getLogger(__name__)


def _cycles_in(path: Path) -> list[Cycle]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    table = table.filter(pc.equal(table["row_kind"], "cycle"))
    starts = pc.cast(table["cycle_started_at"], pa.timestamp("ms")).to_pylist()
    found = []
    for start, row in zip(starts, table.to_pylist(), strict=True):
        try:
            found.append(
                Cycle(
                    start.replace(tzinfo=dt.UTC),
                    row["recorded_by"],
                    row["outcome"],
                    row["events_landed"],
                    row["ingest_s"],
                    row["build_s"],
                    row["error_message"],
                )
            )
        except (ValueError, AttributeError) as exc:  # a row no writer of tidemark makes
            log.info("skipping a run_log row of %s: %s", path, exc)
    return found


def last_cycles(lake: Lake, count: int) -> list[Cycle]:
    """The newest ``count`` cycles of tidemark.run_log, newest first, from its newest files."""
    root = run_log_root(lake)
    if not root.is_dir():
        return []
    for attempt in range(3):  # a day compacted or dropped while it is read: look again
        try:
            found: list[Cycle] = []
            for _, day in sorted(partitions(root, "cycle_date"), reverse=True):
                files = sorted(data_files(day), key=lambda p: p.stat().st_mtime_ns, reverse=True)
                for path in files:
                    found += _cycles_in(path)
                    if len(found) >= count:
                        break
                if len(found) >= count:
                    break
            return sorted(found, key=lambda c: c.started_at, reverse=True)[:count]
        except FileNotFoundError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def run_started(lake: Lake) -> dt.datetime | None:
    """When the lake's ``tidemark run`` started, as it noted; None when no run did, or the note
    cannot be read (then every cycle counts)."""
    path = run_marker_path(lake)
    try:
        started = dt.datetime.fromisoformat(json.loads(path.read_text())["started_at"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring %s (%s)", path, exc)
        return None
    return started if started.tzinfo is not None else started.replace(tzinfo=dt.UTC)
