"""Judging one block of a file's lines: parsed and held to the per-line rules (a block ahead, in a
thread of its own), then each event accepted, a duplicate, or quarantined with its reason
(contract §1), and built into the rows of each bronze table with their lineage."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tidemark.ingest import files
from tidemark.ingest.identity import ACCEPTED, DUPLICATE, IdentityIndex, Verdicts
from tidemark.ingest.parse import Parsed, parse_block
from tidemark.ingest.schema import BRONZE_SCHEMAS
from tidemark.ingest.validate import EVENT_TYPES, TASK_TYPES, check_rows, enum_codes, is_type


@dataclass
class BlockRows:
    """A judged block: its rows for each bronze table, and how many were accepted or duplicates."""

    tables: dict[str, pa.Table]
    accepted: int
    duplicates: int


@dataclass
class Checked:
    """A block's lines typed (:mod:`~tidemark.ingest.parse`) and held to the per-line rules."""

    parsed: Parsed
    broken: dict[int, str]  # row of parsed.table -> the rule it breaks (check_rows)


def _check(block: files.Block, expired_before_ms: int | None) -> Checked:
    parsed = parse_block(block.data, len(block), lambda: block.lines, block.starts)
    return Checked(parsed, check_rows(parsed.table, expired_before_ms))


def checked_ahead(
    blocks: Iterator[files.Block], expired_before_ms: int | None
) -> Iterator[tuple[files.Block, Checked]]:
    """Parse and check the next block in a second thread while this one is judged and written.

    Arrow's JSON reader and compute kernels and the Delta writer release the GIL, so the two
    overlap. Judging stays in block order on the calling thread: it depends on every block
    before it.
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidemark-parse") as pool:
        ahead: Future[Checked] | None = None
        previous: files.Block | None = None
        for block in blocks:
            future = pool.submit(_check, block, expired_before_ms)
            if ahead is not None and previous is not None:
                yield previous, ahead.result()
            ahead, previous = future, block
        if ahead is not None and previous is not None:
            yield previous, ahead.result()


def judge_block(
    block: files.Block,
    checked: Checked,
    source: str,
    sha256: str,
    ingest_id: int,
    index: IdentityIndex,
) -> BlockRows:
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
    return BlockRows(out, int(keep.sum()) + len(vertex_keep), duplicates)


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
