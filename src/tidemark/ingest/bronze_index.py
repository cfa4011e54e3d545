"""The identity index an ingest judges new events against, on what bronze already holds
(contract §1, :mod:`tidemark.ingest.identity`): the landed events and vertex records, read back
from the bronze tables, all of them or only those a new event might repeat."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import DeltaTable

from tidemark.ingest.identity import IdentityIndex, Task, task_codes
from tidemark.ingest.schema import LINEAGE, PARSED, VERTICES
from tidemark.ingest.summary import IDENTITY, BronzeSummary


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


def landed_events(
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


def landed_vertices(
    tables: dict[str, DeltaTable], exclude_sha: str | None, job_id: str | None = None
) -> Iterator[dict[str, object]]:
    """The vertex records in bronze (of one job, if given), as dicts."""
    columns = [f.name for f in VERTICES if f.name not in {f.name for f in LINEAGE}]
    where = None if job_id is None else ds.field("job_id") == job_id
    for batch in _scan(tables["vertices"], columns, exclude_sha, where):
        yield from batch.to_pylist()


def load_index(tables: dict[str, DeltaTable], exclude_sha: str | None = None) -> IdentityIndex:
    """The identity index of all of bronze (optionally without one file's own rows)."""
    index = IdentityIndex()
    for table in landed_events(tables, exclude_sha):
        index.add_landed(table)
    index.add_landed_vertices(landed_vertices(tables, exclude_sha))
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
        for table in landed_events(tables, None, where):
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

    return IdentityIndex(summary, load, lambda job_id: landed_vertices(tables, None, job_id))


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
