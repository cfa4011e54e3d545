"""Rules that need more than one line: identity, duplicates, conflicts, constant ``num_channels``.

Contract §1: a task event is identified by (job_id, vertex_id, subtask_index, attempt, seq). The
same
identity again with the same payload is a duplicate (kept once); with another payload it is a
conflict (the first one stays, the later one is quarantined). ``num_channels`` is constant per
(task, input). A vertex record that repeats one already landed for its vertex is a duplicate too,
so a late re-delivery cannot make an old graph "latest" again.

The index holds, per task, the sorted ``seq`` values that have landed and a 64-bit fingerprint of
each payload, so memory is about 16 bytes per loaded event, whatever the size of the file being
read. An ingest starts it from a :class:`~tidemark.ingest.summary.BronzeSummary` (per task, the
highest landed seq and the channels in force) and loads a task's landed seqs from bronze only
when an event of that task is at or below that highest seq, i.e. might repeat one; a full index
(``add_landed`` of all of bronze) is still what a file resumed after a crash is judged against.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tidemark.ingest.summary import BronzeSummary, Task, lowest_seqs
from tidemark.ingest.validate import ACTIONS, OUTPUT_KINDS, STATUSES, TASK_TYPES, TIMERS, enum_codes

ACCEPTED, DUPLICATE, CONFLICT, CHANNELS_CHANGED = 0, 1, 2, 3

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(h: np.ndarray, values: np.ndarray) -> np.ndarray:
    """One splitmix64 round of ``values`` into ``h`` (uint64 arrays, wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = (h ^ values.astype(np.uint64)) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _ints(array: pa.ChunkedArray, null: int = 0) -> np.ndarray:
    filled = pc.fill_null(array, null)
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64)


def _nulls(array: pa.ChunkedArray) -> np.ndarray:
    return np.asarray(array.is_null().to_numpy(zero_copy_only=False))


def _text_hashes(array: pa.ChunkedArray) -> np.ndarray:
    """A stable 64-bit hash of each string (0 for null); for rare free-text fields only."""
    hashes = np.zeros(len(array), dtype=np.uint64)
    present = np.flatnonzero(np.asarray(array.is_valid().to_numpy(zero_copy_only=False)))
    for i, text in zip(present.tolist(), array.take(present).to_pylist(), strict=True):
        digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
        hashes[i] = int.from_bytes(digest, "little")
    return hashes


def fingerprints(events: pa.Table) -> np.ndarray:
    """A 64-bit fingerprint of each task event's payload (everything but its identity).

    ``events`` has the columns of the parsed schema; ``type`` tells the record types apart, so
    the same identity as a timer and as a watermark is a conflict (one seq per task, contract §1).
    """
    n = events.num_rows
    h = np.zeros(n, dtype=np.uint64)
    h = _mix(h, enum_codes(events["type"], TASK_TYPES))
    h = _mix(h, _ints(events["ts_ms"]))
    h = _mix(h, enum_codes(events["timer"], TIMERS))
    h = _mix(h, enum_codes(events["action"], ACTIONS))
    h = _mix(h, _ints(events["published"], -1))
    h = _mix(h, _ints(events["input_index"], -1))
    h = _mix(h, _ints(events["channel_index"], -1))
    h = _mix(h, _ints(events["num_channels"], -1))
    h = _mix(h, _ints(events["watermark_ms"]))
    h = _mix(h, _nulls(events["watermark_ms"]))
    h = _mix(h, enum_codes(events["status"], STATUSES))
    h = _mix(h, enum_codes(events["kind"], OUTPUT_KINDS))
    h = _mix(h, _ints(events["to_seq"], -1))
    h = _mix(h, _ints(events["to_ts_ms"]))
    h = _mix(h, _ints(events["dropped"], -1))
    return _mix(h, _text_hashes(events["reason"]))


def _encoded(array: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """(distinct values in order of first appearance, code of each value), by hashing: a sort
    (numpy's ``unique``) took most of the time of judging a block."""
    encoded = pc.dictionary_encode(array)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    return encoded.dictionary, np.asarray(encoded.indices, dtype=np.int64)


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """The first row of each code, for codes 0..k-1 that all occur."""
    first = np.zeros(int(codes.max()) + 1, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes))[::-1]
    return first


