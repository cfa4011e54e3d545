"""``tidemark ingest``: land event files in the bronze Delta tables, exactly once per content.

For each file: fingerprint it (and prove a gzip archive whole), skip it if the ingest log has its
content already, otherwise stream it in blocks of lines. Each block is parsed, checked against the
per-line rules, judged for duplicates and conflicts, and appended to each bronze table it has rows
for, one Delta commit per table. Every commit carries a Delta *app transaction*
(``tidemark-ingest:<sha256>``, version = block number), so a re-run after a crash skips exactly the
(table, block) pairs that were committed and writes the rest: blocks are cut from the content alone,
and the judging is repeated against the index as it was without this file, so the second run makes
the same decisions as the first. The file's row in ``ingest_log`` is committed last and marks it
done. One ingest runs at a time per lake (a lock file). Parsing and checking the next block, and
committing the previous one, run in two more threads beside the judging (decision 0003); commits
stay in block order.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from deltalake import CommitProperties, DeltaTable, Field, Transaction, write_deltalake

from tidemark.ingest import files
from tidemark.ingest.identity import (
    ACCEPTED,
    DUPLICATE,
    IdentityIndex,
    Task,
    Verdicts,
    task_codes,
)
from tidemark.ingest.parse import Parsed, parse_block
from tidemark.ingest.schema import BRONZE_SCHEMAS, PARSED
from tidemark.ingest.summary import IDENTITY, BronzeSummary
from tidemark.ingest.validate import EVENT_TYPES, TASK_TYPES, check_rows, enum_codes, is_type
from tidemark.lake import Lake, expired_before, ingest_lock

log = logging.getLogger(__name__)

LINES_PER_BLOCK = 200_000
# A checkpoint every 10 commits (Delta's default is 100): every ingest opens each bronze table, and
# opening one replays the log since its last checkpoint.
TABLE_PROPERTIES = {"delta.checkpointInterval": "10"}
WRITE_ORDER = (
    "timer_events",
    "watermark_events",
    "valve_outputs",
    "capture_gaps",
    "vertices",
    "quarantine",
)
_TASK_COLUMNS = list(PARSED.names)


@dataclass
class FileReport:
    path: Path
    sha256: str = ""
    lines_read: int = 0
    accepted: int = 0
    duplicates: int = 0
    quarantined: int = 0
    skipped_as_seen: bool = False
    error: str | None = None


@dataclass
class IngestReport:
    files: list[FileReport] = field(default_factory=list)

    @property
    def lines_read(self) -> int:
        return sum(f.lines_read for f in self.files)

    @property
    def accepted(self) -> int:
        return sum(f.accepted for f in self.files)

    @property
    def duplicates(self) -> int:
        return sum(f.duplicates for f in self.files)

    @property
    def quarantined(self) -> int:
        return sum(f.quarantined for f in self.files)

    @property
    def errors(self) -> list[FileReport]:
        return [f for f in self.files if f.error]


class Progress:
    """Told how far ingest has got; the CLI shows it as a bar or as log lines."""

    def file_started(self, path: Path, total_bytes: int, phase: str) -> None: ...
    def advance(self, nbytes: int) -> None: ...
    def file_done(self, report: FileReport) -> None: ...


def ensure_tables(lake: Lake) -> dict[str, DeltaTable]:
    """Open the bronze tables, creating any that are missing (empty, with their schema).

    A lake made by an older tidemark gains the tables and the (nullable) columns added since,
    e.g. ``timer_events.published``: its rows keep their values and read NULL in the new columns;
    and its tables get :data:`TABLE_PROPERTIES`.
    """
    tables = {}
    for name, schema in BRONZE_SCHEMAS.items():
        path = lake.bronze_table(name)
        if not DeltaTable.is_deltatable(str(path)):
            path.mkdir(parents=True, exist_ok=True)
            DeltaTable.create(
                str(path), schema=schema, name=name, mode="ignore", configuration=TABLE_PROPERTIES
            )
        table = DeltaTable(str(path))
        have = set(table.schema().to_arrow().names)
        missing = [f for f in schema if f.name not in have]
        if missing:
            log.info("adding column(s) %s to %s", ", ".join(f.name for f in missing), name)
            table.alter.add_columns([Field.from_arrow(f) for f in missing])
        configured = table.metadata().configuration
        if any(configured.get(k) != v for k, v in TABLE_PROPERTIES.items()):
            table.alter.set_table_properties(TABLE_PROPERTIES)
        tables[name] = table
    return tables


def _app_id(sha256: str) -> str:
    return f"tidemark-ingest:{sha256}:{LINES_PER_BLOCK}"


def _scan(
    table: DeltaTable,
    columns: list[str],
    exclude_sha: str | None,
    where: ds.Expression | None = None,
) -> Iterator[pa.RecordBatch]:
    dataset = table.to_pyarrow_dataset()
    if exclude_sha is not None:
        not_that_file = ds.field("source_sha256") != exclude_sha
        where = not_that_file if where is None else where & not_that_file
    yield from dataset.to_batches(columns=columns, filter=where, batch_size=1 << 20)


_TASK_SHAPES = {
    "timer_events": ("timer", ["ts_ms", "timer", "action", "published"]),
    "valve_outputs": ("valve_output", ["ts_ms", "input_index", "kind", "watermark_ms", "status"]),
    "capture_gaps": ("capture_gap", ["ts_ms", "to_seq", "to_ts_ms", "dropped", "reason"]),
    "watermark_events": (
        None,
        ["ts_ms", "input_index", "channel_index", "num_channels", "watermark_ms", "status"],
    ),
}


def _landed_events(
    tables: dict[str, DeltaTable], exclude_sha: str | None, where: ds.Expression | None = None
) -> Iterator[pa.Table]:
    """The task events in bronze (parsed-schema columns), optionally filtered."""
    for name, (kind, payload) in _TASK_SHAPES.items():
        extra = [] if kind else ["event_type"]
        for batch in _scan(tables[name], IDENTITY + payload + extra, exclude_sha, where):
            table = pa.Table.from_batches([batch])
            if kind:
                table = table.append_column("type", pa.array([kind] * table.num_rows, pa.string()))
            else:
                table = table.rename_columns(
                    ["type" if c == "event_type" else c for c in table.column_names]
                )
            yield _conform(table)


def _landed_vertices(
    tables: dict[str, DeltaTable], exclude_sha: str | None, job_id: str | None = None
) -> Iterator[dict[str, object]]:
    """The vertex records in bronze (of one job, if given), as dicts."""
    columns = ["job_id", "vertex_id", "vertex_name", "parallelism", "busy_time_enabled"]
    where = None if job_id is None else ds.field("job_id") == job_id
    for batch in _scan(tables["vertices"], [*columns, "upstream_vertex_ids"], exclude_sha, where):
        yield from batch.to_pylist()


def load_index(tables: dict[str, DeltaTable], exclude_sha: str | None = None) -> IdentityIndex:
    """The identity index of all of bronze (optionally without one file's own rows)."""
    index = IdentityIndex()
    for table in _landed_events(tables, exclude_sha):
        index.add_landed(table)
    index.add_landed_vertices(_landed_vertices(tables, exclude_sha))
    return index


def open_index(summary: BronzeSummary, tables: dict[str, DeltaTable]) -> IdentityIndex:
    """An identity index that loads a task's landed events only when a new one might repeat one.

    Its cost follows the new data: ``summary`` is up to date (brought so from the data files added
    since the last ingest), most tasks' new events are simply above their highest seq, a late one
    is looked up in the files of the last few ingests only (``BronzeSummary.landed_since``), and
    only the vertex records of the jobs a file describes are read.
    """

    def load(bounds: dict[Task, tuple[int, int | None]]) -> pa.Table:
        where = ds.field("seq") >= min(low for low, _ in bounds.values())
        highs = [high for _, high in bounds.values()]
        if None not in highs:
            where &= ds.field("seq") < max(highs)
        since = [summary.landed_since(task, low) for task, (low, _) in bounds.items()]
        if None not in since:  # only the last ingests' files, not the tasks' whole history
            where &= ds.field("ingest_id") >= min(since)
        for position, name in enumerate(IDENTITY[:4]):
            where &= ds.field(name).isin(sorted({t[position] for t in bounds}))
        found = []
        for table in _landed_events(tables, None, where):
            codes, seen = task_codes(table)
            if not seen:
                continue
            none = (np.iinfo(np.int64).max, np.iinfo(np.int64).min)  # keeps nothing
            low, high = np.array([_seq_range(bounds.get(t), none) for t in seen]).T
            seqs = np.asarray(table["seq"].to_numpy(), dtype=np.int64)  # never null in bronze
            keep = (seqs >= low[codes]) & (seqs < high[codes])
            if keep.any():
                found.append(table.filter(pa.array(keep)))
        return pa.concat_tables(found) if found else PARSED.empty_table()

    return IdentityIndex(summary, load, lambda job_id: _landed_vertices(tables, None, job_id))


def _seq_range(bound: tuple[int, int | None] | None, none: tuple[int, int]) -> tuple[int, int]:
    if bound is None:
        return none
    low, high = bound
    return low, np.iinfo(np.int64).max if high is None else high


def _conform(table: pa.Table) -> pa.Table:
    """Give a partial table every parsed column (nulls where absent), in the parsed schema."""
    columns = []
    for f in PARSED:
        if f.name in table.column_names:
            columns.append(table[f.name].cast(f.type))
        else:
            columns.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=PARSED)


