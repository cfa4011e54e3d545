"""The ``tidemark_valve`` UDTF on the suite's Spark session, checked against the pure core.

Random event streams (the edge-case-biased generator of ``tests/unit/test_valve.py``) for several
tasks, one- and two-input, go through Spark in shuffled order and small chunks; the UDTF's rows
must equal feeding the same events to ``udfs.task_watermarks.TaskWatermarks`` in a plain loop.
"""

from __future__ import annotations

import json
import random

import pytest

from tests.unit.test_valve import interleave, random_stream
from udfs.spark import (
    OUTPUT_COLUMNS,
    TASK_COLUMNS,
    VALVE_OUTPUT_DDL,
    valve_call_sql,
    valve_input_sql,
    valve_output_schema,
)
from udfs.task_watermarks import TaskWatermarks
from udfs.valve import LONG_MAX, LONG_MIN, ValveSemantics

pytestmark = pytest.mark.spark

EVENTS_DDL = (
    "job_id string, vertex_id string, subtask_index int, attempt int, seq bigint, ts_ms bigint, "
    "event_type string, input_index int, channel_index int, num_channels int, "
    "watermark_ms bigint, status string"
)


def random_events(seed: int, tasks: int = 5, steps: int = 600) -> list[tuple]:
    """Events of ``tasks`` tasks; task 1 has two inputs, the others one (sizes vary)."""
    rng = random.Random(seed)
    events = []
    for t in range(tasks):
        inputs = [0, 1] if t == 1 else [0]
        sizes = {i: rng.choice([1, 2, 3, 5, 40]) for i in inputs}
        streams = {i: random_stream(rng, sizes[i], steps) for i in inputs}
        first_seq = rng.randrange(0, 5)
        for seq, ts, i, (is_status, channel, value) in interleave(
            rng, streams, first_seq, 1_700_000_000_000, [1, 1, 1, 2, 7], [0, 3, 50, -20]
        ):
            events.append(
                (
                    "job",
                    f"v{t % 3}",
                    t,
                    t % 2,
                    seq,
                    ts,
                    "watermark_status" if is_status else "watermark",
                    i,
                    channel,
                    sizes[i],
                    None if is_status else value,
                    value if is_status else None,
                )
            )
    rng.shuffle(events)  # arrival order is not processing order
    return events


def expected_rows(events: list[tuple], semantics: str) -> tuple[list[tuple], dict]:
    """What the UDTF must output, from the core in a plain loop: (rows, final state per task)."""
    by_task: dict[tuple, list[tuple]] = {}
    for e in events:
        by_task.setdefault(e[:4], []).append(e)
    rows: list[tuple] = []
    states = {}
    for key, task_events in by_task.items():
        task_events.sort(key=lambda e: e[4])
        task = TaskWatermarks(sorted({e[7] for e in task_events}), semantics)
        effective = LONG_MIN
        for e in task_events:
            seq, ts, kind, i, channel, n, w, s = e[4:]
            effective = max(effective, ts)
            task.first_ms = ts if task.first_ms is None else min(task.first_ms, ts)
            valve = task.valve(i, n)
            out = valve.input_status(channel, s) if s else valve.input_watermark(channel, w)
            for k, (what, v) in enumerate(out):
                wv, sv = (v, None) if what == "watermark" else (None, v)
                rows.append((*key, "emission", i, seq, ts, effective, k, what, wv, sv))
            clock = task.combine(i, out)
            if len(task.inputs) > 1:
                for k, (what, v) in enumerate(clock):
                    wv, sv = (v, None) if what == "watermark" else (None, v)
                    rows.append((*key, "clock", None, seq, ts, effective, k, what, wv, sv))
        task.last_seq = task_events[-1][4]
        task.effective_ms = effective
        states[key] = task.to_state()
    return rows, states


def run_udtf(
    spark, events: list[tuple], semantics: str, chunk_seqs: int, view: str, every_ms: int = 0
) -> list:
    spark.createDataFrame(events, EVENTS_DDL).createOrReplaceTempView(view)
    query = valve_call_sql(valve_input_sql(view, chunk_seqs=chunk_seqs), semantics, every_ms)
    return spark.sql(query).collect()


def split(rows: list) -> tuple[list[tuple], dict]:
    out, states = [], {}
    for r in rows:
        if r.row_kind == "state":
            states[(r.job_id, r.vertex_id, r.subtask_index, r.attempt)] = r
        elif r.row_kind != "checkpoint":
            out.append(tuple(r)[:13])
    return out, states


def order(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=lambda r: (r[:4], r[6], r[4], r[5] if r[5] is not None else -1, r[9]))


