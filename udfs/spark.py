"""Thin Spark adapters: register tidemark's pure Python cores as Spark UDFs and UDTFs.

SQL models call them by the names registered here. Nothing in ``udfs`` but this module imports
pyspark, and the adapters only marshal: Spark's Arrow record batches in, the core's plain values
out and back.

``tidemark_valve``
------------------
A PyArrow UDTF (``arrow_udtf``, PySpark 4.1 and later) around :class:`udfs.task_feed.TaskFeed`,
which feeds one task's events in ``seq`` order to :class:`udfs.task_watermarks.TaskWatermarks`
(one :class:`~udfs.valve.StatusWatermarkValve` per input, rules W1-W4 and S1-S3, and the
combination of their outputs into the task's clock, rules C1-C5) and makes the output rows and
checkpoints. Called with a TABLE argument partitioned by task::

    select * from tidemark_valve(
        TABLE(<header and chunk rows>)
            PARTITION BY (job_id, vertex_id, subtask_index, attempt)
            ORDER BY (chunk_index, input_index),
        'flink-1.13-2.0',   -- valve semantics (udfs.valve.ValveSemantics)
        10000               -- optional: a checkpoint every 10 s of the task's time (0: none)
    )

(:func:`valve_call_sql` writes exactly that.) Partitioned by task, not by valve: ``seq`` orders
a task's events across all its inputs (contract section 1), the valves of a multi-input task must
be fed in that one order to combine them, and a late event is late for the task. Each valve still
sees exactly its own input's events in ``seq`` order.

Input rows (:func:`valve_input_sql` builds them from any relation shaped like
``stg_bronze__watermark_events``; the model ``int_valve_outputs_computed`` builds the same with
saved state) are of two kinds, one schema:

* one **header** row per task, ``chunk_index = -1``: ``task_inputs``, ``state`` and
  ``resumed_after_seq``, the arguments of :meth:`TaskFeed.header <udfs.task_feed.TaskFeed.header>`;
* **chunk** rows, one per input and range of :data:`CHUNK_SEQS` seqs: ``input_index``,
  ``num_channels``, ``bad_status`` and the events as parallel arrays without NULLs: ``seqs``,
  ``ts_ms``, ``channels``, ``watermarks`` (0 for statuses) and ``codes`` (:data:`CODE_WATERMARK`,
  :data:`CODE_IDLE`, :data:`CODE_ACTIVE`, :data:`CODE_BAD_STATUS`, :data:`CODE_NO_WATERMARK`), the
  fields of one :class:`udfs.task_feed.InputPart`. The rows of one ``chunk_index`` are one call
  of :meth:`TaskFeed.feed <udfs.task_feed.TaskFeed.feed>`, which merges them in ``seq`` order.

Output: one row per output of :class:`TaskFeed`, the task's columns (:data:`TASK_COLUMNS`) then
those of :data:`OUTPUT_COLUMNS` (``row_kind`` ``emission``, ``clock``, ``state`` or
``checkpoint``: see :mod:`udfs.task_feed`); :data:`VALVE_OUTPUT_DDL` is the return type.

Bad input (a channel outside the valve, a status other than IDLE/ACTIVE, a watermark event
without its value, a ``num_channels`` that changes) raises :class:`ValueError` naming the task,
the input and the ``seq``; Spark fails the query with that message, so ``dbt build`` fails.

Why this shape (measured on two cores, ``bench/valve.py``; decision 0009):

* **chunks, not a row per event**: with one row per event Spark sorts and hands over every
  event as a row; ``bench/valve.py`` times that shape through the same ``arrow_udtf`` (the bare
  valve over each batch, not even :class:`TaskFeed`): 0.31x the chunked path on PySpark 4.2;
* **Arrow record batches, not rows**: a batch's array column becomes Python lists in one numpy
  call over its values (:func:`_row_lists`), and the output is one record batch per call, built
  column by column. Before PySpark 4.1 the Arrow UDTF went through pandas (a list of numpy
  scalars per array, one pandas DataFrame per call's rows): this path is 1.1x to 1.3x faster;
* **codes, no NULLs in the arrays**: numpy turns an integer array with NULLs into floats, and a
  code the JVM computes costs less than a status string compared in Python.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

from udfs.task_feed import (
    CODE_ACTIVE,
    CODE_BAD_STATUS,
    CODE_IDLE,
    CODE_NO_WATERMARK,
    CODE_WATERMARK,
    OUTPUT_COLUMNS,
    VALVE_FUNCTION,
    InputPart,
    TaskFeed,
    TaskKey,
)
from udfs.valve import ValveSemantics

__all__ = [
    "CHUNK_SEQS",
    "CODE_ACTIVE",
    "CODE_BAD_STATUS",
    "CODE_IDLE",
    "CODE_NO_WATERMARK",
    "CODE_WATERMARK",
    "MACROS",
    "OUTPUT_COLUMNS",
    "TASK_COLUMNS",
    "VALVE_FUNCTION",
    "VALVE_OUTPUT_DDL",
    "ValveUDTF",
    "register_udfs",
    "valve_call_sql",
    "valve_input_sql",
    "valve_output_schema",
]

CHUNK_SEQS = 65_536
"""Events of one input whose ``seq`` falls in one range of this size travel in one chunk row."""

MACROS = Path(__file__).resolve().parents[1] / "macros"
"""The dbt project's macros: the valve's input rows are defined there once (see valve_input_sql)."""


def _render_macro(name: str, *args: object, **kwargs: object) -> str:
    """The SQL of the dbt project's macro ``name`` (a plain Jinja macro, no dbt context needed)."""
    import jinja2

    path = MACROS / f"{name}.sql"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: valve_input_sql needs tidemark's dbt project")
    module = jinja2.Environment().from_string(path.read_text()).module
    return str(getattr(module, name)(*args, **kwargs))


