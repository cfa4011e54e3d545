"""Bronze kept bounded: events past the retention expired, each day's small files compacted, and
the Delta logs checkpointed, cleaned up and vacuumed (issue 44; docs/decisions/0019-retention.md).

An ingest commits one small file per table (one per file it lands): 1,440 a day at `tidemark run
--every 60`. Once a day is over (older than the day of the newest event), its rows are rewritten
into one file per job and day (``tidemark-compacted-<day>-<job>-<id>.parquet``), in one Delta
commit per table that removes the files they came from: a reader sees bronze before or after, as
for any commit. Rows older than the retention are dropped in the same rewrite; a file holding only
such rows is removed unread. Newer rows of a rewritten file go to one file of their own. The
`ingest_log` (the identity of every file ever landed) and `vertices` (the latest record of a
vertex wins) are compacted by day and never expired; the quarantine expires with the events.

Removed files stay on disk for ``removed_keep_hours`` (default `REMOVED_KEEP_HOURS`), for queries
planned on the snapshot before (Spark reads bronze from a snapshot's file list), then `vacuum`
deletes them. Runs under the
ingest lock: no ingest commits meanwhile.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.transaction import AddAction, RemoveAction

from tidemark.lake import Lake
from tidemark.maintain.retention import DAY_MS, Cutoffs, day_start

log = logging.getLogger(__name__)

COMPACTED = "tidemark-compacted-"
REMOVED_KEEP_HOURS = 1
# The Delta log keeps two days of commits behind its last checkpoint (Delta's default is 30).
LOG_PROPERTIES = {"delta.logRetentionDuration": "interval 2 days"}


@dataclass(frozen=True)
class Layout:
    """How a bronze table is compacted: its time column (epoch ms, or a timestamp), whether its
    files are cut per job too, and whether its rows expire."""

    time: str
    per_job: bool
    expires: bool


LAYOUTS = {
    "timer_events": Layout("ts_ms", per_job=True, expires=True),
    "watermark_events": Layout("ts_ms", per_job=True, expires=True),
    "valve_outputs": Layout("ts_ms", per_job=True, expires=True),
    "capture_gaps": Layout("ts_ms", per_job=True, expires=True),
    "quarantine": Layout("ingested_at", per_job=False, expires=True),
    "vertices": Layout("ingested_at", per_job=False, expires=False),
    "ingest_log": Layout("ingested_at", per_job=False, expires=False),
}


@dataclass
class TableReport:
    name: str
    files_before: int = 0
    files_after: int = 0
    rows_expired: int = 0
    rows_rewritten: int = 0
    files_vacuumed: int = 0


@dataclass
class BronzeReport:
    tables: list[TableReport] = field(default_factory=list)

    def describe(self) -> str:
        files = sum(t.files_before for t in self.tables), sum(t.files_after for t in self.tables)
        expired = sum(t.rows_expired for t in self.tables)
        rewritten = sum(t.rows_rewritten for t in self.tables)
        return (
            f"bronze: {files[0]} -> {files[1]} data files, {expired} rows expired, "
            f"{rewritten} rows compacted"
        )


def newest_event_ms(lake: Lake) -> int | None:
    """The newest `ts_ms` bronze holds, from the Delta logs' statistics."""
    newest = None
    for name, layout in LAYOUTS.items():
        table = _table(lake, name)
        if table is None or layout.time != "ts_ms":
            continue
        actions = pa.table(table.get_add_actions(flatten=True))
        if actions.num_rows and "max.ts_ms" in actions.column_names:
            value = pc.max(actions["max.ts_ms"]).as_py()
            if value is not None:
                newest = value if newest is None else max(newest, value)
    return newest


def maintain_bronze(
    lake: Lake, cutoffs: Cutoffs, ingest_now_ms: int, removed_keep_hours: int = REMOVED_KEEP_HOURS
) -> BronzeReport:
    """Expire, compact and tidy every bronze table. ``cutoffs`` come from the newest event;
    ``ingest_now_ms`` is the newest `ingested_at` (the clock of the tables without events)."""
    report = BronzeReport()
    for name, layout in LAYOUTS.items():
        table = _table(lake, name)
        if table is None:
            continue
        if layout.time == "ts_ms":
            today, expire = cutoffs.today_ms, cutoffs.bronze_ms
        else:
            today = day_start(ingest_now_ms)
            expire = today - (cutoffs.today_ms - cutoffs.bronze_ms)
        report.tables.append(
            _maintain_table(
                table, name, layout, today, expire if layout.expires else None, removed_keep_hours
            )
        )
    return report


def _table(lake: Lake, name: str) -> DeltaTable | None:
    path = str(lake.bronze_table(name))
    return DeltaTable(path) if DeltaTable.is_deltatable(path) else None


