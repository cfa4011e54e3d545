"""What bronze already holds, in short: per task its highest ``seq`` and the ``num_channels`` of
each input, and the files landed (``ingest_log``: sha256 -> lines read).

The identity rules (contract §1, :mod:`tidemark.ingest.identity`) need a task's landed seqs only
when a new event could repeat one: a capture's next file carries on each task's seq, so for almost
every event "above the highest landed seq" settles it. This summary is what makes an ingest cost
what is new rather than all of bronze: it is O(tasks), kept in ``lake.bronze_summary`` with the
Delta version of each table it reflects, and brought up to date by reading only the commits made
since (:mod:`tidemark.delta_log`: their ``add`` actions, and the data files those add; a compaction
moves rows without changing them and is passed over). A commit that removes rows (an expiry, a
delete) or that is no longer in the log means it cannot be updated that way: it is then rebuilt
from the whole table, once. A missing or unreadable summary is rebuilt the same way.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from deltalake import DeltaTable

from tidemark import delta_log

Task = tuple[str, str, int, int]

log = logging.getLogger(__name__)

TASK_TABLES = ("timer_events", "valve_outputs", "capture_gaps", "watermark_events")
TABLES = (*TASK_TABLES, "ingest_log")
IDENTITY = ["job_id", "vertex_id", "subtask_index", "attempt", "seq"]
_SCHEMA = pa.schema(
    [
        ("job_id", pa.string()),
        ("vertex_id", pa.string()),
        ("subtask_index", pa.int64()),
        ("attempt", pa.int64()),
        # the task's last generations (oldest first): their lowest ingest_id and highest seq
        ("generation_ingest_ids", pa.list_(pa.int64())),
        ("generation_max_seqs", pa.list_(pa.int64())),
        ("older_max_seq", pa.int64()),  # highest seq of the generations before those; null: none
        ("input_index", pa.int64()),  # null: the task's row; else one input's channels
        ("num_channels", pa.int64()),
    ]
)
GENERATIONS = 4  # kept per task: a late event seldom reaches back more than a few ingests


@dataclass
class Generations:
    """Where a task's landed seqs lie in ingest order, in short.

    A generation is what one update of the summary found (the commits of the ingests since the
    last one); ``ids`` and ``max_seqs`` are the lowest ingest_id and the highest seq of the task's
    last few generations, oldest first, and ``older_max_seq`` the highest seq before them.
    """

    ids: list[int] = field(default_factory=list)
    max_seqs: list[int] = field(default_factory=list)
    older_max_seq: int | None = None

    def add(self, ingest_id: int, max_seq: int) -> None:
        self.ids.append(ingest_id)
        self.max_seqs.append(max_seq)
        if len(self.ids) > GENERATIONS:
            self.ids.pop(0)
            dropped = self.max_seqs.pop(0)
            older = self.older_max_seq
            self.older_max_seq = dropped if older is None else max(older, dropped)

    @property
    def max_seq(self) -> int:
        """The task's highest landed seq."""
        older = self.older_max_seq
        return max(self.max_seqs) if older is None else max(older, *self.max_seqs)

    def landed_since(self, lowest_seq: int) -> int | None:
        """An ingest_id from which on every landed seq of at least ``lowest_seq`` was landed
        (None: rows of any age may have one): the lowest id of the generations from the newest one
        whose predecessors all lie below ``lowest_seq``."""
        before = self.older_max_seq
        newest = None
        for at, max_seq in enumerate(self.max_seqs):
            if before is not None and before >= lowest_seq:
                break
            newest = at
            before = max_seq if before is None else max(before, max_seq)
        # ids grow from one generation to the next, but a table read whole for the first time
        # brings old rows into a new generation: the lowest id from there on is always right
        return None if newest is None else min(self.ids[newest:])


