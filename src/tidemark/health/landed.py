"""A job's newest landed ``ts_ms``, from the bronze Delta logs (``tidemark status``, ``tidemark
run``'s recorder).

Kept in ``_health/landed.json`` (per table, the version followed and each job's newest ts_ms)
and brought up to date through the commits since (:mod:`tidemark.delta_log`). A commit's files
are read only when the log's statistics do not settle it (a file with one job has that job's
newest ts_ms in its ``maxValues``); a commit that removes rows, or a log cleaned up past the saved
version, means one read of the whole snapshot.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tidemark import delta_log
from tidemark.health.model import LANDED_TABLES
from tidemark.health.paths import state_path
from tidemark.lake import Lake

log = logging.getLogger(__name__)

STATE_LAYOUT = 1
# Longer job ids are truncated in a Delta log's statistics (delta-rs keeps 64 characters).
_STATS_PREFIX = 64


@dataclass(frozen=True)
class FileFacts:
    """What a Delta ``add`` action says of a data file: its path (relative to the table, or a
    URI) and, when its statistics have them, the smallest and largest job_id and largest ts_ms."""

    path: str
    min_job: str | None = None
    max_job: str | None = None
    max_ts_ms: int | None = None

    @classmethod
    def of_add(cls, add: Mapping[str, object]) -> FileFacts:
        path = str(add["path"])
        try:
            stats = json.loads(str(add.get("stats") or "{}"))
            low, high = stats.get("minValues", {}), stats.get("maxValues", {})
            ts = high.get("ts_ms")
            return cls(path, low.get("job_id"), high.get("job_id"), None if ts is None else int(ts))
        except (ValueError, TypeError, AttributeError):
            return cls(path)

    @property
    def one_job(self) -> str | None:
        """The file's only job, when its statistics prove it has one."""
        job = self.min_job
        if job is None or job != self.max_job or len(job) >= _STATS_PREFIX:
            return None
        return job if self.max_ts_ms is not None else None


def newest_per_job(
    files: Iterable[FileFacts], read: Callable[[str], Mapping[str, int]]
) -> dict[str, int]:
    """Each job's newest ts_ms in ``files``: from the statistics where a file has one job, else
    from ``read(path)`` (the file's own newest ts_ms per job)."""
    newest: dict[str, int] = {}
    for facts in files:
        job = facts.one_job
        found = {job: facts.max_ts_ms} if job is not None else read(facts.path)
        for name, ts in found.items():
            if ts is not None and (name not in newest or ts > newest[name]):
                newest[name] = int(ts)
    return newest


def merged(*newest: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in newest:
        for job, ts in part.items():
            out[job] = max(ts, out.get(job, ts))
    return out


@dataclass
class TableState:
    version: int  # -1: no table yet
    jobs: dict[str, int] = field(default_factory=dict)


def _read_newest(root: Path, path: str) -> dict[str, int]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(delta_log.local_path(path, root), columns=["job_id", "ts_ms"])
    grouped = table.group_by("job_id").aggregate([("ts_ms", "max")])
    jobs, tops = grouped["job_id"].to_pylist(), pc.cast(grouped["ts_ms_max"], "int64").to_pylist()
    return {job: ts for job, ts in zip(jobs, tops, strict=True) if job is not None}


def _snapshot(root: Path) -> TableState:
    """The newest ts_ms per job of a Delta table's whole current snapshot."""
    import pyarrow as pa
    from deltalake import DeltaTable

    table = DeltaTable(str(root))
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()

    def facts(add: Mapping[str, object]) -> FileFacts:
        ts = add.get("max.ts_ms")
        return FileFacts(
            str(add["path"]),
            add.get("min.job_id"),
            add.get("max.job_id"),  # type: ignore[arg-type]
            None if ts is None else int(ts),
        )  # type: ignore[call-overload]

    jobs = newest_per_job((facts(a) for a in actions), lambda p: _read_newest(root, p))
    return TableState(table.version(), jobs)


def follow(root: Path, known: TableState | None) -> TableState:
    """``known`` brought up to the table's newest commit, reading only the commits after it."""
    if not (root / "_delta_log").is_dir():
        return TableState(-1, {})
    commits = None if known is None else delta_log.commits_since(root, known.version)
    if known is None or commits is None:
        return _snapshot(root)
    files = (FileFacts.of_add(add) for add in commits.adds)
    newest = newest_per_job(files, lambda p: _read_newest(root, p))
    return TableState(commits.version, merged(known.jobs, newest))


def _load_state(path: Path) -> dict[str, TableState]:
    try:
        saved = json.loads(path.read_text())
        if saved.get("layout") != STATE_LAYOUT:
            return {}
        return {
            name: TableState(
                int(table["version"]), {str(j): int(t) for j, t in table["jobs"].items()}
            )
            for name, table in saved["tables"].items()
        }
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("ignoring %s (%s): it is rebuilt from the Delta logs", path, exc)
        return {}


def _save_state(path: Path, states: Mapping[str, TableState]) -> None:
    """Written whole under a name of its own, then renamed: readers and other writers see the
    old file or the new one (each is consistent: its versions and newest values agree)."""
    document = {
        "layout": STATE_LAYOUT,
        "tables": {n: {"version": s.version, "jobs": s.jobs} for n, s in states.items()},
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(prefix=".landed.", suffix=".partial", dir=path.parent)
        with os.fdopen(handle, "w") as out:
            json.dump(document, out)
        os.replace(partial, path)
    except OSError as exc:  # a read-only lake still answers; the next look reads more
        log.info("could not save %s: %s", path, exc)


def landed_newest(lake: Lake) -> dict[str, int]:
    """Each job's newest ``ts_ms`` in bronze (timer and watermark events)."""
    path = state_path(lake)
    known = _load_state(path)
    states = {name: follow(lake.bronze_table(name), known.get(name)) for name in LANDED_TABLES}
    if states != {name: known.get(name) for name in LANDED_TABLES}:
        _save_state(path, states)
    return merged(*(state.jobs for state in states.values()))