@pytest.mark.parametrize("semantics", [s.value for s in ValveSemantics])
def test_udtf_equals_core_on_random_streams(spark, semantics: str) -> None:
    """W1-W4, S1-S3 through Spark: every emission, clock row and final state as the core's."""
    for seed in (1, 2):
        events = random_events(seed)
        got, states = split(run_udtf(spark, events, semantics, 64, "valve_events"))
        want, want_states = expected_rows(events, semantics)
        assert order(got) == order(want), f"seed {seed}"
        assert set(states) == set(want_states)
        for key, row in states.items():
            assert json.loads(row.state) == want_states[key]
            assert row.seq == want_states[key]["last_seq"]
            assert row.ts_ms == want_states[key]["first_ms"]
            assert row.effective_ms == want_states[key]["effective_ms"]
            assert row.resumed_after_seq == -1


def test_udtf_chunk_size_does_not_matter(spark) -> None:
    events = random_events(3, tasks=3)
    small, _ = split(run_udtf(spark, events, "flink-1.13-2.0", 7, "valve_events"))
    large, _ = split(run_udtf(spark, events, "flink-1.13-2.0", 1 << 20, "valve_events"))
    assert order(small) == order(large)


def test_udtf_resumes_from_saved_state(spark) -> None:
    """Feeding the events after a cut to the state saved at the cut gives the same rows."""
    events = random_events(4, tasks=3)
    cut = {
        key: sorted(e[4] for e in events if e[:4] == key)[300] for key in {e[:4] for e in events}
    }
    head = [e for e in events if e[4] <= cut[e[:4]]]
    tail = [e for e in events if e[4] > cut[e[:4]]]
    semantics = "flink-1.13-2.0"
    first, first_states = split(run_udtf(spark, head, semantics, 50, "valve_head"))
    spark.createDataFrame(tail, EVENTS_DDL).createOrReplaceTempView("valve_tail")
    headers = []
    for key, row in first_states.items():
        state = row.state.replace("'", "''")
        headers.append(
            f"select '{key[0]}' as job_id, '{key[1]}' as vertex_id, {key[2]} as subtask_index, "
            f"{key[3]} as attempt, '{state}' as state, {row.seq} as resumed_after_seq"
        )
    spark.sql(" union all ".join(headers)).createOrReplaceTempView("valve_saved")
    resumed_input = f"""
        select job_id, vertex_id, subtask_index, attempt, -1L as chunk_index,
               cast(null as array<int>) as task_inputs, state, resumed_after_seq,
               cast(null as int) as input_index, cast(null as int) as num_channels,
               cast(null as string) as bad_status,
               cast(null as array<bigint>) as seqs, cast(null as array<bigint>) as ts_ms,
               cast(null as array<int>) as channels, cast(null as array<bigint>) as watermarks,
               cast(null as array<int>) as codes
        from valve_saved
        union all
        select * from ({valve_input_sql("valve_tail", chunk_seqs=50)}) where chunk_index >= 0
    """
    second, second_states = split(spark.sql(valve_call_sql(resumed_input, semantics)).collect())
    whole, whole_states = split(run_udtf(spark, events, semantics, 50, "valve_events"))
    assert order(first + second) == order(whole)
    for key, row in second_states.items():
        assert row.resumed_after_seq == cut[key]
        assert json.loads(row.state) == json.loads(whole_states[key].state)


