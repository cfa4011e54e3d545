"""Thin Spark adapters: register tidemark's pure Python cores as Spark UDFs and UDTFs.

SQL models call them by the names registered here. Nothing in ``udfs`` but this module imports
pyspark.

``tidemark_valve``
------------------
An Arrow Python UDTF around :class:`udfs.task_watermarks.TaskWatermarks` (one task's
:class:`~udfs.valve.StatusWatermarkValve` per input, and the combination of their outputs into
the task's clock, rules C1-C5). Called with a TABLE argument partitioned by task::

    select v.job_id, v.vertex_id, v.subtask_index, v.attempt, o.*
    from tidemark_valve(
        TABLE(<header and chunk rows>)
            PARTITION BY (job_id, vertex_id, subtask_index, attempt)
            ORDER BY (chunk_index, input_index),
        'flink-1.13-2.0',   -- valve semantics (udfs.valve.ValveSemantics)
        10000               -- optional: a checkpoint every 10 s of the task's time (0: none)
    ) as v
    lateral view inline(arrays_zip(v.row_kind, v.input_index, ...)) o as row_kind, ...

(:func:`valve_call_sql` writes exactly that.) Partitioned by task, not by valve: ``seq`` orders
a task's events across all its inputs (contract section 1), the valves of a multi-input task must
be fed in that one order to combine them, and a late event is late for the task. Each valve still
sees exactly its own input's events in ``seq`` order.

Input rows (:func:`valve_input_sql` builds them from any relation shaped like
``stg_bronze__watermark_events``; the model ``int_valve_outputs_computed`` builds the same with
saved state) are of two kinds, one schema:

* one **header** row per task, ``chunk_index = -1``: ``task_inputs`` (every ``input_index`` the
  task ever uses: the combiner needs them all from the start), ``state`` (JSON from
  ``TaskWatermarks.to_state`` to resume from, or NULL to start fresh) and ``resumed_after_seq``
  (the last ``seq`` that state covers, -1 when fresh), echoed on the output's state rows;
* **chunk** rows, one per input and range of :data:`CHUNK_SEQS` seqs: ``input_index``,
  ``num_channels``, ``bad_status`` (the first status of the chunk that is not IDLE/ACTIVE, for the
  error message) and the events as parallel arrays without NULLs: ``seqs``, ``ts_ms``,
  ``channels``, ``watermarks`` (0 for statuses) and ``codes`` (:data:`CODE_WATERMARK`,
  :data:`CODE_IDLE`, :data:`CODE_ACTIVE`, :data:`CODE_BAD_STATUS`, :data:`CODE_NO_WATERMARK`),
  in any order: the UDTF sorts a chunk's events of all inputs by ``seq``.

Output: each call returns at most one row: the task and parallel arrays, one element per output
row, which ``inline(arrays_zip(...))`` turns into rows with the columns of :data:`OUTPUT_COLUMNS`,
tagged by ``row_kind``:

* ``emission``: one output of the valve of ``input_index`` (contract section 4,
  ``fct_valve_emissions``): ``seq`` and ``ts_ms`` of the input event that caused it,
  ``emission_index`` 0, 1, ... within that event, ``kind`` and ``watermark_ms`` or ``status``;
* ``clock``: one output of the task's clock (``input_index`` NULL), same columns; only for tasks
  with two or more inputs: a one-input task's clock is exactly its valve's output (C1-C5);
* ``state``: one per task, last: ``seq`` the last fed event, ``ts_ms`` the smallest ``ts_ms``
  fed so far (where the task's timeline starts), ``effective_ms`` the largest, ``state`` the JSON
  to resume from, ``resumed_after_seq`` as given in the header;
* ``checkpoint``: the same, saved along the way whenever ``effective_ms`` enters a new interval of
  ``checkpoint_every_ms`` (the state after the events before the one that crossed), so that a
  late event can later resume the task from a point shortly before it.

``effective_ms`` on every row is the largest ``ts_ms`` of the task's events fed so far: the time
axis of the task's watermark timeline, monotonic even where the task's clock steps back.

Bad input (a channel outside the valve, a status other than IDLE/ACTIVE, a watermark event
without its value, a ``num_channels`` that changes) raises :class:`ValueError` naming the task,
the input and the ``seq``; Spark fails the query with that message, so ``dbt build`` fails.

Why this shape (measured on two cores, ``bench/valve.py``):

* **chunks, not a row per event**: Spark 4.0 runs a row-at-a-time Python UDTF at a few tens of
  thousands of events/s (each row is pickled alone and wrapped in a ``Row`` twice for the
  partition check); arrays move tens of thousands of events per call;
* **Arrow** (``useArrow=True``): the arrays reach Python about twice as fast as pickled. Spark
  4.0's Arrow UDTF goes through pandas, though: an array arrives as a list of numpy scalars
  (converted back here in one numpy call), a nullable bigint becomes float64 (exact only up to
  2**53), and each call's rows become one pandas DataFrame. Hence no NULLs in the input arrays
  (codes instead of status strings, 0 for a status's watermark) and one output row of lists per
  call: lists of Python ints, NULLs included, convert to Arrow exactly.
"""