TASK_COLUMNS = (
    ("job_id", "string"),
    ("vertex_id", "string"),
    ("subtask_index", "int"),
    ("attempt", "int"),
)

VALVE_OUTPUT_DDL = ", ".join(f"{name} {kind}" for name, kind in TASK_COLUMNS + OUTPUT_COLUMNS)
"""The return schema of ``tidemark_valve``: the task, then the output columns."""


def _arrow_schema():  # -> pyarrow.Schema
    """:data:`VALVE_OUTPUT_DDL` as the schema of the record batches the UDTF returns."""
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64()}
    return pa.schema([(name, types[kind]) for name, kind in TASK_COLUMNS + OUTPUT_COLUMNS])


def valve_output_schema():  # -> pyspark.sql.types.StructType
    """:data:`VALVE_OUTPUT_DDL` as a StructType (every field nullable), from the Arrow schema."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(_arrow_schema())


def _row_lists(column: Any) -> list[list[int]]:
    """An Arrow list column without NULLs as one list of Python ints per row.

    One numpy conversion of the values the rows hold (``flatten`` honours a sliced batch), then
    a slice per row: converting each element on its own costs several times as much.
    """
    values = column.flatten().to_numpy(zero_copy_only=False).tolist()
    offsets = column.offsets.to_numpy().tolist()
    base = offsets[0]
    return [values[start - base : end - base] for start, end in pairwise(offsets)]


class ValveUDTF:
    """``tidemark_valve``: marshals one task's header and chunk rows to :class:`TaskFeed`.

    Spark calls :meth:`eval` with record batches of one task's rows in order (a new instance per
    task); the chunk rows of one ``chunk_index`` may span two batches, so they are fed when the
    next ``chunk_index`` (or :meth:`terminate`) shows that the chunk is complete.
    """

    def __init__(self) -> None:
        self._feed: TaskFeed | None = None
        self._key: TaskKey | None = None
        self._schema = _arrow_schema()
        self._pending: list[InputPart] = []
        self._pending_chunk: int | None = None

    def eval(self, batch: Any, semantics: Any, checkpoint_every_ms: Any = None):
        feed = self._feed
        if feed is None:
            job_id, vertex_id, subtask_index, attempt = (
                batch.column(name)[0].as_py() for name, _ in TASK_COLUMNS
            )
            self._key = (str(job_id), str(vertex_id), int(subtask_index), int(attempt))
            every = None if checkpoint_every_ms is None else checkpoint_every_ms[0].as_py()
            feed = self._feed = TaskFeed(self._key, str(semantics[0].as_py()), int(every or 0))
        chunks = batch.column("chunk_index").to_pylist()
        first = 0
        if chunks and (chunks[0] is None or chunks[0] < 0):  # the header row, first of its task
            feed.header(
                batch.column("task_inputs")[0].as_py(),
                batch.column("state")[0].as_py(),
                batch.column("resumed_after_seq")[0].as_py(),
            )
            first = 1
        if first == len(chunks):
            return
        rows = batch.slice(first)
        inputs = rows.column("input_index").to_pylist()
        num_channels = rows.column("num_channels").to_pylist()
        bad_status = rows.column("bad_status").to_pylist()
        arrays = [_row_lists(rows.column(name)) for name in InputPart._fields[3:]]
        out: list[tuple] = []
        for i, chunk in enumerate(chunks[first:]):
            if self._pending and chunk != self._pending_chunk:
                out += feed.feed(self._pending)
                self._pending = []
            self._pending.append(
                InputPart(inputs[i], num_channels[i], bad_status[i], *(a[i] for a in arrays))
            )
            self._pending_chunk = chunk
        if out:
            yield self._batch(out)

    def terminate(self):
        feed = self._feed
        if feed is None:
            return
        out = feed.feed(self._pending)
        self._pending = []
        out += feed.finish()
        yield self._batch(out)

    def _batch(self, rows: list[tuple]):  # -> pyarrow.RecordBatch
        """The output rows as one record batch: the task on every row, then the core's columns."""
        import pyarrow as pa

        schema = self._schema
        n = len(rows)
        columns = [pa.array([value] * n, schema.field(i).type) for i, value in enumerate(self._key)]
        offset = len(columns)
        for j, values in enumerate(zip(*rows, strict=True)):
            columns.append(pa.array(values, schema.field(offset + j).type))
        return pa.RecordBatch.from_arrays(columns, schema=schema)