def test_udtf_checkpoints_resume_to_the_same_end_state(spark) -> None:
    """Each checkpoint (one per 1000 ms of a task's time) holds the state after the events up to
    its seq: restored and fed the rest, it reaches the task's final state, with the same rows."""
    events = random_events(7, tasks=2)
    semantics = "flink-1.13-2.0"
    rows = run_udtf(spark, events, semantics, 40, "valve_events", every_ms=1000)
    got, states = split(rows)
    want, want_states = expected_rows(events, semantics)
    assert order(got) == order(want)
    checkpoints = [r for r in rows if r.row_kind == "checkpoint"]
    assert len(checkpoints) >= 4
    for cp in checkpoints:
        key = (cp.job_id, cp.vertex_id, cp.subtask_index, cp.attempt)
        task = TaskWatermarks.from_state(json.loads(cp.state))
        assert task.last_seq == cp.seq
        assert (cp.ts_ms, cp.effective_ms) == (task.first_ms, task.effective_ms)
        later = sorted((e for e in events if e[:4] == key and e[4] > cp.seq), key=lambda e: e[4])
        assert later, "a checkpoint is only made before a further event"
        assert later[0][5] >= (cp.effective_ms // 1000 + 1) * 1000  # it crossed the interval
        tail = []
        for e in later:
            seq, ts, _, i, channel, n, w, st = e[4:]
            valve = task.valve(i, n)
            out = valve.input_status(channel, st) if st else valve.input_watermark(channel, w)
            tail += [(seq, k, what, v) for k, (what, v) in enumerate(out)]
            task.combine(i, out)
        task.last_seq = later[-1][4]
        task.first_ms = min(task.first_ms, *(e[5] for e in later))
        task.effective_ms = max(task.effective_ms, *(e[5] for e in later))
        assert task.to_state() == want_states[key]
        assert tail == [
            (r[6], r[9], r[10], r[11] if r[10] == "watermark" else r[12])
            for r in order(want)
            if r[:4] == key and r[4] == "emission" and r[6] > cp.seq
        ]


def test_udtf_keeps_64_bit_watermarks_exact(spark) -> None:
    """E3: extremes and values above 2**53 survive the trip through Spark unchanged."""
    big = 2**62 + 1
    events = [
        ("j", "v", 0, 0, 1, 5, "watermark", 0, 0, 1, LONG_MIN, None),
        ("j", "v", 0, 0, 2, 6, "watermark", 0, 0, 1, -(2**60), None),
        ("j", "v", 0, 0, 3, 7, "watermark", 0, 0, 1, big, None),
        ("j", "v", 0, 0, 4, 8, "watermark", 0, 0, 1, LONG_MAX, None),
    ]
    got, _ = split(run_udtf(spark, events, "flink-1.13-2.0", 64, "valve_events"))
    assert [r[11] for r in order(got)] == [-(2**60), big, LONG_MAX]


def test_udtf_return_schema_is_explicit(spark) -> None:
    """The UDTF returns one row per output: the task, then the output columns."""
    events = random_events(5, tasks=1, steps=20)
    spark.createDataFrame(events, EVENTS_DDL).createOrReplaceTempView("valve_events")
    raw = spark.sql(
        f"""select * from tidemark_valve(
            TABLE({valve_input_sql("valve_events")})
                PARTITION BY (job_id, vertex_id, subtask_index, attempt)
                ORDER BY (chunk_index, input_index),
            'flink-1.13-2.0')"""
    )
    assert raw.schema == valve_output_schema()
    ddl = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in raw.schema)
    assert ddl == VALVE_OUTPUT_DDL
    rows = spark.sql(valve_call_sql(valve_input_sql("valve_events")))
    assert [(f.name, f.dataType.simpleString()) for f in rows.schema] == [
        *TASK_COLUMNS,
        *OUTPUT_COLUMNS,
    ]


BAD = [
    (
        ("job", "map", 3, 1, 41, 5, "watermark", 0, 2, 2, 100, None),
        "channel 2 is outside [0, 2)",
    ),
    (
        ("job", "map", 3, 1, 41, 5, "watermark_status", 0, 0, 2, None, "PAUSED"),
        "status 'PAUSED' is not 'IDLE' or 'ACTIVE'",
    ),
    (
        ("job", "map", 3, 1, 41, 5, "watermark_status", 0, 0, 2, None, None),
        "status 'NULL' is not 'IDLE' or 'ACTIVE'",
    ),
    (
        ("job", "map", 3, 1, 41, 5, "watermark", 0, 0, 2, None, None),
        "watermark None is not an integer",
    ),
    (
        # Ingest refuses it; were one to reach the valve, it must not shift the chunk's arrays.
        ("job", "map", 3, 1, 41, 5, "watermark", 0, None, 2, 100, None),
        "channel -1 is outside [0, 2)",
    ),
]


@pytest.mark.parametrize(
    ("bad", "reason"), BAD, ids=["channel", "status", "no-status", "no-wm", "no-channel"]
)
def test_udtf_bad_input_fails_naming_task_and_seq(spark, bad: tuple, reason: str) -> None:
    good = [
        ("job", "map", 3, 1, 40, 4, "watermark", 0, 0, 2, 10, None),
        ("job", "map", 3, 1, 42, 6, "watermark", 0, 1, 2, 10, None),
    ]
    spark.createDataFrame([*good, bad], EVENTS_DDL).createOrReplaceTempView("valve_bad")
    with pytest.raises(Exception) as failure:
        spark.sql(valve_call_sql(valve_input_sql("valve_bad"))).collect()
    text = str(failure.value)
    where = (
        "tidemark_valve: task job_id='job' vertex_id='map' subtask_index=3 attempt=1 "
        "input_index=0 seq=41: "
    )
    assert where + reason in text, text[:3000]


def test_udtf_unknown_semantics_fails(spark) -> None:
    events = random_events(6, tasks=1, steps=5)
    spark.createDataFrame(events, EVENTS_DDL).createOrReplaceTempView("valve_events")
    with pytest.raises(Exception, match="unknown valve semantics 'flink-1.12'"):
        spark.sql(valve_call_sql(valve_input_sql("valve_events"), "flink-1.12")).collect()