@dataclass
class BronzeSummary:
    """Per task where its landed seqs lie (its generations, and so its highest seq), and the
    channels in force per (task, input)."""

    generations: dict[Task, Generations] = field(default_factory=dict)
    channels: dict[Task, dict[int, int]] = field(default_factory=dict)
    done: dict[str, int] = field(default_factory=dict)  # ingest_log: sha256 -> lines read
    versions: dict[str, int] = field(default_factory=dict)  # per table: the version it reflects

    # -- keeping it up to date ---------------------------------------------------------------
    @classmethod
    def brought_up_to_date(cls, path: Path, tables: dict[str, DeltaTable]) -> BronzeSummary:
        """The saved summary plus the files added to ``tables`` since; saved again if it changed.

        Rebuilt from the whole tables when rows it reflects have left a table's snapshot.
        """
        summary = cls.load(path)
        changed = summary._follow(tables)
        if changed is None:
            log.info(
                "bronze cannot be followed from its summary (a commit removed rows, or is "
                "no longer in the Delta log): rebuilding the summary"
            )
            summary, changed = cls(), True
            summary._follow(tables)
        if changed:
            summary.save(path)
        return summary

    def _follow(self, tables: dict[str, DeltaTable]) -> bool | None:
        """Add the rows of the commits made to ``tables`` since: whether there were any; None when
        they cannot be followed (then the summary is left part-way and must be rebuilt)."""
        changed = False
        found: dict[Task, tuple[int, int]] = {}  # this generation: lowest ingest_id, highest seq
        for name in TABLES:
            table = tables[name]
            known = self.versions.get(name)
            if known is None:  # never read: the whole snapshot
                version = table.version()
                self._add(name, _batches(name, table.to_pyarrow_dataset()), found)
            else:
                root = delta_log.local_path(table.table_uri)
                commits = delta_log.commits_since(root, known)
                if commits is None:
                    return None
                version = commits.version
                if commits.adds:
                    added = [str(delta_log.local_path(a["path"], root)) for a in commits.adds]
                    schema = pa.schema(table.schema().to_arrow())
                    dataset = ds.dataset(added, schema, format="parquet")
                    self._add(name, _batches(name, dataset), found)
            changed = changed or known != version
            self.versions[name] = version
        for task, (lowest_id, highest) in found.items():
            self.generations.setdefault(task, Generations()).add(lowest_id, highest)
        return changed

    def _add(
        self, name: str, batches: Iterator[pa.RecordBatch], found: dict[Task, tuple[int, int]]
    ) -> None:
        for batch in batches:
            table = pa.Table.from_batches([batch])
            if table.num_rows == 0:
                continue
            if name == "ingest_log":
                shas, lines = table["source_sha256"].to_pylist(), table["lines_read"].to_pylist()
                self.done.update(zip(shas, lines, strict=True))
                continue
            keys = ["job_id", "vertex_id", "subtask_index", "attempt"]
            aggregates = [("seq", "max"), ("ingest_id", "min")]
            for row in table.group_by(keys).aggregate(aggregates).to_pylist():
                task = (row["job_id"], row["vertex_id"], row["subtask_index"], row["attempt"])
                highest, lowest_id = row["seq_max"], row["ingest_id_min"]
                before = found.get(task)
                if before is not None:
                    lowest_id, highest = min(before[0], lowest_id), max(before[1], highest)
                found[task] = (lowest_id, highest)
            if "num_channels" not in table.column_names:
                continue
            with_channels = table.filter(pc.is_valid(table["num_channels"]))
            grouped = with_channels.group_by([*keys, "input_index"]).aggregate(
                [("num_channels", "min")]
            )
            for row in grouped.to_pylist():
                task = (row["job_id"], row["vertex_id"], row["subtask_index"], row["attempt"])
                # landed rows of one (task, input) all have the same count: the first one in
                # force; a different one is quarantined (contract §1)
                self.channels.setdefault(task, {}).setdefault(
                    row["input_index"], row["num_channels_min"]
                )

    # -- storage -----------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path) -> BronzeSummary:
        try:
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_file(source).read_all()
            versions = json.loads(table.schema.metadata[b"tidemark.versions"])
            done = json.loads(table.schema.metadata[b"tidemark.done"])
            if table.schema.remove_metadata() != _SCHEMA or not isinstance(versions, dict):
                raise ValueError("unexpected layout")
            if not isinstance(done, dict):
                raise ValueError("unexpected layout")
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as exc:
            log.warning("ignoring %s (%s): it is rebuilt from bronze", path, exc)
            return cls()
        summary = cls(versions=versions, done=done)
        rows = table.to_pydict()
        for job, vertex, subtask, attempt, ids, seqs, older, input_index, channels in zip(
            *(rows[name] for name in _SCHEMA.names), strict=True
        ):
            task = (job, vertex, subtask, attempt)
            if input_index is None:
                summary.generations[task] = Generations(ids, seqs, older)
            else:
                summary.channels.setdefault(task, {})[input_index] = channels
        return summary

    def save(self, path: Path) -> None:
        columns: dict[str, list[object]] = {name: [] for name in _SCHEMA.names}

        def row(task: Task, *values: object) -> None:
            for name, value in zip(_SCHEMA.names, (*task, *values), strict=True):
                columns[name].append(value)

        for task, ages in self.generations.items():
            row(task, ages.ids, ages.max_seqs, ages.older_max_seq, None, None)
        for task, inputs in self.channels.items():
            for input_index, n in inputs.items():
                row(task, None, None, None, input_index, n)
        schema = _SCHEMA.with_metadata(
            {
                "tidemark.versions": json.dumps(self.versions),
                "tidemark.done": json.dumps(self.done),
            }
        )
        table = pa.table(columns, schema=schema)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with pa.OSFile(str(partial), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            writer.write_table(table)
        partial.replace(path)

    # -- questions ---------------------------------------------------------------------------
    def may_repeat(self, task: Task, lowest_seq: int) -> bool:
        """True when an event of ``task`` with a seq this low may repeat a landed identity."""
        ages = self.generations.get(task)
        return ages is not None and lowest_seq <= ages.max_seq

    def landed_since(self, task: Task, lowest_seq: int) -> int | None:
        """An ingest_id from which on every landed row of ``task`` with a seq of at least
        ``lowest_seq`` was landed; None when rows of any age may have one.

        A capture's late events repeat the tail of what the last ingests landed, so the rows an
        identity check needs are theirs, not the task's whole history.
        """
        ages = self.generations.get(task)
        return None if ages is None else ages.landed_since(lowest_seq)


def _batches(table: str, dataset: ds.Dataset) -> Iterator[pa.RecordBatch]:
    names = set(dataset.schema.names)
    if table == "ingest_log":
        columns = ["source_sha256", "lines_read"]
    else:
        columns = [*IDENTITY, "ingest_id"]
        columns += [c for c in ("input_index", "num_channels") if c in names]
    yield from dataset.to_batches(columns=columns, batch_size=1 << 20)


def lowest_seqs(ids: np.ndarray, seqs: np.ndarray) -> dict[int, int]:
    """The lowest seq of each task id in a block."""
    if len(ids) == 0:
        return {}
    lowest = np.full(int(ids.max()) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(lowest, ids, seqs)
    present = np.flatnonzero(np.bincount(ids, minlength=len(lowest)))
    return dict(zip(present.tolist(), lowest[present].tolist(), strict=True))