from __future__ import annotations

import json
from typing import Any

from udfs.task_watermarks import TaskWatermarks
from udfs.valve import LONG_MAX, LONG_MIN, ValveInputError, ValveSemantics

VALVE_FUNCTION = "tidemark_valve"
CHUNK_SEQS = 65_536
"""Events of one input whose ``seq`` falls in one range of this size travel in one chunk row."""

CODE_WATERMARK = -1
CODE_IDLE = 0
CODE_ACTIVE = 1
CODE_BAD_STATUS = 2
"""A ``watermark_status`` event whose status is not IDLE or ACTIVE (or missing)."""
CODE_NO_WATERMARK = 3
"""A ``watermark`` event without ``watermark_ms``."""
_STATUS_OF_CODE = ("IDLE", "ACTIVE")

INPUT_CODE_SQL = """case
            when event_type = 'watermark' and watermark_ms is not null then -1
            when event_type = 'watermark' then 3
            when status = 'IDLE' then 0
            when status = 'ACTIVE' then 1
            else 2
        end"""
"""SQL of an event's code, over the columns of ``stg_bronze__watermark_events``."""

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
"""The columns of one output row, after ``inline(arrays_zip(...))`` (besides the task)."""

TASK_COLUMNS = (
    ("job_id", "string"),
    ("vertex_id", "string"),
    ("subtask_index", "int"),
    ("attempt", "int"),
)

VALVE_OUTPUT_DDL = ", ".join(
    [f"{name} {kind}" for name, kind in TASK_COLUMNS]
    + [f"{name} array<{kind}>" for name, kind in OUTPUT_COLUMNS]
)
"""The return schema of ``tidemark_valve``: the task, then one array per output column."""


def valve_output_schema():  # -> pyspark.sql.types.StructType
    """:data:`VALVE_OUTPUT_DDL` as a StructType (every field and element nullable)."""
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    types = {"string": StringType(), "int": IntegerType(), "bigint": LongType()}
    fields = [StructField(name, types[kind], True) for name, kind in TASK_COLUMNS]
    fields += [
        StructField(name, ArrayType(types[kind], containsNull=True), True)
        for name, kind in OUTPUT_COLUMNS
    ]
    return StructType(fields)


def _ints(values: Any) -> list[int]:
    """``values`` as a list of Python ints (Arrow hands arrays over as lists of numpy scalars)."""
    if type(values) is list and (not values or type(values[0]) is int):
        return values
    import numpy as np

    return np.asarray(values, dtype=np.int64).tolist()