def task_codes(events: pa.Table) -> tuple[np.ndarray, list[Task]]:
    """Number the distinct tasks of ``events``: a code per row and the task of each code
    (codes in order of first appearance)."""
    if events.num_rows == 0:
        return np.zeros(0, dtype=np.int64), []
    columns = [_encoded(events[name]) for name in ("job_id", "vertex_id")]
    columns += [_encoded(pc.fill_null(events[name], 0)) for name in ("subtask_index", "attempt")]
    # Combine the columns' codes pairwise, re-densifying each time so no product can overflow.
    combined = np.zeros(events.num_rows, dtype=np.int64)
    for distinct, codes in columns:
        _, combined = _encoded(pa.array(combined * len(distinct) + codes))
    first = _first_rows(combined)
    values = [(distinct.to_pylist(), codes) for distinct, codes in columns]
    tasks = [
        (
            values[0][0][values[0][1][i]],
            values[1][0][values[1][1][i]],
            int(values[2][0][values[2][1][i]]),
            int(values[3][0][values[3][1][i]]),
        )
        for i in first.tolist()
    ]
    return combined, tasks


@dataclass
class Verdicts:
    """What became of each task event of a block, in the block's order."""

    codes: np.ndarray  # ACCEPTED, DUPLICATE, CONFLICT or CHANNELS_CHANGED
    expected_channels: np.ndarray  # for CHANNELS_CHANGED: the num_channels already in force

    def reason(self, i: int, events: pa.Table) -> str:
        code = int(self.codes[i])
        if code == CONFLICT:
            identity = ", ".join(
                f"{name}={events[name][i].as_py()!r}"
                for name in ("job_id", "vertex_id", "subtask_index", "attempt", "seq")
            )
            return (
                f"conflict: an event with the same identity ({identity}) but a different payload "
                "was landed first"
            )
        if code == CHANNELS_CHANGED:
            return (
                f"field 'num_channels' is {events['num_channels'][i].as_py()}: input "
                f"{events['input_index'][i].as_py()} of this task already has "
                f"{int(self.expected_channels[i])} channels"
            )
        raise ValueError(f"row {i} has no quarantine reason")


