"""Thin Spark adapters: register tidemark's pure Python cores as Spark UDFs and UDTFs.

SQL models call them by the names registered here. Nothing in ``udfs`` but this module imports
pyspark, and the adapters only marshal: Spark's rows in, the core's plain values out and back.

``tidemark_valve``
------------------
An Arrow Python UDTF around :class:`udfs.task_feed.TaskFeed`, which feeds one task's events in
``seq`` order to :class:`udfs.task_watermarks.TaskWatermarks` (one
:class:`~udfs.valve.StatusWatermarkValve` per input, rules W1-W4 and S1-S3, and the combination of
their outputs into the task's clock, rules C1-C5) and makes the output rows and checkpoints.
Called with a TABLE argument partitioned by task::

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

* one **header** row per task, ``chunk_index = -1``: ``task_inputs``, ``state`` and
  ``resumed_after_seq``, the arguments of :meth:`TaskFeed.header <udfs.task_feed.TaskFeed.header>`;
* **chunk** rows, one per input and range of :data:`CHUNK_SEQS` seqs: ``input_index``,
  ``num_channels``, ``bad_status`` and the events as parallel arrays without NULLs: ``seqs``,
  ``ts_ms``, ``channels``, ``watermarks`` (0 for statuses) and ``codes`` (:data:`CODE_WATERMARK`,
  :data:`CODE_IDLE`, :data:`CODE_ACTIVE`, :data:`CODE_BAD_STATUS`, :data:`CODE_NO_WATERMARK`), the
  fields of one :class:`udfs.task_feed.InputPart`. The rows of one ``chunk_index`` are one call
  of :meth:`TaskFeed.feed <udfs.task_feed.TaskFeed.feed>`, which merges them in ``seq`` order.

Output: each call returns at most one row: the task and parallel arrays, one element per output
row, which ``inline(arrays_zip(...))`` turns into rows with the columns of :data:`OUTPUT_COLUMNS`
(``row_kind`` ``emission``, ``clock``, ``state`` or ``checkpoint``: see :mod:`udfs.task_feed`).

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
    """``tidemark_valve``: marshals one task's header and chunk rows to :class:`TaskFeed`."""

    def __init__(self) -> None:
        self._feed: TaskFeed | None = None
        self._key: TaskKey | None = None
        self._pending: list[InputPart] = []
        self._pending_chunk: int | None = None

    def eval(self, row: Any, semantics: str, checkpoint_every_ms: int = 0):
        feed = self._feed
        if feed is None:
            self._key = (
                str(row.job_id),
                str(row.vertex_id),
                int(row.subtask_index),
                int(row.attempt),
            )
            feed = self._feed = TaskFeed(self._key, str(semantics), int(checkpoint_every_ms or 0))
        chunk = row.chunk_index
        if chunk is None or chunk < 0:  # the header row
            resumed_after = row.resumed_after_seq
            feed.header(
                None if row.task_inputs is None else _ints(row.task_inputs),
                row.state,
                None if resumed_after is None else int(resumed_after),
            )
            return
        out: list[tuple] = []
        if self._pending and chunk != self._pending_chunk:
            out = feed.feed(self._pending)
            self._pending = []
        self._pending.append(
            InputPart(
                int(row.input_index),
                int(row.num_channels),
                row.bad_status,
                _ints(row.seqs),
                _ints(row.ts_ms),
                _ints(row.channels),
                _ints(row.watermarks),
                _ints(row.codes),
            )
        )
        self._pending_chunk = int(chunk)
        if out:
            yield self._output(out)

    def terminate(self):
        feed = self._feed
        if feed is None:
            return
        out = feed.feed(self._pending)
        self._pending = []
        out += feed.finish()
        yield self._output(out)

    def _output(self, rows: list[tuple]) -> tuple:
        """One UDTF row: the task, then each output column as a list (see the module doc)."""
        return (*self._key, *(list(column) for column in zip(*rows, strict=True)))  # type: ignore[misc]


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