def valve_input_sql(events: str, *, chunk_seqs: int = CHUNK_SEQS) -> str:
    """SQL of ``tidemark_valve``'s input (header and chunk rows) for every task in ``events``.

    ``events`` is a relation with the columns of ``stg_bronze__watermark_events`` (``job_id``,
    ``vertex_id``, ``subtask_index``, ``attempt``, ``input_index``, ``seq``, ``ts_ms``,
    ``event_type``, ``channel_index``, ``num_channels``, ``watermark_ms``, ``status``). Every task
    starts fresh. It renders the dbt macros the model ``int_valve_outputs_computed`` uses
    (``tidemark_valve_input_rows``, ``tidemark_valve_input_code``), so tests and
    ``bench/valve.py`` feed the UDTF exactly what the models feed it.
    """
    tasks = f"""(
        select
            job_id, vertex_id, subtask_index, attempt,
            sort_array(collect_set(input_index)) as task_inputs,
            cast(null as string) as state,
            cast(-1 as bigint) as resumed_after_seq
        from {events}
        group by job_id, vertex_id, subtask_index, attempt
    ) as valve_tasks"""
    coded = f"""(
        select *, {_render_macro("tidemark_valve_input_code")} as input_code from {events}
    ) as coded_events"""
    return _render_macro("tidemark_valve_input_rows", tasks, coded, chunk_seqs=int(chunk_seqs))


def valve_call_sql(
    input_sql: str,
    semantics: str = ValveSemantics.FLINK_1_13_TO_2_0.value,
    checkpoint_every_ms: int = 0,
) -> str:
    """``tidemark_valve`` over ``input_sql``, one row per output (the task, then OUTPUT_COLUMNS)."""
    quoted = semantics.replace("'", "''")
    return f"""
        select *
        from {VALVE_FUNCTION}(
            TABLE({input_sql})
                PARTITION BY (job_id, vertex_id, subtask_index, attempt)
                ORDER BY (chunk_index, input_index),
            '{quoted}',
            {int(checkpoint_every_ms)}
        )
    """


def register_udfs(spark) -> list[str]:
    """Register every tidemark function on ``spark``; returns their SQL names."""
    from pyspark.sql.functions import arrow_udtf

    spark.udtf.register(VALVE_FUNCTION, arrow_udtf(ValveUDTF, returnType=VALVE_OUTPUT_DDL))
    return [VALVE_FUNCTION]