def _next_ingest_id(tables: dict[str, DeltaTable]) -> int:
    highest = 0
    for table in tables.values():
        actions = pa.table(table.get_add_actions(flatten=True))
        column = "max.ingest_id"
        if actions.num_rows and column in actions.column_names:
            value = pc.max(actions[column]).as_py()
            highest = max(highest, value or 0)
    return highest + 1


def ingest(
    paths: list[Path],
    lake: Lake,
    progress: Progress | None = None,
    *,
    after_commit: Callable[[str, int], None] | None = None,
) -> IngestReport:
    """Land ``paths`` (files or folders) in ``lake``'s bronze tables.

    ``after_commit(table, block)`` is a test hook called after every bronze commit.
    """
    progress = progress or Progress()
    report = IngestReport()
    targets = files.find_files(paths)
    with ingest_lock(lake):
        # What `tidemark maintain` expired: an older event is quarantined, not landed.
        expired = expired_before(lake)
        tables = ensure_tables(lake)
        index: IdentityIndex | None = None
        # up to date with bronze until this ingest commits; None after that
        summary: BronzeSummary | None = BronzeSummary.brought_up_to_date(
            lake.bronze_summary, tables
        )
        done = dict(summary.done)
        next_id = _next_ingest_id(tables)
        seen = SeenFiles.load(lake)
        for path in targets:
            file_report = FileReport(path=path)
            report.files.append(file_report)
            try:
                stat = path.stat()
                size = stat.st_size
                progress.file_started(path, size, "checking")
                known = seen.sha256(path, stat)
                if known in done:  # landed before, unchanged since: no need to read it again
                    print_ = files.Fingerprint(known, size)
                else:
                    print_ = files.fingerprint(path, progress.advance)
                file_report.sha256 = print_.sha256
                if print_.sha256 in done:
                    seen.remember(path, stat, print_.sha256)
                    file_report.skipped_as_seen = True
                    file_report.lines_read = done[print_.sha256]
                    file_report.duplicates = done[print_.sha256]
                    progress.file_done(file_report)
                    continue
                app_id = _app_id(print_.sha256)
                committed = {name: tables[name].transaction_version(app_id) for name in WRITE_ORDER}
                if index is None or any(v is not None for v in committed.values()):
                    # A file that crashed part-way is judged against bronze without its own rows.
                    resuming = any(v is not None for v in committed.values())
                    if resuming:
                        index = load_index(tables, print_.sha256)
                    else:
                        if summary is None:  # bronze changed since: bring it up to date again
                            summary = BronzeSummary.brought_up_to_date(lake.bronze_summary, tables)
                        index = open_index(summary, tables)
                progress.file_started(path, size, "landing")
                summary = None  # this file's commits are not in it
                next_id = _land_file(
                    path,
                    print_.sha256,
                    tables,
                    index,
                    committed,
                    next_id,
                    file_report,
                    progress,
                    after_commit,
                    expired,
                )
                _append(
                    tables["ingest_log"],
                    pa.Table.from_pylist(
                        [
                            {
                                "source_sha256": print_.sha256,
                                "source_file": str(path),
                                "lines_read": file_report.lines_read,
                                "accepted": file_report.accepted,
                                "duplicates": file_report.duplicates,
                                "quarantined": file_report.quarantined,
                                "ingest_id": next_id,
                                "ingested_at": datetime.now(UTC),
                            }
                        ],
                        schema=BRONZE_SCHEMAS["ingest_log"],
                    ),
                    None,
                )
                next_id += 1
                done[print_.sha256] = file_report.lines_read
                seen.remember(path, stat, print_.sha256)
                progress.file_done(file_report)
            except files.UnreadableFile as exc:
                file_report.error = str(exc)
                index = None  # it may hold part of the file; rebuild from what is committed
                progress.file_done(file_report)
        seen.save()
    return report


