"""Reading tidemark's health from the lake's files, without Spark (docs/decisions/0017-health.md).

Nothing here takes the lake's one-process metastore, so ``tidemark status`` works the same while
``tidemark run``, ``tidemark serve`` or a ``dbt build`` holds it, and never stops one from
starting. Each figure costs what is new or what is small, not the lake's history:

- a job's newest landed ``ts_ms``: the bronze Delta logs' commits since the last look, kept in
  ``_health/landed.json`` (per table, the version followed and each job's newest ts_ms). A
  commit's files are read only when the log's statistics do not settle it (a file with one job
  has that job's newest ts_ms in its ``maxValues``); a commit that removes data (not a
  compaction) or a log cleaned up past the saved version means one read of the whole snapshot;
- a mart's newest second of a job: its newest partition (``job_id``, ``hour_at``,
  ``minute_slice``), looked up by name from the hour of the job's newest landed event back
  (a mart never runs ahead of what landed), then a few parquet footers;
- bytes on disk: a walk of the lake's files (its cost follows the number of files; ``tidemark
  run`` measures it once per ``BYTES_EVERY_S``);
- the last cycles: the newest files of ``tidemark.run_log`` (one per cycle until its day is
  compacted);
- when the running ``tidemark run`` started: ``_health/run.json``, which it writes as it starts
  (``tidemark status --check`` judges that run by its own cycles).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from tidemark import delta_log
from tidemark.health.model import (
    LANDED_TABLES,
    MARTS,
    Cycle,
    DiskUsage,
    Freshness,
    Limits,
    Verdict,
    active_jobs,
    check,
    freshness,
)
from tidemark.lake import Lake

log = logging.getLogger(__name__)

STATE_LAYOUT = 1
# How many hours back from a job's newest landed event a mart's newest partition is looked up by
# name before its hour folders are listed.
PROBE_HOURS = 48
# Longer job ids are truncated in a Delta log's statistics (delta-rs keeps 64 characters).
_STATS_PREFIX = 64


def state_path(lake: Lake) -> Path:
    """What ``tidemark status`` and ``tidemark run`` know of bronze's newest events (a cache:
    safe to delete, rebuilt from the Delta logs)."""
    return lake.root / "_health" / "landed.json"


def marts_root(lake: Lake) -> Path:
    return lake.warehouse / "tidemark.db"


def run_log_root(lake: Lake) -> Path:
    return marts_root(lake) / "run_log"


def run_marker_path(lake: Lake) -> Path:
    """When the lake's ``tidemark run`` started (``health.record.mark_run_started``)."""
    return lake.root / "_health" / "run.json"


# -- a job's newest landed ts_ms, from the Delta logs -------------------------------------------


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


# -- a mart's newest second of a job, from its newest partition ---------------------------------


def _partitions(folder: Path, column: str) -> list[tuple[str, Path]]:
    """The ``column=value`` folders under ``folder``, values unescaped as Spark escapes them."""
    prefix = f"{column}="
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.is_dir(follow_symlinks=False):
                found.append((unquote(entry.name[len(prefix) :]), Path(entry.path)))
    return found


def _data_files(folder: Path) -> list[Path]:
    with os.scandir(folder) as entries:
        return [
            Path(entry.path)
            for entry in entries
            if not entry.name.startswith((".", "_")) and entry.is_file(follow_symlinks=False)
        ]