def _time_ms(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A time column as epoch milliseconds (int64)."""
    if pa.types.is_timestamp(column.type):
        return pc.cast(pc.cast(column, pa.timestamp("ms", tz="UTC")), pa.int64())
    return pc.cast(column, pa.int64())


def _maintain_table(
    table: DeltaTable,
    name: str,
    layout: Layout,
    today_ms: int,
    expire_ms: int | None,
    removed_keep_hours: int,
) -> TableReport:
    report = TableReport(name)
    actions = pa.table(table.get_add_actions(flatten=True))
    report.files_before = actions.num_rows
    if actions.num_rows:
        paths = actions["path"].to_pylist()
        low = _time_ms(actions[f"min.{layout.time}"]).to_pylist()
        high = _time_ms(actions[f"max.{layout.time}"]).to_pylist()
        sizes = actions["size_bytes"].to_pylist()
        removed, added = _rewrite(table, layout, today_ms, expire_ms, paths, low, high, report)
        if removed:
            now = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
            size = dict(zip(paths, sizes, strict=True))
            data_change = report.rows_expired > 0
            table.create_write_transaction(
                [RemoveAction(p, data_change, now, size[p]) for p in removed] + added,
                mode="append",
                schema=table.schema(),
            )
    _tidy_log(table, report, removed_keep_hours)
    report.files_after = len(table.file_uris())
    return report


def _rewrite(
    table: DeltaTable,
    layout: Layout,
    today_ms: int,
    expire_ms: int | None,
    paths: list[str],
    low: list[int | None],
    high: list[int | None],
    report: TableReport,
) -> tuple[list[str], list[AddAction]]:
    """Which files go, and the files that replace them, written already."""
    removed: list[str] = []
    candidates: list[str] = []
    compacted: dict[str, list[str]] = {}  # group -> its compacted files
    for path, first, last in zip(paths, low, high, strict=True):
        if expire_ms is not None and last is not None and last < expire_ms:
            removed.append(path)  # every row expired: no need to read it
            report.rows_expired += _rows(table, path)
        elif _group_of(path) is not None:
            compacted.setdefault(_group_of(path), []).append(path)
        elif first is None or first < today_ms:
            candidates.append(path)
    if not candidates:
        return removed, []
    root = table.table_uri.removeprefix("file://")
    frame = _dataset(root, candidates)
    keys = frame.to_table(columns=_key_columns(layout))
    times = _time_ms(keys[layout.time])
    groups = _groups(keys, layout, today_ms, expire_ms)
    merged = [p for g in groups for p in compacted.get(g, [])]
    source = _dataset(root, candidates + merged)
    added: list[AddAction] = []
    for day in sorted({day for day, _ in groups.values()}):
        added += _write_day(root, source, layout, day, expire_ms, report)
    if pc.any(pc.greater_equal(times, today_ms)).as_py():
        added += _write_recent(root, source, layout, today_ms, report)
    expired_rows = 0
    if expire_ms is not None:
        expired_rows = pc.sum(pc.less(times, expire_ms)).as_py() or 0
    report.rows_expired += expired_rows
    return removed + candidates + merged, added


def _key_columns(layout: Layout) -> list[str]:
    return [layout.time, "job_id"] if layout.per_job else [layout.time]


def _groups(
    keys: pa.Table, layout: Layout, today_ms: int, expire_ms: int | None
) -> dict[str, tuple[int, str | None]]:
    """The (day, job) groups of rows before today and not expired, by their file-name key."""
    times = _time_ms(keys[layout.time]).to_numpy(zero_copy_only=False)
    jobs = keys["job_id"].to_pylist() if layout.per_job else [None] * len(times)
    found: dict[str, tuple[int, str | None]] = {}
    for at, job in zip(times.tolist(), jobs, strict=True):
        if at >= today_ms or (expire_ms is not None and at < expire_ms):
            continue
        day = day_start(at)
        found.setdefault(_group_key(day, job), (day, job))
    return found


def _group_key(day_ms: int, job: str | None) -> str:
    day = dt.datetime.fromtimestamp(day_ms / 1000, dt.UTC).strftime("%Y%m%d")
    owner = "all" if job is None else hashlib.sha256(job.encode()).hexdigest()[:16]
    return f"{day}-{owner}"


def _group_of(path: str) -> str | None:
    """The group key of a compacted file's name, None for any other file."""
    name = unquote(path.rsplit("/", 1)[-1])
    if not name.startswith(COMPACTED):
        return None
    parts = name[len(COMPACTED) :].split("-")
    return f"{parts[0]}-{parts[1]}" if len(parts) >= 3 else None


def _dataset(root: str, paths: list[str]) -> ds.Dataset:
    return ds.dataset([os.path.join(root, unquote(p)) for p in paths], format="parquet")


def _rows(table: DeltaTable, path: str) -> int:
    root = table.table_uri.removeprefix("file://")
    return pq.ParquetFile(os.path.join(root, unquote(path))).metadata.num_rows


def _write_day(
    root: str,
    source: ds.Dataset,
    layout: Layout,
    day_ms: int,
    expire_ms: int | None,
    report: TableReport,
) -> list[AddAction]:
    """One day's rows, one file per job (per table when it has no jobs)."""
    start = max(day_ms, expire_ms) if expire_ms is not None else day_ms
    rows = _between(source, layout, start, day_ms + DAY_MS)
    writers: dict[str | None, _Writer] = {}

    def writer(job: str | None) -> _Writer:
        if job not in writers:
            writers[job] = _Writer(root, _compacted_name(day_ms, job), source.schema)
        return writers[job]

    try:
        for batch in rows:
            if not layout.per_job:
                writer(None).write(batch)
                continue
            for job in pc.unique(batch["job_id"]).to_pylist():
                writer(job).write(batch.filter(pc.equal(batch["job_id"], job)))
    finally:
        actions = [writer.close() for writer in writers.values()]
    report.rows_rewritten += sum(w.rows for w in writers.values())
    return [a for a in actions if a is not None]


def _write_recent(
    root: str, source: ds.Dataset, layout: Layout, today_ms: int, report: TableReport
) -> list[AddAction]:
    """The rows of today that rewritten files held: one file, compacted when their day is over."""
    writer = _Writer(root, f"part-tidemark-recent-{uuid.uuid4()}.parquet", source.schema)
    try:
        for batch in _between(source, layout, today_ms, None):
            writer.write(batch)
    finally:
        action = writer.close()
    report.rows_rewritten += writer.rows
    return [action] if action is not None else []


def _between(
    source: ds.Dataset, layout: Layout, start_ms: int, end_ms: int | None
) -> Iterator[pa.RecordBatch]:
    field_ = ds.field(layout.time)
    if layout.time == "ts_ms":
        lower, upper = start_ms, end_ms
    else:

        def stamp(ms: int) -> pa.Scalar:
            return pa.scalar(ms * 1000, pa.timestamp("us", tz="UTC"))

        lower = stamp(start_ms)
        upper = None if end_ms is None else stamp(end_ms)
    where = field_ >= lower
    if upper is not None:
        where = where & (field_ < upper)
    yield from source.to_batches(filter=where)


def _compacted_name(day_ms: int, job: str | None) -> str:
    return f"{COMPACTED}{_group_key(day_ms, job)}-{uuid.uuid4()}.parquet"


class _Writer:
    """A Parquet file written batch by batch, and the Delta add action (with the statistics the
    bronze views and ingest read: min, max, null count per column) that commits it."""

    def __init__(self, root: str, name: str, schema: pa.Schema) -> None:
        self.path = name
        self.file = os.path.join(root, name)
        self.schema = schema
        self._writer: pq.ParquetWriter | None = None
        self.rows = 0
        self._min: dict[str, object] = {}
        self._max: dict[str, object] = {}
        self._nulls: dict[str, int] = {}

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.file, self.schema)
        self._writer.write_batch(batch)
        self.rows += batch.num_rows
        for column, values in zip(batch.schema.names, batch.columns, strict=True):
            self._nulls[column] = self._nulls.get(column, 0) + values.null_count
            if not _has_stats(values.type) or values.null_count == len(values):
                continue
            low, high = pc.min_max(values).values()
            low, high = low.as_py(), high.as_py()
            self._min[column] = low if column not in self._min else min(self._min[column], low)
            self._max[column] = high if column not in self._max else max(self._max[column], high)

    def close(self) -> AddAction | None:
        if self._writer is None:
            return None
        self._writer.close()
        stats = {
            "numRecords": self.rows,
            "minValues": {k: _stat(v) for k, v in self._min.items()},
            "maxValues": {k: _stat(v) for k, v in self._max.items()},
            "nullCount": self._nulls,
        }
        return AddAction(
            self.path,
            os.path.getsize(self.file),
            {},
            int(dt.datetime.now(dt.UTC).timestamp() * 1000),
            True,
            json.dumps(stats),
        )


def _has_stats(kind: pa.DataType) -> bool:
    return (
        pa.types.is_integer(kind)
        or pa.types.is_string(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_timestamp(kind)
    )


def _stat(value: object) -> object:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return value


def _tidy_log(table: DeltaTable, report: TableReport, removed_keep_hours: int) -> None:
    """A checkpoint of the log, its older commits cleaned up, unreferenced files vacuumed."""
    table.update_incremental()  # after this maintenance's own commit
    current = table.metadata().configuration
    if any(current.get(k) != v for k, v in LOG_PROPERTIES.items()):
        table.alter.set_table_properties(LOG_PROPERTIES)
    table.create_checkpoint()
    table.cleanup_metadata()
    vacuumed = table.vacuum(
        retention_hours=removed_keep_hours, dry_run=False, enforce_retention_duration=False
    )
    report.files_vacuumed += len(vacuumed)