@dataclass
class SeenFiles:
    """Files already landed, by path, with the size, mtime and inode they had: a folder that
    `tidemark run` ingests every minute is not read again file by file. Only a hint: a file is
    skipped without reading when it is unchanged (same size, mtime in ns, inode) and its sha256
    is in `ingest_log`; anything else is hashed as before. Missing or unreadable: rebuilt."""

    path: Path
    entries: dict[str, list] = field(default_factory=dict)

    @classmethod
    def load(cls, lake: Lake) -> SeenFiles:
        try:
            entries = json.loads(lake.seen_files.read_text())
            if not isinstance(entries, dict):
                raise ValueError("not an object")
        except FileNotFoundError:
            entries = {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s (%s): files are hashed again", lake.seen_files, exc)
            entries = {}
        return cls(lake.seen_files, entries)

    @staticmethod
    def _state(stat: os.stat_result) -> list[int]:
        return [stat.st_size, stat.st_mtime_ns, stat.st_ino]

    def sha256(self, path: Path, stat: os.stat_result) -> str | None:
        entry = self.entries.get(str(path.resolve()))
        if isinstance(entry, list) and len(entry) == 4 and entry[:3] == self._state(stat):
            return entry[3]
        return None

    def remember(self, path: Path, stat: os.stat_result, sha256: str) -> None:
        self.entries[str(path.resolve())] = [*self._state(stat), sha256]

    def save(self) -> None:
        kept = {p: e for p, e in self.entries.items() if Path(p).exists()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(kept))
        partial.replace(self.path)


def _append(table: DeltaTable, rows: pa.Table, txn: Transaction | None) -> None:
    write_deltalake(
        table,
        rows,
        mode="append",
        commit_properties=CommitProperties(app_transactions=[txn] if txn else None),
    )
    table.update_incremental()


def _land_file(
    path: Path,
    sha256: str,
    tables: dict[str, DeltaTable],
    index: IdentityIndex,
    committed: dict[str, int | None],
    next_id: int,
    report: FileReport,
    progress: Progress,
    after_commit: Callable[[str, int], None] | None,
    expired_before_ms: int | None,
) -> int:
    app_id = _app_id(sha256)
    source = str(path)
    blocks = files.read_blocks(path, LINES_PER_BLOCK, progress.advance)

    def write(rows: _BlockRows, block_no: int) -> None:
        for name in WRITE_ORDER:
            out = rows.tables[name]
            done_up_to = committed[name]
            if out.num_rows == 0 or (done_up_to is not None and done_up_to >= block_no):
                continue
            _append(tables[name], out, Transaction(app_id=app_id, version=block_no))
            if after_commit:
                after_commit(name, block_no)

    # A block's commits run in a third thread while the next block is judged. They stay in
    # block order: a block is handed over only once the one before it has committed (or failed).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidemark-write") as writer:
        writing: Future[None] | None = None
        for block_no, (block, checked) in enumerate(_checked_ahead(blocks, expired_before_ms)):
            rows = _judge_block(block, checked, source, sha256, next_id, index)
            if writing is not None:
                writing.result()
            writing = writer.submit(write, rows, block_no)
            report.lines_read += len(block)
            report.accepted += rows.accepted
            report.duplicates += rows.duplicates
            report.quarantined += rows.tables["quarantine"].num_rows
            next_id += 1
        if writing is not None:
            writing.result()
    return next_id


@dataclass
class _BlockRows:
    tables: dict[str, pa.Table]
    accepted: int
    duplicates: int


@dataclass
class _Checked:
    """A block's lines typed (:mod:`~tidemark.ingest.parse`) and held to the per-line rules."""

    parsed: Parsed
    broken: dict[int, str]  # row of parsed.table -> the rule it breaks (check_rows)


def _check(block: files.Block, expired_before_ms: int | None) -> _Checked:
    parsed = parse_block(block.data, len(block), lambda: block.lines, block.starts)
    return _Checked(parsed, check_rows(parsed.table, expired_before_ms))


def _checked_ahead(
    blocks: Iterator[files.Block], expired_before_ms: int | None
) -> Iterator[tuple[files.Block, _Checked]]:
    """Parse and check the next block in a second thread while this one is judged and written.

    Arrow's JSON reader and compute kernels and the Delta writer release the GIL, so the two
    overlap. Judging stays in block order on the calling thread: it depends on every block
    before it.
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidemark-parse") as pool:
        ahead: Future[_Checked] | None = None
        previous: files.Block | None = None
        for block in blocks:
            future = pool.submit(_check, block, expired_before_ms)
            if ahead is not None and previous is not None:
                yield previous, ahead.result()
            ahead, previous = future, block
        if ahead is not None and previous is not None:
            yield previous, ahead.result()


def _judge_block(
    block: files.Block,
    checked: _Checked,
    source: str,
    sha256: str,
    ingest_id: int,
    index: IdentityIndex,
) -> _BlockRows:
    table = checked.parsed.table
    numbers = block.numbers
    row_lines = np.asarray(checked.parsed.rows, dtype=np.int64)
    reasons: dict[int, str] = dict(checked.parsed.failures)  # block index -> reason

    valid = np.ones(table.num_rows, dtype=bool)
    for i, reason in checked.broken.items():
        valid[i] = False
        reasons[int(row_lines[i])] = reason

    kind = enum_codes(table["type"], EVENT_TYPES)  # one pass over the types for every split below
    task_rows = np.flatnonzero(valid & is_type(kind, TASK_TYPES))
    events = table if len(task_rows) == table.num_rows else table.take(task_rows)
    events = events.set_column(
        events.schema.get_field_index("attempt"),
        "attempt",
        pc.fill_null(events["attempt"], 0),
    )
    verdicts: Verdicts = index.judge(events)
    for k in np.flatnonzero((verdicts.codes != ACCEPTED) & (verdicts.codes != DUPLICATE)):
        reasons[int(row_lines[task_rows[k]])] = verdicts.reason(int(k), events)
    keep = verdicts.codes == ACCEPTED
    accepted_events = events if keep.all() else events.filter(pa.array(keep))
    accepted_lines = row_lines[task_rows[keep]]
    accepted_kind = kind[task_rows[keep]]
    duplicates = int((verdicts.codes == DUPLICATE).sum())

    vertex_rows = np.flatnonzero(valid & is_type(kind, ("vertex",)))
    vertex_keep = []
    for i in vertex_rows.tolist():
        if index.judge_vertex(table.slice(i, 1).to_pylist()[0]):
            vertex_keep.append(i)
        else:
            duplicates += 1
    vertices = table.take(np.asarray(vertex_keep, dtype=np.int64))

    now = datetime.now(UTC)

    def lineage(lines_idx: np.ndarray) -> dict[str, pa.Array]:
        n = len(lines_idx)
        return {
            "source_file": pa.repeat(pa.scalar(source, pa.string()), n),
            "source_sha256": pa.repeat(pa.scalar(sha256, pa.string()), n),
            "line_number": pa.array(numbers[lines_idx], pa.int64()),
            "ingest_id": pa.repeat(pa.scalar(ingest_id, pa.int64()), n),
            "ingested_at": pa.repeat(pa.scalar(now, pa.timestamp("us", tz="UTC")), n),
        }

    out: dict[str, pa.Table] = {}
    for table_name, types in _TASK_TABLES.items():
        is_kind = is_type(accepted_kind, types)
        wanted = [n for n in (*_names(table_name), "type") if n in accepted_events.column_names]
        rows = accepted_events.select(wanted).filter(pa.array(is_kind))
        columns = {n: rows[n] for n in _names(table_name) if n in rows.column_names}
        if table_name == "watermark_events":
            columns["event_type"] = rows["type"]
        out[table_name] = _build(table_name, columns, lineage(accepted_lines[is_kind]))
    vertex_columns = {n: vertices[n] for n in _names("vertices") if n in vertices.column_names}
    vertex_columns["busy_time_enabled"] = pc.fill_null(vertices["busy_time_enabled"], True)
    vertex_columns["upstream_vertex_ids"] = pc.fill_null(
        vertices["upstream_vertex_ids"], pa.scalar([], pa.list_(pa.string()))
    )
    out["vertices"] = _build(
        "vertices", vertex_columns, lineage(row_lines[np.asarray(vertex_keep, dtype=np.int64)])
    )

    bad = sorted(reasons)
    raw = [block.lines[i] for i in bad]
    text = [line.decode("utf-8", errors="replace") for line in raw]
    quarantine = {
        "raw_line": pa.array(text, pa.string()),
        "raw_bytes": pa.array(
            [None if t.encode("utf-8") == r else r for t, r in zip(text, raw, strict=True)],
            pa.binary(),
        ),
        "reason": pa.array([reasons[i] for i in bad], pa.string()),
    }
    out["quarantine"] = _build("quarantine", quarantine, lineage(np.asarray(bad, dtype=np.int64)))
    return _BlockRows(out, int(keep.sum()) + len(vertex_keep), duplicates)


# Which bronze table each task record type lands in.
_TASK_TABLES = {
    "timer_events": ("timer",),
    "watermark_events": ("watermark", "watermark_status"),
    "valve_outputs": ("valve_output",),
    "capture_gaps": ("capture_gap",),
}


def _names(table: str) -> list[str]:
    return BRONZE_SCHEMAS[table].names


def _build(name: str, columns: dict[str, object], lineage: dict[str, pa.Array]) -> pa.Table:
    schema = BRONZE_SCHEMAS[name]
    merged = {**columns, **lineage}
    arrays = [
        pa.array(merged[f.name]) if isinstance(merged[f.name], list) else merged[f.name]
        for f in schema
    ]
    return pa.Table.from_arrays(
        [a.cast(f.type) for a, f in zip(arrays, schema, strict=True)], schema=schema
    )


def describe(report: IngestReport) -> str:
    """The one-line summary ``tidemark ingest`` prints."""
    seen = sum(1 for f in report.files if f.skipped_as_seen)
    parts = [
        f"{len(report.files)} file(s)",
        f"{report.lines_read} lines read",
        f"{report.accepted} accepted",
        f"{report.duplicates} duplicate",
        f"{report.quarantined} quarantined",
    ]
    if seen:
        parts.append(f"{seen} file(s) already ingested")
    if report.errors:
        parts.append(f"{len(report.errors)} unreadable")
    return ", ".join(parts)
