"""Pure-Python core of the ``tidemark_valve`` UDTF: one task's events, chunk by chunk.

:class:`TaskFeed` feeds one task's valve input events, in ``seq`` order, to
:class:`udfs.task_watermarks.TaskWatermarks` (one :class:`~udfs.valve.StatusWatermarkValve` per
input, rules W1-W4 and S1-S3, and their combination into the task's clock, rules C1-C5) and
returns the rows the UDTF outputs. The Spark adapter (``udfs.spark.ValveUDTF``) only converts
Spark's rows into the plain values taken here, and the tuples returned here into its output row.
This module never imports pyspark or pandas.

Protocol, for one task (the UDTF's partition)::

    feed = TaskFeed(("job", "map", 0, 0), "flink-1.13-2.0", checkpoint_every_ms=10_000)
    feed.header(task_inputs=[0, 1], state=None, resumed_after_seq=-1)   # optional, first
    rows = feed.feed([InputPart(0, 2, None, seqs, ts_ms, channels, watermarks, codes), ...])
    ...                                                                  # one call per chunk
    rows = feed.finish()                                                 # the state row

* :meth:`TaskFeed.header`: every ``input_index`` the task ever uses (the combiner needs them all
  from the start, C1), the JSON of ``TaskWatermarks.to_state`` to resume from (or None: start
  fresh) and the last ``seq`` that state covers (-1 when fresh), echoed on the state rows;
* :meth:`TaskFeed.feed`: one chunk: one :class:`InputPart` per input, each with its events as
  parallel lists of ints (``seqs``, ``ts_ms``, ``channels``, ``watermarks`` (0 for statuses) and
  ``codes``: :data:`CODE_WATERMARK`, :data:`CODE_IDLE`, :data:`CODE_ACTIVE`,
  :data:`CODE_BAD_STATUS`, :data:`CODE_NO_WATERMARK`) in any order. The events of all parts are
  merged in ``seq`` order (contract section 1: ``seq`` orders a task's events across all its
  inputs), and each must come after every ``seq`` fed before: chunks arrive in ``seq`` order;
* :meth:`TaskFeed.finish`: the task's final state row.

Output rows are tuples with the columns of :data:`OUTPUT_COLUMNS`, tagged by ``row_kind``:

* ``emission``: one output of the valve of ``input_index`` (W1-W4, S1-S3; contract section 4,
  ``fct_valve_emissions``): ``seq`` and ``ts_ms`` of the input event that caused it,
  ``emission_index`` 0, 1, ... within that event, ``kind`` and ``watermark_ms`` or ``status``;
* ``clock``: one output of the task's clock (``input_index`` None), same columns; only for tasks
  with two or more inputs: a one-input task's clock is exactly its valve's output (C1-C5);
* ``state``: one per task, last (:meth:`TaskFeed.finish`): ``seq`` the last fed event, ``ts_ms``
  the smallest ``ts_ms`` fed so far (where the task's timeline starts), ``effective_ms`` the
  largest, ``state`` the JSON to resume from, ``resumed_after_seq`` as given in the header;
* ``checkpoint``: the same, saved along the way whenever ``effective_ms`` enters a new interval of
  ``checkpoint_every_ms`` (the state after the events before the one that crossed), so that a
  late event can later resume the task from a point shortly before it. None when
  ``checkpoint_every_ms`` is 0, and none before the first event or twice without an event between.

``effective_ms`` on every row is the largest ``ts_ms`` of the task's events fed so far: the time
axis of the task's watermark timeline, monotonic even where the task's clock steps back.

Bad input (a ``seq`` not after the last fed one or fed twice, a channel outside the valve, a
status other than IDLE/ACTIVE, a watermark event without its value, a ``num_channels`` that
changes, an unknown semantics or a state that does not fit) raises
:class:`~udfs.valve.ValveInputError` (a :class:`ValueError`) naming the task, the input and the
``seq``, e.g. ``tidemark_valve: task job_id='job' vertex_id='map' subtask_index=0 attempt=0
input_index=0 seq=7: channel 5 is outside [0, 2)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import NamedTuple

from udfs.task_watermarks import TaskWatermarks
from udfs.valve import LONG_MAX, LONG_MIN, Emission, ValveInputError, ValveSemantics

__all__ = [
    "CODE_ACTIVE",
    "CODE_BAD_STATUS",
    "CODE_IDLE",
    "CODE_NO_WATERMARK",
    "CODE_WATERMARK",
    "OUTPUT_COLUMNS",
    "VALVE_FUNCTION",
    "InputPart",
    "TaskFeed",
    "TaskKey",
]

VALVE_FUNCTION = "tidemark_valve"
"""The SQL name of the UDTF; every error message starts with it."""

CODE_WATERMARK = -1
"""A ``watermark`` event with its ``watermark_ms``."""
CODE_IDLE = 0
"""A ``watermark_status`` event with status IDLE."""
CODE_ACTIVE = 1
"""A ``watermark_status`` event with status ACTIVE."""
CODE_BAD_STATUS = 2
"""A ``watermark_status`` event whose status is not IDLE or ACTIVE (or missing)."""
CODE_NO_WATERMARK = 3
"""A ``watermark`` event without ``watermark_ms``."""
_STATUS_OF_CODE = ("IDLE", "ACTIVE")

_NEVER = 2**64
"""Larger than any ``ts_ms``: no checkpoint is due."""

OUTPUT_COLUMNS = (
    ("row_kind", "string"),
    ("input_index", "int"),
    ("seq", "bigint"),
    ("ts_ms", "bigint"),
    ("effective_ms", "bigint"),
    ("emission_index", "int"),
    ("kind", "string"),
    ("watermark_ms", "bigint"),
    ("status", "string"),
    ("resumed_after_seq", "bigint"),
    ("state", "string"),
)
"""The fields of one output row, in order, with their SQL types (see the module doc)."""

TaskKey = tuple[str, str, int, int]
"""``(job_id, vertex_id, subtask_index, attempt)``: names the task in error messages."""


class InputPart(NamedTuple):
    """One input's events of one chunk, as parallel lists of the same length."""

    input_index: int
    num_channels: int
    bad_status: str | None
    """The first status of the part that is not IDLE/ACTIVE (for :data:`CODE_BAD_STATUS`)."""
    seqs: list[int]
    ts_ms: list[int]
    channels: list[int]
    watermarks: list[int]
    """0 for a status event."""
    codes: list[int]