class IdentityIndex:
    """The identities (and payload fingerprints) of the task events landed so far.

    Without a summary, everything landed must be added with :meth:`add_landed` and
    :meth:`add_landed_vertices`. With one, a task's landed events are loaded through ``load``
    when a block has an event of it that might repeat one: ``load`` takes ``{task: (low, high)}``
    and returns the task's landed rows with ``low <= seq < high`` (``high`` None: no bound;
    parsed-schema columns). Only seqs from the block's lowest one of the task up are loaded (an
    event can only repeat its own seq), and a later block with a lower seq loads the range below
    what is loaded. A job's landed vertex records come through ``load_vertices`` (job id -> its
    rows) the first time a vertex record of that job is judged.
    """

    def __init__(
        self,
        summary: BronzeSummary | None = None,
        load: Callable[[dict[Task, tuple[int, int | None]]], pa.Table] | None = None,
        load_vertices: Callable[[str], Iterable[dict[str, object]]] | None = None,
    ) -> None:
        if not (summary is None) == (load is None) == (load_vertices is None):
            raise ValueError("a summary and its loaders come together")
        self._summary = summary
        self._load = load
        self._load_vertices = load_vertices
        self._vertex_jobs: set[str] = set()
        self._ids: dict[Task, int] = {}
        self._tasks: list[Task] = []
        self._loaded_from: dict[int, int] = {}  # task id -> lowest seq loaded
        self._seqs: list[np.ndarray] = []
        self._fps: list[np.ndarray] = []
        self._channels: dict[tuple[int, int], int] = {}
        self._vertices: set[tuple[str, str, str]] = set()

    def __len__(self) -> int:
        return sum(len(s) for s in self._seqs)

    def _task_id(self, task: Task) -> int:
        found = self._ids.get(task)
        if found is None:
            found = self._ids[task] = len(self._seqs)
            self._tasks.append(task)
            self._seqs.append(np.zeros(0, dtype=np.int64))
            self._fps.append(np.zeros(0, dtype=np.uint64))
            if self._summary is not None:
                for input_index, n in self._summary.channels.get(task, {}).items():
                    self._channels[(found, input_index)] = n
        return found

    def _load_if_needed(self, ids: np.ndarray, seqs: np.ndarray) -> None:
        """Load the landed events of the block's tasks whose events might repeat one."""
        if self._summary is None or self._load is None:
            return
        wanted: dict[Task, tuple[int, int | None]] = {}
        for task_id, lowest in lowest_seqs(ids, seqs).items():
            loaded_from = self._loaded_from.get(task_id)
            if (loaded_from is None or lowest < loaded_from) and self._summary.may_repeat(
                self._tasks[task_id], lowest
            ):
                wanted[self._tasks[task_id]] = (lowest, loaded_from)
                self._loaded_from[task_id] = lowest
        if not wanted:
            return
        landed = self._load(wanted)
        if landed.num_rows:
            codes, tasks = task_codes(landed)
            landed_ids = np.array([self._task_id(t) for t in tasks], dtype=np.int64)[codes]
            # bronze may hold rows this ingest landed (and inserted) already: keep one of each
            self._insert(landed_ids, _ints(landed["seq"]), fingerprints(landed), dedupe=True)

    # -- loading ---------------------------------------------------------------------------
    def add_landed(self, events: pa.Table) -> None:
        """Record task events that are in bronze already (parsed-schema columns)."""
        if events.num_rows == 0:
            return
        codes, tasks = task_codes(events)
        ids = np.array([self._task_id(t) for t in tasks], dtype=np.int64)[codes]
        self._insert(ids, _ints(events["seq"]), fingerprints(events))
        self._channels_in_force(ids, events)

    def _channels_in_force(
        self, ids: np.ndarray, events: pa.Table
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the events with ``num_channels``: their rows, their value, and the value in force
        for their (task, input), which the first of them sets for a pair not seen before."""
        rows = np.flatnonzero(pc.is_valid(events["num_channels"]).to_numpy(zero_copy_only=False))
        channels = _ints(events["num_channels"])[rows]
        if len(rows) == 0:
            return rows, channels, channels
        task_ids = ids[rows]
        inputs = _ints(events["input_index"])[rows]
        distinct_inputs, input_codes = _encoded(pa.array(inputs))
        _, pairs = _encoded(pa.array(task_ids * len(distinct_inputs) + input_codes))
        first = _first_rows(pairs)
        in_force = [
            self._channels.setdefault((task_id, input_index), int(channels[at]))
            for task_id, input_index, at in zip(
                task_ids[first].tolist(), inputs[first].tolist(), first.tolist(), strict=True
            )
        ]
        return rows, channels, np.asarray(in_force, dtype=np.int64)[pairs]

    def add_landed_vertices(self, vertices: Iterable[dict[str, object]]) -> None:
        for row in vertices:
            self._vertices.add(vertex_key(row))

    def _insert(
        self, ids: np.ndarray, seqs: np.ndarray, fps: np.ndarray, dedupe: bool = False
    ) -> None:
        order = np.lexsort((seqs, ids))
        ids, seqs, fps = ids[order], seqs[order], fps[order]
        bounds = np.flatnonzero(np.diff(ids)) + 1
        for chunk_ids, chunk_seqs, chunk_fps in zip(
            np.split(ids, bounds), np.split(seqs, bounds), np.split(fps, bounds), strict=True
        ):
            task_id = int(chunk_ids[0])
            known = self._seqs[task_id]
            merged_seqs = np.concatenate([known, chunk_seqs])
            merged_fps = np.concatenate([self._fps[task_id], chunk_fps])
            if len(known) and known[-1] >= chunk_seqs[0]:  # not simply appended: sort again
                keep = np.argsort(merged_seqs, kind="stable")
                merged_seqs, merged_fps = merged_seqs[keep], merged_fps[keep]
                if dedupe:  # the first of equal seqs is the one known before
                    first = np.ones(len(merged_seqs), dtype=bool)
                    first[1:] = merged_seqs[1:] != merged_seqs[:-1]
                    merged_seqs, merged_fps = merged_seqs[first], merged_fps[first]
            self._seqs[task_id] = merged_seqs
            self._fps[task_id] = merged_fps

    # -- judging a block ---------------------------------------------------------------------
    def judge(self, events: pa.Table) -> Verdicts:
        """Classify the valid task events of one block (in line order) and remember the accepted.

        The first event of an identity stays; later ones are duplicates when their payload is
        the same and conflicts when it is not. ``num_channels`` is checked first, against the
        value in force for the (task, input), or the block's first line for that input.
        """
        n = events.num_rows
        verdict = np.full(n, ACCEPTED, dtype=np.int8)
        expected = np.zeros(n, dtype=np.int64)
        if n == 0:
            return Verdicts(verdict, expected)
        codes, tasks = task_codes(events)
        ids = np.array([self._task_id(t) for t in tasks], dtype=np.int64)[codes]
        seqs = _ints(events["seq"])
        self._load_if_needed(ids, seqs)
        fps = fingerprints(events)

        rows, channels, want = self._channels_in_force(ids, events)
        changed = channels != want
        verdict[rows[changed]] = CHANNELS_CHANGED
        expected[rows] = want

        live = np.flatnonzero(verdict == ACCEPTED)
        order = live[np.lexsort((live, seqs[live], ids[live]))]  # by task, seq, then line
        o_ids, o_seqs, o_fps = ids[order], seqs[order], fps[order]
        new_group = np.ones(len(order), dtype=bool)
        new_group[1:] = (o_ids[1:] != o_ids[:-1]) | (o_seqs[1:] != o_seqs[:-1])
        group_start = np.maximum.accumulate(np.where(new_group, np.arange(len(order)), 0))
        reference = o_fps[group_start]
        landed = np.zeros(len(order), dtype=bool)
        bounds = [*np.flatnonzero(np.r_[True, o_ids[1:] != o_ids[:-1]]).tolist(), len(order)]
        for first, end in zip(bounds[:-1], bounds[1:], strict=True):  # one task's span each
            task_id = int(o_ids[first])
            span = np.arange(first, end)
            known_seqs = self._seqs[task_id]
            if len(known_seqs) == 0 or known_seqs[-1] < o_seqs[first]:
                continue  # the usual case: every seq of the span is above the landed ones
            at = np.searchsorted(known_seqs, o_seqs[span])
            at_clipped = np.minimum(at, len(known_seqs) - 1)
            hit = (at < len(known_seqs)) & (known_seqs[at_clipped] == o_seqs[span])
            landed[span[hit]] = True
            reference[span[hit]] = self._fps[task_id][at_clipped[hit]]
        accepted = new_group & ~landed
        outcome = np.where(
            accepted, ACCEPTED, np.where(o_fps == reference, DUPLICATE, CONFLICT)
        ).astype(np.int8)
        verdict[order] = outcome
        keep = order[accepted]
        if len(keep):
            self._insert(ids[keep], seqs[keep], fps[keep])
        return Verdicts(verdict, expected)

    def judge_vertex(self, row: dict[str, object]) -> bool:
        """True (and remembered) for a vertex record not landed before, False for a repeat."""
        key = vertex_key(row)
        if self._load_vertices is not None and key[0] not in self._vertex_jobs:
            self._vertex_jobs.add(key[0])
            self.add_landed_vertices(self._load_vertices(key[0]))
        if key in self._vertices:
            return False
        self._vertices.add(key)
        return True


def vertex_key(row: dict[str, object]) -> tuple[str, str, str]:
    busy = row.get("busy_time_enabled")
    payload = [
        row.get("vertex_name"),
        row.get("parallelism"),
        True if busy is None else busy,
        list(row.get("upstream_vertex_ids") or []),  # type: ignore[call-overload]
    ]
    # Contract §8's fields, where present: a record that adds them is not a repeat of one without.
    payload += [
        [name, row[name]]
        for name in ("flink_version", "max_parallelism", "input_ship_strategies")
        if row.get(name) is not None
    ]
    return (str(row["job_id"]), str(row["vertex_id"]), json.dumps(payload, sort_keys=True))
