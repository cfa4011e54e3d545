"""Unit tests for ``udfs.task_feed``: one task's chunks fed in ``seq`` order, the UDTF's rows.

The pure-logic half of ``tests/spark/test_valve_udtf.py``, in milliseconds: the merge of a chunk's
inputs in ``seq`` order (contract section 1), the valves (W1-W4, S1-S3) and their combination into
the task's clock (C1-C5), checkpoints, resuming from a saved state and the error messages.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_valve import interleave, random_stream
from udfs.task_feed import (
    CODE_ACTIVE,
    CODE_BAD_STATUS,
    CODE_IDLE,
    CODE_NO_WATERMARK,
    CODE_WATERMARK,
    OUTPUT_COLUMNS,
    InputPart,
    TaskFeed,
)
from udfs.task_watermarks import TaskWatermarks
from udfs.valve import LONG_MIN, ValveInputError, ValveSemantics

REPO_ROOT = Path(__file__).resolve().parents[2]
KEY = ("job", "map", 3, 1)
WHERE = "tidemark_valve: task job_id='job' vertex_id='map' subtask_index=3 attempt=1"
FIELDS = [name for name, _ in OUTPUT_COLUMNS]
CODES = {"IDLE": CODE_IDLE, "ACTIVE": CODE_ACTIVE}


def part(
    input_index: int, events: list[tuple], num_channels: int = 2, bad_status: str | None = None
) -> InputPart:
    """``events`` as ``(seq, ts_ms, channel, watermark | "IDLE" | "ACTIVE" | code)``."""
    seqs, tss, chs, wms, codes = [], [], [], [], []
    for seq, ts, channel, value in events:
        seqs.append(seq)
        tss.append(ts)
        chs.append(channel)
        if isinstance(value, str):
            wms.append(0)
            codes.append(CODES.get(value, CODE_BAD_STATUS))
        elif isinstance(value, tuple):  # ("code", code): any code, watermark 0
            wms.append(0)
            codes.append(value[1])
        else:
            wms.append(value)
            codes.append(CODE_WATERMARK)
    return InputPart(input_index, num_channels, bad_status, seqs, tss, chs, wms, codes)


def rows_of(rows: list[tuple], *kinds: str) -> list[dict]:
    return [dict(zip(FIELDS, r, strict=True)) for r in rows if r[0] in kinds]


def short(rows: list[tuple], *kinds: str) -> list[tuple]:
    """(row_kind, input_index, seq, emission_index, watermark_ms or status) per row."""
    return [
        (r["row_kind"], r["input_index"], r["seq"], r["emission_index"],
         r["watermark_ms"] if r["kind"] == "watermark" else r["status"])
        for r in rows_of(rows, *kinds)
    ]  # fmt: skip


def feed_all(
    chunks: list[list[InputPart]],
    inputs: list[int] | None = None,
    every: int = 0,
    semantics: str = "flink-1.13-2.0",
    state: str | None = None,
    resumed_after: int = -1,
) -> list[tuple]:
    feed = TaskFeed(KEY, semantics, every)
    feed.header(inputs, state, resumed_after)
    out: list[tuple] = []
    for chunk in chunks:
        out += feed.feed(chunk)
    return out + feed.finish()


# ------------------------------------------------------------------------- seq order, clock


def test_chunk_inputs_are_merged_in_seq_order() -> None:
    """Contract section 1: a chunk's events of all inputs are fed in seq order, whatever the
    order of the parts and of the events within them; C1: the clock waits for both inputs."""
    chunk = [
        part(1, [(6, 60, 0, 7), (2, 20, 0, 5)], num_channels=1),
        part(0, [(4, 40, 0, 9), (1, 10, 0, 3), (5, 50, 0, "IDLE")], num_channels=1),
    ]
    out = feed_all([chunk], [0, 1])
    assert short(out, "emission", "clock") == [
        ("emission", 0, 1, 0, 3),
        ("emission", 1, 2, 0, 5),
        ("clock", None, 2, 0, 3),  # C1/C4: both inputs have a watermark, min is 3
        ("emission", 0, 4, 0, 9),
        ("clock", None, 4, 0, 5),  # C4: min(9, 5)
        ("emission", 0, 5, 0, "IDLE"),  # S1: the last channel of input 0 goes idle
        ("emission", 1, 6, 0, 7),  # C3/C4: input 0 idle, the clock follows input 1
        ("clock", None, 6, 0, 7),
    ]
    assert [r["effective_ms"] for r in rows_of(out, "emission")] == [10, 20, 40, 50, 60]
    state = rows_of(out, "state")[0]
    assert (state["seq"], state["ts_ms"], state["effective_ms"]) == (6, 10, 60)


def test_one_input_task_emits_no_clock_rows() -> None:
    """C1-C5: a one-input task's clock mirrors its valve, so only emissions are output."""
    events = [(1, 10, 0, 5), (2, 11, 1, 7), (3, 12, 0, 9), (4, 13, 1, "IDLE"), (5, 14, 0, "IDLE")]
    one = feed_all([[part(0, events)]], [0])
    assert rows_of(one, "clock") == []
    assert short(one, "emission") == [
        ("emission", 0, 2, 0, 5),  # W4: min(5, 7)
        ("emission", 0, 3, 0, 7),
        ("emission", 0, 4, 0, 9),  # S1(b): channel 1 idle, min step over channel 0
        ("emission", 0, 5, 0, "IDLE"),  # S1(a): flush (nothing above 9), then IDLE
    ]
    assert feed_clock(events, [0]) == 9  # the clock moved: it is just not output
    two = feed_all([[part(1, [(0, 1, 0, 100)], 1), part(0, events)]], [0, 1])
    assert short(two, "emission") == [("emission", 1, 0, 0, 100), *short(one, "emission")]
    assert short(two, "clock") == [  # C4: min over both inputs; C3: input 0 idle leaves it
        ("clock", None, 2, 0, 5),
        ("clock", None, 3, 0, 7),
        ("clock", None, 4, 0, 9),
        ("clock", None, 5, 0, 100),
    ]