class TaskFeed:
    """One task's events, fed chunk by chunk to its valves and clock; returns the output rows."""

    __slots__ = (
        "_key",
        "_semantics",
        "_every",
        "_inputs",
        "_state",
        "_resumed_after",
        "_task",
        "_next_checkpoint",
        "_fed_since_checkpoint",
    )

    def __init__(self, task: TaskKey, semantics: str, checkpoint_every_ms: int = 0) -> None:
        self._key = task
        self._semantics = semantics
        self._every = max(checkpoint_every_ms, 0)
        self._inputs: list[int] = []
        self._state: str | None = None
        self._resumed_after = -1
        self._task: TaskWatermarks | None = None
        self._next_checkpoint = _NEVER
        self._fed_since_checkpoint = False

    @property
    def task(self) -> TaskWatermarks | None:
        """The task's valves and clock, once started (at the first chunk or :meth:`finish`)."""
        return self._task

    def header(
        self, task_inputs: list[int] | None, state: str | None, resumed_after_seq: int | None
    ) -> None:
        """The task's header, before its first chunk: inputs, saved state, the seq it covers.

        ``task_inputs`` None keeps the inputs of the first chunk; ``resumed_after_seq`` None
        keeps -1. A ``state`` (JSON of ``TaskWatermarks.to_state``) wins over ``task_inputs``.
        """
        if task_inputs is not None:
            self._inputs = task_inputs
        self._state = state
        if resumed_after_seq is not None:
            self._resumed_after = resumed_after_seq

    def finish(self) -> list[tuple]:
        """The ``state`` row: where the task stands after everything fed (see the module doc)."""
        return [self._state_row("state", self._task or self._start([]))]

    # ------------------------------------------------------------------ internals

    def _state_row(self, kind: str, task: TaskWatermarks) -> tuple:
        state = json.dumps(task.to_state(), separators=(",", ":"))
        return (kind, None, task.last_seq, task.first_ms, task.effective_ms, None, None, None,
                None, self._resumed_after, state)  # fmt: skip

    def _where(self, input_index: int | None = None, seq: int | None = None) -> str:
        job_id, vertex_id, subtask_index, attempt = self._key
        where = (
            f"{VALVE_FUNCTION}: task job_id={job_id!r} vertex_id={vertex_id!r} "
            f"subtask_index={subtask_index} attempt={attempt}"
        )
        if input_index is not None:
            where += f" input_index={input_index}"
        if seq is not None:
            where += f" seq={seq}"
        return where + ": "

    def _start(self, parts: list[InputPart]) -> TaskWatermarks:
        """The task: restored from the header's state, or fresh with the header's inputs (else
        the inputs of ``parts``, the first chunk)."""
        try:
            semantics = ValveSemantics(self._semantics)
        except ValueError:
            expected = ", ".join(repr(m.value) for m in ValveSemantics)
            raise ValveInputError(
                f"{self._where()}unknown valve semantics {self._semantics!r}; expected {expected}"
            ) from None
        try:
            if self._state is not None:
                task = TaskWatermarks.from_state(json.loads(self._state))
                if task.semantics is not semantics:
                    raise ValveInputError(
                        f"saved state has semantics {task.semantics.value!r}, not "
                        f"{semantics.value!r}: resume only with the semantics it was made with"
                    )
            else:
                inputs = self._inputs or sorted({part.input_index for part in parts})
                task = TaskWatermarks(inputs, semantics)
        except (ValveInputError, json.JSONDecodeError) as exc:
            raise ValveInputError(f"{self._where()}{exc}") from None
        self._task = task
        if self._every:
            # Fresh: the first event sets the first interval; restored: the next boundary.
            effective = task.effective_ms
            self._next_checkpoint = (
                LONG_MIN if effective is None else (effective // self._every + 1) * self._every
            )
        return task

    def feed(self, parts: list[InputPart]) -> list[tuple]:
        """Feed one chunk (its parts of every input merged in ``seq`` order); its output rows."""
        out: list[tuple] = []
        if not parts:
            return out
        task = self._task or self._start(parts)
        calls = []
        seqs: list[int] = []
        tss: list[int] = []
        chs: list[int] = []
        wms: list[int] = []
        codes: list[int] = []
        srcs: list[int] | None = [] if len(parts) > 1 else None
        for pos, part in enumerate(parts):
            input_index = part.input_index
            part_seqs = part.seqs
            try:
                valve = task.valve(input_index, part.num_channels)
            except ValveInputError as exc:
                first = min(part_seqs) if part_seqs else None
                raise ValveInputError(f"{self._where(input_index, first)}{exc}") from None
            calls.append((valve.input_watermark, valve.input_status, input_index, part.bad_status))
            seqs += part_seqs
            tss += part.ts_ms
            chs += part.channels
            wms += part.watermarks
            codes += part.codes
            if srcs is not None:
                srcs += [pos] * len(part_seqs)
        n = len(seqs)
        if not (len(tss) == len(chs) == len(wms) == len(codes) == n):
            raise ValveInputError(f"{self._where()}chunk arrays of different lengths")
        if n == 0:
            return out
        order = sorted(range(n), key=seqs.__getitem__)
        previous = task.last_seq
        if previous is not None and seqs[order[0]] <= previous:
            raise ValveInputError(
                f"{self._where(None, seqs[order[0]])}seq is not after the last fed seq "
                f"{previous}: events must reach a task in seq order"
            )
        combine = task.combine
        # A one-input task's clock mirrors its valve (C1-C5), so its clock rows are not output,
        # and its combiner is brought up to date only where its state is saved (_Mirror).
        mirror = _Mirror(combine, calls[0][2]) if len(task.inputs) == 1 else None
        effective = task.effective_ms if task.effective_ms is not None else LONG_MIN
        first = task.first_ms if task.first_ms is not None else LONG_MAX
        every = self._every
        next_checkpoint = self._next_checkpoint
        fed = self._fed_since_checkpoint
        input_watermark, input_status, input_index, bad_status = calls[0]
        append = out.append
        for j in order:
            seq = seqs[j]
            if seq == previous:
                raise ValveInputError(
                    f"{self._where(None, seq)}seq appears twice (identity must be unique)"
                )
            ts = tss[j]
            if ts > effective:
                if ts >= next_checkpoint:
                    # This event starts a new checkpoint interval of the task's time: save the
                    # state after the events before it (a late event later resumes from here).
                    if fed:
                        task.last_seq, task.first_ms, task.effective_ms = previous, first, effective
                        if mirror is not None:
                            mirror.sync()
                        append(self._state_row("checkpoint", task))
                        fed = False
                    next_checkpoint = (ts // every + 1) * every if every else _NEVER
                effective = ts
            if ts < first:
                first = ts
            previous = seq
            fed = True
            if srcs is not None:
                input_watermark, input_status, input_index, bad_status = calls[srcs[j]]
            code = codes[j]
            try:
                if code == CODE_WATERMARK:
                    emitted = input_watermark(chs[j], wms[j])
                elif code in (CODE_IDLE, CODE_ACTIVE):
                    emitted = input_status(chs[j], _STATUS_OF_CODE[code])
                elif code == CODE_BAD_STATUS:  # the valve refuses it by name
                    input_status(chs[j], "NULL" if bad_status is None else bad_status)
                    raise ValveInputError(f"status {bad_status!r} is not 'IDLE' or 'ACTIVE'")
                elif code == CODE_NO_WATERMARK:
                    emitted = input_watermark(chs[j], None)  # type: ignore[arg-type]
                else:
                    raise ValveInputError(f"unknown event code {code!r}")
            except ValveInputError as exc:
                raise ValveInputError(f"{self._where(input_index, seq)}{exc}") from None
            if emitted:
                for index, (kind, value) in enumerate(emitted):
                    if kind == "watermark":
                        append(("emission", input_index, seq, ts, effective, index, kind, value,
                                None, None, None))  # fmt: skip
                    else:
                        append(("emission", input_index, seq, ts, effective, index, kind, None,
                                value, None, None))  # fmt: skip
                if mirror is not None:
                    mirror.saw(emitted)
                    continue
                clock = combine(input_index, emitted)
                for index, (kind, value) in enumerate(clock):
                    if kind == "watermark":
                        append(("clock", None, seq, ts, effective, index, kind, value, None,
                                None, None))  # fmt: skip
                    else:
                        append(("clock", None, seq, ts, effective, index, kind, None, value,
                                None, None))  # fmt: skip
        if mirror is not None:
            mirror.sync()
        task.last_seq = previous
        task.effective_ms = effective
        task.first_ms = first
        self._next_checkpoint = next_checkpoint
        self._fed_since_checkpoint = fed
        return out


class _Mirror:
    """The combiner of a one-input task, fed only where its state is saved.

    With one input the combiner's state follows from its valve's outputs alone (C1-C5): the
    largest watermark, the status of the last output (a watermark makes the input active, C2)
    and the combined watermark, which is that largest one. :meth:`saw` keeps those; :meth:`sync`
    feeds them to the combiner as two outputs, which leaves it as the whole sequence would
    have. Combining every output instead cost about a sixth of the valve UDTF's Python time.
    """

    __slots__ = ("_combine", "_input_index", "_watermark", "_status")

    def __init__(self, combine: Callable[[int, list[Emission]], list[Emission]], input_index: int):
        self._combine = combine
        self._input_index = input_index
        self._watermark: int | None = None
        self._status: str | None = None

    def saw(self, emitted: list[Emission]) -> None:
        """Outputs of the task's valve, in order."""
        for kind, value in emitted:
            if kind == "watermark":
                if self._watermark is None or value > self._watermark:
                    self._watermark = value
                self._status = None
            else:
                self._status = value

    def sync(self) -> None:
        """Bring the combiner up to date with the outputs seen since the last sync."""
        pending: list[Emission] = []
        if self._watermark is not None:
            pending.append(("watermark", self._watermark))
        if self._status is not None:
            pending.append(("status", self._status))
        if pending:
            self._combine(self._input_index, pending)
        self._watermark = self._status = None