class ValveUDTF:
    """``tidemark_valve``: feeds one task's valve input events, chunk by chunk, to the core."""

    def __init__(self) -> None:
        self._task: TaskWatermarks | None = None
        self._key: tuple[str, str, int, int] | None = None
        self._inputs: list[int] = []
        self._state: str | None = None
        self._resumed_after: int = -1
        self._semantics: str | None = None
        self._every: int = 0
        self._next_checkpoint: int = _NEVER
        self._fed_since_checkpoint = False
        self._pending: list[Any] = []
        self._pending_chunk: int | None = None

    def eval(self, row: Any, semantics: str, checkpoint_every_ms: int = 0):
        if self._key is None:
            self._key = (
                str(row.job_id),
                str(row.vertex_id),
                int(row.subtask_index),
                int(row.attempt),
            )
            self._semantics = str(semantics)
            self._every = max(int(checkpoint_every_ms or 0), 0)
        chunk = row.chunk_index
        if chunk is None or chunk < 0:  # the header row
            if row.task_inputs is not None:
                self._inputs = _ints(row.task_inputs)
            self._state = row.state
            if row.resumed_after_seq is not None:
                self._resumed_after = int(row.resumed_after_seq)
            return
        out: list[tuple] = []
        if self._pending and chunk != self._pending_chunk:
            self._flush(out)
        self._pending.append(row)
        self._pending_chunk = int(chunk)
        if out:
            yield self._output(out)

    def terminate(self):
        if self._key is None:
            return
        out: list[tuple] = []
        self._flush(out)
        task = self._task or self._start()
        out.append(self._state_row("state", task))
        yield self._output(out)

    # ------------------------------------------------------------------ internals

    def _output(self, rows: list[tuple]) -> tuple:
        """One UDTF row: the task, then each output column as a list (see the module doc)."""
        return (*self._key, *(list(column) for column in zip(*rows, strict=True)))  # type: ignore[misc]

    def _state_row(self, kind: str, task: TaskWatermarks) -> tuple:
        state = json.dumps(task.to_state(), separators=(",", ":"))
        return (kind, None, task.last_seq, task.first_ms, task.effective_ms, None, None, None,
                None, self._resumed_after, state)  # fmt: skip

    def _where(self, input_index: int | None = None, seq: int | None = None) -> str:
        job_id, vertex_id, subtask_index, attempt = self._key  # type: ignore[misc]
        where = (
            f"{VALVE_FUNCTION}: task job_id={job_id!r} vertex_id={vertex_id!r} "
            f"subtask_index={subtask_index} attempt={attempt}"
        )
        if input_index is not None:
            where += f" input_index={input_index}"
        if seq is not None:
            where += f" seq={seq}"
        return where + ": "

    def _start(self) -> TaskWatermarks:
        """The task: restored from the header's state, or fresh with the header's inputs."""
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
                inputs = self._inputs or sorted({int(r.input_index) for r in self._pending})
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

    def _flush(self, out: list[tuple]) -> None:
        """Feed the pending chunk (its rows of every input merged in ``seq`` order) into ``out``."""
        rows = self._pending
        if not rows:
            return
        self._pending = []
        task = self._task or self._start()
        calls = []
        seqs: list[int] = []
        tss: list[int] = []
        chs: list[int] = []
        wms: list[int] = []
        codes: list[int] = []
        srcs: list[int] | None = [] if len(rows) > 1 else None
        for pos, row in enumerate(rows):
            input_index = int(row.input_index)
            row_seqs = _ints(row.seqs)
            try:
                valve = task.valve(input_index, int(row.num_channels))
            except ValveInputError as exc:
                first = min(row_seqs) if row_seqs else None
                raise ValveInputError(f"{self._where(input_index, first)}{exc}") from None
            calls.append((valve.input_watermark, valve.input_status, input_index, row.bad_status))
            seqs += row_seqs
            tss += _ints(row.ts_ms)
            chs += _ints(row.channels)
            wms += _ints(row.watermarks)
            codes += _ints(row.codes)
            if srcs is not None:
                srcs += [pos] * len(row_seqs)
        n = len(seqs)
        if not (len(tss) == len(chs) == len(wms) == len(codes) == n):
            raise ValveInputError(f"{self._where()}chunk arrays of different lengths")
        if n == 0:
            return
        order = sorted(range(n), key=seqs.__getitem__)
        previous = task.last_seq
        if previous is not None and seqs[order[0]] <= previous:
            raise ValveInputError(
                f"{self._where(None, seqs[order[0]])}seq is not after the last fed seq "
                f"{previous}: events must reach a task in seq order"
            )
        combine = task.combine
        # A one-input task's clock mirrors its valve (C1-C5), so its clock rows are not output.
        mirror = len(task.inputs) == 1
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
                clock = combine(input_index, emitted)
                if mirror:
                    continue
                for index, (kind, value) in enumerate(clock):
                    if kind == "watermark":
                        append(("clock", None, seq, ts, effective, index, kind, value, None,
                                None, None))  # fmt: skip
                    else:
                        append(("clock", None, seq, ts, effective, index, kind, None, value,
                                None, None))  # fmt: skip
        task.last_seq = previous
        task.effective_ms = effective
        task.first_ms = first
        self._next_checkpoint = next_checkpoint
        self._fed_since_checkpoint = fed