def feed_clock(events: list[tuple], inputs: list[int]) -> int:
    feed = TaskFeed(KEY, "flink-1.13-2.0")
    feed.header(inputs, None, -1)
    feed.feed([part(0, events)])
    assert feed.task is not None
    return feed.task.combiner.combined_watermark


def test_effective_ms_is_the_largest_ts_so_far() -> None:
    out = feed_all([[part(0, [(1, 100, 0, 5), (2, 90, 0, 6), (3, 95, 0, 7)], 1)]], [0])
    assert [(r["ts_ms"], r["effective_ms"]) for r in rows_of(out, "emission")] == [
        (100, 100),
        (90, 100),
        (95, 100),
    ]
    state = rows_of(out, "state")[0]
    assert (state["seq"], state["ts_ms"], state["effective_ms"]) == (3, 90, 100)


def test_seq_not_after_the_last_fed_seq_fails() -> None:
    feed = TaskFeed(KEY, "flink-1.13-2.0")
    feed.header([0], None, -1)
    feed.feed([part(0, [(4, 1, 0, 5), (5, 2, 0, 6)])])
    with pytest.raises(ValveInputError) as failure:
        feed.feed([part(0, [(8, 3, 0, 7), (3, 3, 0, 8)])])
    assert str(failure.value) == (
        f"{WHERE} seq=3: seq is not after the last fed seq 5: events must reach a task in seq order"
    )
    with pytest.raises(ValveInputError, match=r"seq=5: seq is not after the last fed seq 5"):
        feed.feed([part(0, [(5, 3, 0, 7)])])


@pytest.mark.parametrize("across_inputs", [False, True])
def test_seq_twice_fails(across_inputs: bool) -> None:
    if across_inputs:
        chunk = [part(0, [(3, 1, 0, 5), (4, 2, 0, 6)]), part(1, [(4, 2, 0, 7)])]
    else:
        chunk = [part(0, [(3, 1, 0, 5), (4, 2, 0, 6), (4, 2, 1, 7)])]
    with pytest.raises(ValveInputError) as failure:
        feed_all([chunk], [0, 1])
    assert str(failure.value) == f"{WHERE} seq=4: seq appears twice (identity must be unique)"