def column_max(path: Path, column: str) -> int | None:
    """The largest value of an integer ``column`` in a parquet file: from its row groups'
    statistics, or from the column itself where a row group has none."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    if column not in names:
        return None
    index = names.index(column)
    best: int | None = None
    for group in range(meta.num_row_groups):
        chunk = meta.row_group(group).column(index)
        stats = chunk.statistics
        if meta.row_group(group).num_rows == 0:
            continue
        if stats is None or not stats.has_min_max:
            value = pc.max(pq.read_table(path, columns=[column])[column]).as_py()
            return None if value is None else int(value)
        best = int(stats.max) if best is None else max(best, int(stats.max))
    return best


def _newest_in_hour(hour: Path, column: str) -> int | None:
    """The largest ``column`` in the newest slice of an hour folder that holds a data file."""
    slices = []
    for value, folder in _partitions(hour, "minute_slice"):
        if value.lstrip("-").isdigit():
            slices.append((int(value), folder))
    for _, folder in sorted(slices, reverse=True):
        present = [v for v in (column_max(p, column) for p in _data_files(folder)) if v is not None]
        if present:
            return max(present)
    return None


def hour_folder(hour_ms: int) -> str:
    """The folder name Spark gives the ``hour_at`` partition of epoch milliseconds ``hour_ms``
    (the timestamp in the session's UTC, ``:`` escaped)."""
    at = dt.datetime.fromtimestamp(hour_ms / 1000, dt.UTC)
    return "hour_at=" + at.strftime("%Y-%m-%d %H:%M:%S").replace(":", "%3A")


def newest_in_job(
    job_folder: Path, column: str, landed_ms: int | None = None, probe_hours: int = PROBE_HOURS
) -> int | None:
    """The largest ``column`` in a job's newest partition that holds a data file.

    A mart never runs ahead of what landed, so its newest partition is at or before the hour of
    the job's newest landed ``landed_ms``: the hours from there back are looked up by name, at
    most ``probe_hours`` of them (what it costs follows how far behind the mart is, not its
    history). Past that, or without ``landed_ms``, the job's hour folders are listed."""
    if landed_ms is not None:
        hour = landed_ms - landed_ms % 3_600_000
        for back in range(probe_hours):
            folder = job_folder / hour_folder(hour - back * 3_600_000)
            if folder.is_dir():
                value = _newest_in_hour(folder, column)
                if value is not None:
                    return value
    for _, folder in sorted(_partitions(job_folder, "hour_at"), reverse=True):
        value = _newest_in_hour(folder, column)
        if value is not None:
            return value
    return None


def marts_newest(
    lake: Lake, landed: Mapping[str, int], jobs: Iterable[str]
) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Per mart of MARTS, each job's newest time column value (of ``jobs`` only, ``landed``
    their newest landed ts_ms); and notes on the marts that could not be read."""
    wanted = set(jobs)
    newest: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    for mart, column in MARTS.items():
        table = marts_root(lake) / mart
        if not table.is_dir():
            notes.append(f"tidemark.{mart} is not built yet")
            continue
        if (table / "_delta_log").is_dir():
            notes.append(f"tidemark.{mart} is a Delta table (TIDEMARK_DELTA=native): not read")
            continue
        for attempt in range(3):  # a partition rewritten while it is read: look again
            try:
                published = published_newest(table)
                found = {}
                if published is not None:
                    for job, folder in published.items():
                        values = [column_max(f, column) for f in _data_files(folder)]
                        if job in wanted and any(v is not None for v in values):
                            found[job] = max(v for v in values if v is not None)
                else:
                    for job, folder in _partitions(table, "job_id"):
                        if job in wanted:
                            value = newest_in_job(folder, column, landed.get(job))
                            if value is not None:
                                found[job] = value
                newest[mart] = found
                break
            except FileNotFoundError:
                if attempt == 2:
                    notes.append(f"tidemark.{mart} kept changing while it was read")
    return newest, notes


def published_newest(table: Path) -> dict[str, Path] | None:
    """Per job, the folder of its newest partition, as the last publish into the mart noted it
    (``_tidemark_versions/_newest.tsv``, docs/decisions/0015-consistent-reads.md); None for a
    mart no build published into, whose own folder holds its partitions."""
    from urllib.parse import urlparse

    noted = table / "_tidemark_versions" / "_newest.tsv"
    if not noted.is_file():
        return None
    newest = {}
    for line in noted.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0].startswith("job_id="):
            newest[unquote(fields[0][len("job_id=") :])] = Path(unquote(urlparse(fields[2]).path))
    return newest


# -- bytes on disk --------------------------------------------------------------------------


def tree_bytes(root: Path, skip: Iterable[Path] = ()) -> int:
    """The sizes of the files under ``root`` (not following links), leaving out ``skip``."""
    left_out = {str(p) for p in skip}
    total = 0
    folders = [str(root)]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.path not in left_out:
                                folders.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except FileNotFoundError:  # removed while walking
                        continue
        except (FileNotFoundError, NotADirectoryError):
            continue
    return total


def disk_paths(lake: Lake) -> dict[str, Path]:
    return {
        "bronze": lake.bronze,
        "marts": marts_root(lake),
        "intermediate": lake.warehouse / "tidemark_intermediate.db",
        "lake": lake.root,
    }


def disk_usage(lake: Lake) -> DiskUsage:
    paths = disk_paths(lake)
    parts = {area: tree_bytes(paths[area]) for area in ("bronze", "marts", "intermediate")}
    rest = tree_bytes(lake.root, skip=[paths[a] for a in parts])
    return DiskUsage(
        parts["bronze"], parts["marts"], parts["intermediate"], rest + sum(parts.values())
    )


# -- the last cycles, from tidemark.run_log's files -------------------------------------------


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
            for _, day in sorted(_partitions(root, "cycle_date"), reverse=True):
                files = sorted(_data_files(day), key=lambda p: p.stat().st_mtime_ns, reverse=True)
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


# -- all of it, for tidemark status -----------------------------------------------------------


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
        landed = landed_newest(lake)
        jobs = active_jobs(landed)
        if not jobs:
            notes.append("bronze holds no timer or watermark event yet")
        newest, missing = marts_newest(lake, landed, jobs)
        notes += missing
        fresh = freshness(landed, newest, jobs)
    except Exception as exc:
        notes.append(f"the newest events and mart seconds could not be read: {_one_line(exc)}")
    try:
        disk = disk_usage(lake)
    except Exception as exc:
        notes.append(f"the bytes on disk could not be counted: {_one_line(exc)}")
    paths = {area: str(path) for area, path in disk_paths(lake).items()}
    return Status(cycles, fresh, disk, paths, notes)


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


def read_check(lake: Lake, limits: Limits, now: dt.datetime | None = None) -> Verdict:
    """``tidemark status --check``: the newest ``limits.max_failed`` cycles (at least one), the
    run's start, and the marts' freshness only when ``limits.max_lag_s`` asks for it; no walk of
    the lake for its bytes. A part that cannot be read raises."""
    cycles = last_cycles(lake, max(1, limits.max_failed))
    fresh: list[Freshness] = []
    if limits.max_lag_s is not None:
        landed = landed_newest(lake)
        jobs = active_jobs(landed)
        newest, _ = marts_newest(lake, landed, jobs)
        fresh = freshness(landed, newest, jobs)
    when = now or dt.datetime.now(dt.UTC)
    return check(cycles, fresh, when, limits, run_started(lake))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:400]