def valve_input_sql(events: str, *, chunk_seqs: int = CHUNK_SEQS) -> str:
    """SQL of ``tidemark_valve``'s input (header and chunk rows) for every task in ``events``.

    ``events`` is a relation with the columns of ``stg_bronze__watermark_events`` (``job_id``,
    ``vertex_id``, ``subtask_index``, ``attempt``, ``input_index``, ``seq``, ``ts_ms``,
    ``event_type``, ``channel_index``, ``num_channels``, ``watermark_ms``, ``status``). Every task
    starts fresh. The dbt model ``int_valve_outputs_computed`` builds the same shape, with saved
    state and only the events each task still needs; tests and ``bench/valve.py`` use this.
    """
    return f"""
        select
            job_id, vertex_id, subtask_index, attempt,
            cast(-1 as bigint) as chunk_index,
            sort_array(collect_set(input_index)) as task_inputs,
            cast(null as string) as state,
            cast(-1 as bigint) as resumed_after_seq,
            cast(null as int) as input_index,
            cast(null as int) as num_channels,
            cast(null as string) as bad_status,
            cast(null as array<bigint>) as seqs,
            cast(null as array<bigint>) as ts_ms,
            cast(null as array<int>) as channels,
            cast(null as array<bigint>) as watermarks,
            cast(null as array<int>) as codes
        from {events}
        group by job_id, vertex_id, subtask_index, attempt
        union all
        select
            job_id, vertex_id, subtask_index, attempt, chunk_index,
            null, null, null,
            input_index, num_channels, bad_status,
            transform(events, e -> e.seq),
            transform(events, e -> e.ts_ms),
            transform(events, e -> e.channel_index),
            transform(events, e -> e.watermark_ms),
            transform(events, e -> e.code)
        from (
            select
                job_id, vertex_id, subtask_index, attempt, input_index, num_channels,
                seq div {int(chunk_seqs)} as chunk_index,
                min_by(status, seq) filter (where {INPUT_CODE_SQL} = {CODE_BAD_STATUS})
                    as bad_status,
                collect_list(struct(
                    seq, ts_ms, channel_index, coalesce(watermark_ms, 0) as watermark_ms,
                    {INPUT_CODE_SQL} as code
                )) as events
            from {events}
            group by job_id, vertex_id, subtask_index, attempt, input_index, num_channels,
                seq div {int(chunk_seqs)}
        )
    """


def valve_call_sql(
    input_sql: str,
    semantics: str = ValveSemantics.FLINK_1_13_TO_2_0.value,
    checkpoint_every_ms: int = 0,
) -> str:
    """``tidemark_valve`` over ``input_sql``, one row per output (the task, then OUTPUT_COLUMNS)."""
    quoted = semantics.replace("'", "''")
    names = [name for name, _ in OUTPUT_COLUMNS]
    return f"""
        select
            valve.job_id, valve.vertex_id, valve.subtask_index, valve.attempt,
            {", ".join(f"output.{name}" for name in names)}
        from {VALVE_FUNCTION}(
            TABLE({input_sql})
                PARTITION BY (job_id, vertex_id, subtask_index, attempt)
                ORDER BY (chunk_index, input_index),
            '{quoted}',
            {int(checkpoint_every_ms)}
        ) as valve
        lateral view inline(arrays_zip({", ".join(f"valve.{name}" for name in names)}))
            output as {", ".join(names)}
    """


def register_udfs(spark) -> list[str]:
    """Register every tidemark function on ``spark``; returns their SQL names."""
    from pyspark.sql.functions import udtf

    spark.udtf.register(
        VALVE_FUNCTION, udtf(ValveUDTF, returnType=valve_output_schema(), useArrow=True)
    )
    return [VALVE_FUNCTION]