# ---------------------------------------------------------------------------- checkpoints


def test_checkpoint_whenever_effective_ms_enters_a_new_interval() -> None:
    """A checkpoint holds the state after the events before the one that crossed a boundary of
    ``checkpoint_every_ms``; one per crossing however many intervals it skips, none for a step
    back, none before the first event; the fed flag carries across chunks."""
    chunks = [
        [part(0, [(1, 100, 0, 5), (2, 999, 0, 6)], 1)],
        [part(0, [(3, 1000, 0, 7), (4, 990, 0, 8), (5, 1999, 0, 9)], 1)],
        [part(0, [(6, 4500, 0, 10), (7, 4600, 0, 11), (8, 5000, 0, 12)], 1)],
    ]
    out = feed_all(chunks, [0], every=1000)
    checkpoints = rows_of(out, "checkpoint")
    assert [(c["seq"], c["ts_ms"], c["effective_ms"]) for c in checkpoints] == [
        (2, 100, 999),
        (5, 100, 1999),
        (7, 100, 4600),
    ]
    assert [r[0] for r in out].index("checkpoint") == 2  # before the emission of seq 3
    for cp in checkpoints:
        task = TaskWatermarks.from_state(json.loads(cp["state"]))
        assert (task.last_seq, task.first_ms, task.effective_ms) == (
            cp["seq"],
            cp["ts_ms"],
            cp["effective_ms"],
        )
        assert cp["resumed_after_seq"] == -1
        assert cp["input_index"] is None and cp["kind"] is None
    assert rows_of(out, "emission") == rows_of(feed_all(chunks, [0]), "emission")


@pytest.mark.parametrize("every", [0, -5])
def test_no_checkpoints_when_checkpoint_every_ms_is_0(every: int) -> None:
    chunks = [[part(0, [(s, s * 10_000, 0, s) for s in range(1, 20)], 1)]]
    out = feed_all(chunks, [0], every=every)
    assert rows_of(out, "checkpoint") == []
    assert [r[0] for r in out][-1] == "state"


def test_restored_task_checkpoints_at_the_next_boundary() -> None:
    head = feed_all([[part(0, [(1, 100, 0, 5), (2, 1500, 0, 6)], 1)]], [0], every=1000)
    state = rows_of(head, "state")[0]
    tail = [[part(0, [(3, 1800, 0, 7), (4, 2000, 0, 8)], 1)]]
    out = feed_all(tail, None, every=1000, state=state["state"], resumed_after=2)
    assert [(c["seq"], c["effective_ms"]) for c in rows_of(out, "checkpoint")] == [(3, 1800)]
    assert [
        (r["row_kind"], r["resumed_after_seq"]) for r in rows_of(out, "checkpoint", "state")
    ] == [
        ("checkpoint", 2),
        ("state", 2),
    ]


# --------------------------------------------------------------------- resume, random streams


def random_task_events(seed: int, inputs: list[int], steps: int = 400) -> list[tuple]:
    """One task's events ``(seq, ts_ms, input_index, channel, num_channels, value)``."""
    rng = random.Random(seed)
    sizes = {i: rng.choice([1, 2, 3, 5, 40]) for i in inputs}
    streams = {i: random_stream(rng, sizes[i], steps) for i in inputs}
    first_seq = rng.randrange(0, 5)
    return [
        (seq, ts, i, channel, sizes[i], value)
        for seq, ts, i, (_, channel, value) in interleave(
            rng, streams, first_seq, 1_700_000_000_000, [1, 1, 1, 2, 7], [0, 3, 50, -20]
        )
    ]


def chunked(events: list[tuple], chunk_seqs: int) -> list[list[InputPart]]:
    """The events as the UDTF gets them: per range of ``chunk_seqs`` seqs, one part per input,
    each part's events in shuffled order."""
    rng = random.Random(len(events))
    groups: dict[int, dict[int, list[tuple]]] = {}
    sizes = {}
    for seq, ts, i, channel, n, value in events:
        groups.setdefault(seq // chunk_seqs, {}).setdefault(i, []).append((seq, ts, channel, value))
        sizes[i] = n
    chunks = []
    for _, by_input in sorted(groups.items()):
        parts = []
        for i, evs in sorted(by_input.items()):
            rng.shuffle(evs)
            parts.append(part(i, evs, sizes[i]))
        chunks.append(parts)
    return chunks


def expected(events: list[tuple], inputs: list[int], semantics: str) -> tuple[list[tuple], dict]:
    """Emission and clock rows from ``TaskWatermarks`` in a plain loop, and the final state."""
    task = TaskWatermarks(inputs, semantics)
    rows: list[tuple] = []
    effective = LONG_MIN
    for seq, ts, i, channel, n, value in events:
        effective = max(effective, ts)
        task.first_ms = ts if task.first_ms is None else min(task.first_ms, ts)
        valve = task.valve(i, n)
        out = (
            valve.input_status(channel, value)
            if isinstance(value, str)
            else valve.input_watermark(channel, value)
        )
        rows += [("emission", i, seq, k, v) for k, (_, v) in enumerate(out)]
        clock = task.combine(i, out)
        if len(inputs) > 1:
            rows += [("clock", None, seq, k, v) for k, (_, v) in enumerate(clock)]
    task.last_seq = events[-1][0]
    task.effective_ms = effective
    return rows, task.to_state()


@pytest.mark.parametrize("semantics", [s.value for s in ValveSemantics])
@pytest.mark.parametrize("inputs", [[0], [0, 1], [0, 2, 5]])
def test_equals_the_task_in_a_plain_loop(semantics: str, inputs: list[int]) -> None:
    """W1-W4, S1-S3, C1-C5: every emission and clock row and the final state as the core's,
    whatever the chunk size."""
    for seed in (1, 2, 3):
        events = random_task_events(seed, inputs)
        want, want_state = expected(events, inputs, semantics)
        for chunk_seqs in (7, 64, 1 << 20):
            out = feed_all(chunked(events, chunk_seqs), inputs, semantics=semantics)
            assert short(out, "emission", "clock") == want, (seed, chunk_seqs)
            state = rows_of(out, "state")
            assert len(state) == 1 and out[-1][0] == "state"
            assert json.loads(state[0]["state"]) == want_state
            assert state[0]["seq"] == want_state["last_seq"]
            assert state[0]["ts_ms"] == want_state["first_ms"]
            assert state[0]["effective_ms"] == want_state["effective_ms"]


def test_resume_from_saved_state_equals_feeding_everything_at_once() -> None:
    inputs = [0, 1]
    events = random_task_events(4, inputs)
    whole = feed_all(chunked(events, 50), inputs)
    cut = events[300][0]
    head = feed_all(chunked([e for e in events if e[0] <= cut], 50), inputs)
    saved = rows_of(head, "state")[0]
    assert saved["seq"] == cut
    tail = feed_all(
        chunked([e for e in events if e[0] > cut], 50),
        None,  # the state knows the inputs
        state=saved["state"],
        resumed_after=cut,
    )
    assert short(head, "emission", "clock") + short(tail, "emission", "clock") == short(
        whole, "emission", "clock"
    )
    end = rows_of(tail, "state")[0]
    assert end["resumed_after_seq"] == cut
    assert end["state"] == rows_of(whole, "state")[0]["state"]


def test_every_checkpoint_resumes_to_the_same_end_state() -> None:
    inputs = [0, 1]
    events = random_task_events(7, inputs, steps=600)
    whole = feed_all(chunked(events, 40), inputs, every=1000)
    checkpoints = rows_of(whole, "checkpoint")
    assert len(checkpoints) >= 4
    end = rows_of(whole, "state")[0]["state"]
    for cp in checkpoints:
        later = [e for e in events if e[0] > cp["seq"]]
        assert later[0][1] >= (cp["effective_ms"] // 1000 + 1) * 1000  # it crossed the interval
        tail = feed_all(chunked(later, 40), None, every=1000, state=cp["state"])
        assert rows_of(tail, "state")[0]["state"] == end
        assert short(tail, "emission", "clock") == [
            r for r in short(whole, "emission", "clock") if r[2] > cp["seq"]
        ]


def test_state_row_of_a_task_never_fed() -> None:
    feed = TaskFeed(KEY, "flink-40475")
    feed.header([1, 0], None, 17)
    (row,) = feed.finish()
    got = dict(zip(FIELDS, row, strict=True))
    assert got["row_kind"] == "state"
    assert (got["seq"], got["ts_ms"], got["effective_ms"], got["resumed_after_seq"]) == (
        None,
        None,
        None,
        17,
    )
    assert json.loads(got["state"])["combiner"]["inputs"] == [0, 1]
    assert feed.task is not None and feed.task.semantics is ValveSemantics.FLINK_40475


def test_without_header_inputs_the_first_chunk_names_them() -> None:
    feed = TaskFeed(KEY, "flink-1.13-2.0")
    feed.feed([part(1, [(2, 1, 0, 5)]), part(0, [(1, 1, 0, 5)])])
    assert feed.task is not None and feed.task.inputs == [0, 1]


# --------------------------------------------------------------------------------- bad input

BAD = [
    (part(0, [(41, 5, 2, 100)]), "channel 2 is outside [0, 2)"),
    (
        part(0, [(41, 5, 0, "PAUSED")], bad_status="PAUSED"),
        "status 'PAUSED' is not 'IDLE' or 'ACTIVE'",
    ),
    (part(0, [(41, 5, 0, ("code", CODE_BAD_STATUS))]), "status 'NULL' is not 'IDLE' or 'ACTIVE'"),
    (
        part(0, [(41, 5, 0, ("code", CODE_NO_WATERMARK))]),
        "watermark None is not an integer (got NoneType)",
    ),
    (part(0, [(41, 5, 0, ("code", 9))]), "unknown event code 9"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("bad", "reason"), BAD, ids=["channel", "status", "no-status", "no-wm", "code"]
)
def test_bad_input_fails_naming_task_input_and_seq(bad: InputPart, reason: str) -> None:
    good = part(0, [(40, 4, 0, 10), (42, 6, 1, 10)])
    chunk = [
        InputPart(0, 2, bad.bad_status, *(g + b for g, b in zip(good[3:], bad[3:], strict=True)))
    ]
    with pytest.raises(ValveInputError) as failure:
        feed_all([chunk], [0])
    assert str(failure.value) == f"{WHERE} input_index=0 seq=41: {reason}"


def test_num_channels_that_changes_fails_naming_the_parts_first_seq() -> None:
    chunks = [[part(0, [(1, 1, 0, 5)], 2)], [part(0, [(9, 2, 0, 6), (7, 2, 0, 6)], 3)]]
    with pytest.raises(ValveInputError) as failure:
        feed_all(chunks, [0])
    assert str(failure.value) == (
        f"{WHERE} input_index=0 seq=7: num_channels 3 differs from the valve's 2 "
        "(it must be constant per task and input)"
    )


def test_input_not_of_the_task_fails() -> None:
    with pytest.raises(ValveInputError) as failure:
        feed_all([[part(4, [(1, 1, 0, 5)])]], [0, 1])
    assert str(failure.value) == (
        f"{WHERE} input_index=4 seq=1: input_index 4 is not one of the task's inputs [0, 1]"
    )


def test_unknown_semantics_fails() -> None:
    with pytest.raises(ValveInputError) as failure:
        feed_all([[part(0, [(1, 1, 0, 5)])]], [0], semantics="flink-1.12")
    expected_values = ", ".join(repr(s.value) for s in ValveSemantics)
    assert str(failure.value) == (
        f"{WHERE}: unknown valve semantics 'flink-1.12'; expected {expected_values}"
    )


def test_state_of_other_semantics_or_malformed_fails() -> None:
    head = feed_all([[part(0, [(1, 1, 0, 5)])]], [0])
    state = rows_of(head, "state")[0]["state"]
    with pytest.raises(ValveInputError) as failure:
        feed_all([], None, semantics="flink-40475", state=state)
    assert str(failure.value) == (
        f"{WHERE}: saved state has semantics 'flink-1.13-2.0', not 'flink-40475': "
        "resume only with the semantics it was made with"
    )
    with pytest.raises(ValveInputError, match=f"^{WHERE}: Expecting value"):
        feed_all([], None, state="not json")


def test_chunk_arrays_of_different_lengths_fail() -> None:
    bad = part(0, [(1, 1, 0, 5), (2, 2, 0, 6)])._replace(ts_ms=[1])
    with pytest.raises(ValveInputError) as failure:
        feed_all([[bad]], [0])
    assert str(failure.value) == f"{WHERE}: chunk arrays of different lengths"


def test_task_without_inputs_fails() -> None:
    with pytest.raises(ValveInputError) as failure:
        TaskFeed(KEY, "flink-1.13-2.0").finish()
    assert str(failure.value) == f"{WHERE}: a task needs at least one input"


# ---------------------------------------------------------------------- adapter, imports


@pytest.mark.parametrize("cut", [1, 2, 3, 100])
def test_spark_adapter_only_marshals(cut: int) -> None:
    """``ValveUDTF`` (no Spark needed to call it): one task's header and chunk rows as record
    batches, cut every ``cut`` rows (slices of one batch, as Spark's partition split hands them
    over, so a chunk's rows can span two calls), give the same rows as the core, the task's
    columns on each."""
    pa = pytest.importorskip("pyarrow")
    from udfs.spark import ValveUDTF, _arrow_schema

    # The columns of the valve's input rows (macros/tidemark_valve_input_rows.sql).
    longs, ints = pa.list_(pa.int64()), pa.list_(pa.int32())
    schema = pa.schema(
        [
            ("job_id", pa.string()), ("vertex_id", pa.string()), ("subtask_index", pa.int32()),
            ("attempt", pa.int32()), ("chunk_index", pa.int64()), ("task_inputs", ints),
            ("state", pa.string()), ("resumed_after_seq", pa.int64()), ("input_index", pa.int32()),
            ("num_channels", pa.int32()), ("bad_status", pa.string()), ("seqs", longs),
            ("ts_ms", longs), ("channels", ints), ("watermarks", longs), ("codes", ints),
        ]
    )  # fmt: skip
    chunks = chunked(random_task_events(5, [0, 1], steps=60), 16)
    task = {"job_id": "job", "vertex_id": "map", "subtask_index": 3, "attempt": 1}
    rows = [{**task, "chunk_index": -1, "task_inputs": [0, 1], "resumed_after_seq": -1}]
    for index, parts in enumerate(chunks):
        rows += [
            {**task, "chunk_index": index, **{f: getattr(p, f) for f in p._fields}} for p in parts
        ]
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    udtf = ValveUDTF()
    semantics, every = pa.array(["flink-1.13-2.0"]), pa.array([1000])
    out = []
    for start in range(0, len(rows), cut):
        out += list(udtf.eval(batch.slice(start, cut), semantics, every))
    out += list(udtf.terminate())
    assert all(b.schema == _arrow_schema() for b in out)
    got = [tuple(r.values()) for b in out for r in b.to_pylist()]
    assert got == [(*KEY, *r) for r in feed_all(chunks, [0, 1], every=1000)]


def test_pure_core_does_not_import_pyspark_or_pandas() -> None:
    code = (
        "import udfs.task_feed, sys; "
        "assert not {'pyspark', 'pandas', 'numpy'} & set(sys.modules), 'imported'"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("semantics", [s.value for s in ValveSemantics])
def test_a_one_input_tasks_checkpoints_hold_the_cores_state(semantics: str) -> None:
    """C1-C5: a one-input task's combiner is fed only where its state is saved; every checkpoint
    and the final state still hold what the core holds after the same events."""
    for seed in (5, 6):
        events = random_task_events(seed, [0], steps=600)
        out = feed_all(chunked(events, 64), [0], semantics=semantics, every=1000)
        saved = rows_of(out, "checkpoint", "state")
        assert len(saved) >= 4
        for row in saved:
            before = [e for e in events if e[0] <= row["seq"]]
            _, want = expected(before, [0], semantics)
            got = json.loads(row["state"])
            assert got["valves"] == want["valves"], row["seq"]
            assert got["combiner"] == want["combiner"], row["seq"]
