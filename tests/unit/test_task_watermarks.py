"""Unit tests for a task's combined clock (``udfs.task_watermarks``, rules C1-C5).

C1-C5 transcribe flink-core's ``CombinedWatermarkStatus`` (flink-semantics.md section 4.7) as
``AbstractStreamOperator`` uses it for the inputs of a task; the tests are named after the rule.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_valve import random_stream
from udfs.task_watermarks import TaskWatermarks, WatermarkCombiner
from udfs.valve import LONG_MIN, StatusWatermarkValve, ValveInputError, ValveSemantics

REPO_ROOT = Path(__file__).resolve().parents[2]
IDLE = ("status", "IDLE")
ACTIVE = ("status", "ACTIVE")


def wm(value: int) -> tuple[str, int]:
    return ("watermark", value)


def test_C1_two_inputs_hold_the_clock_until_both_have_a_watermark() -> None:
    c = WatermarkCombiner([0, 1])
    assert c.update(0, [wm(10)]) == []
    assert c.update(0, [wm(20)]) == []
    assert c.update(1, [wm(15)]) == [wm(15)]
    assert c.combined_watermark == 15


def test_C2_C4_min_over_inputs_emitted_only_when_it_rises() -> None:
    c = WatermarkCombiner([0, 1])
    c.update(0, [wm(10)])
    assert c.update(1, [wm(5)]) == [wm(5)]
    assert c.update(1, [wm(8)]) == [wm(8)]
    assert c.update(1, [wm(30)]) == [wm(10)]
    assert c.update(0, [wm(12)]) == [wm(12)]
    assert c.update(0, [wm(11)]) == []  # C2: a partial never goes back


def test_C3_C4_idle_input_leaves_the_min_and_the_watermark_comes_at_the_status() -> None:
    c = WatermarkCombiner([0, 1])
    c.update(0, [wm(10)])
    c.update(1, [wm(50)])
    assert c.combined_watermark == 10
    assert c.update(0, [IDLE]) == [wm(50)]  # re-derived at the status (C5: no status change)
    assert not c.is_idle
    assert c.update(1, [wm(60)]) == [wm(60)]


def test_C4_all_inputs_idle_is_idle_without_flush() -> None:
    c = WatermarkCombiner([0, 1])
    c.update(0, [wm(10)])
    c.update(1, [wm(50)])
    assert c.update(1, [IDLE]) == []
    assert c.update(0, [IDLE]) == [IDLE]  # no flush of the max (50), unlike the valve's E7
    assert c.combined_watermark == 10
    assert c.is_idle


def test_C5_reactivation_emits_the_watermark_before_active() -> None:
    c = WatermarkCombiner([0, 1])
    c.update(0, [wm(10)])
    c.update(1, [wm(50)])
    c.update(0, [IDLE])  # -> 50
    c.update(1, [IDLE])  # -> IDLE
    assert c.update(0, [ACTIVE]) == [ACTIVE]  # 10 is not above 50
    c.update(0, [IDLE])
    c2 = WatermarkCombiner([0, 1])
    c2.update(0, [wm(10)])
    c2.update(1, [wm(5)])
    c2.update(0, [IDLE])
    c2.update(1, [IDLE])  # combined 5 then IDLE
    assert c2.update(0, [ACTIVE]) == [wm(10), ACTIVE]


def test_C2_watermark_on_idle_partial_reactivates_it() -> None:
    c = WatermarkCombiner([0, 1])
    c.update(0, [wm(10)])
    c.update(1, [IDLE])  # -> 10
    c.update(0, [IDLE])  # -> IDLE
    # A valve flushes its watermark before IDLE; a watermark after IDLE on a partial (possible
    # under the FLINK-40475 semantics' ACTIVE + min) makes it non-idle at once (C2).
    assert c.update(1, [wm(20)]) == [wm(20)]
    assert not c.is_idle


def test_C4_one_valve_flush_then_idle_on_a_single_input() -> None:
    c = WatermarkCombiner([0])
    assert c.update(0, [wm(7), IDLE]) == [wm(7), IDLE]
    assert c.update(0, [ACTIVE]) == [ACTIVE]


@pytest.mark.parametrize("semantics", list(ValveSemantics), ids=lambda s: s.value)
def test_C1_C5_one_input_clock_mirrors_its_valve_on_random_streams(
    semantics: ValveSemantics,
) -> None:
    """The adapter omits a one-input task's clock rows because they equal the valve's."""
    for seed in range(40):
        rng = random.Random(seed)
        n = rng.choice([1, 2, 3, 7])
        valve = StatusWatermarkValve(n, semantics)
        c = WatermarkCombiner([0])
        for is_status, channel, value in random_stream(rng, n, 2_000):
            out = (
                valve.input_status(channel, value)
                if is_status
                else valve.input_watermark(channel, value)
            )
            assert c.update(0, out) == out


def test_C4_task_clock_never_decreases_and_idle_iff_all_inputs_idle() -> None:
    for seed in range(30):
        rng = random.Random(1000 + seed)
        task = TaskWatermarks([0, 1])
        streams = [random_stream(rng, rng.choice([1, 2, 4]), 3_000) for _ in range(2)]
        sizes = [4, 4]
        valve_idle = [False, False]
        last = LONG_MIN
        idle = False
        for step in range(3_000):
            i = rng.randrange(2)
            try:
                is_status, channel, value = next(streams[i])
            except StopIteration:
                continue
            valve = task.valve(i, sizes[i])
            channel %= valve.num_channels
            out = (
                valve.input_status(channel, value)
                if is_status
                else valve.input_watermark(channel, value)
            )
            for kind, v in out:
                if kind == "status":
                    valve_idle[i] = v == "IDLE"
            for kind, v in task.combine(i, out):
                if kind == "watermark":
                    assert v > last, (seed, step)
                    last = v
                else:
                    idle = v == "IDLE"
            assert idle == all(valve_idle), (seed, step)


def test_state_round_trip_continues_identically() -> None:
    rng = random.Random(7)
    events = []
    for _ in range(4_000):
        i = rng.randrange(2)
        if rng.random() < 0.1:
            events.append((i, rng.randrange(3), None, rng.choice(["IDLE", "ACTIVE"])))
        else:
            events.append((i, rng.randrange(3), rng.randrange(10_000), None))

    def feed(task: TaskWatermarks, chunk) -> list:
        outs = []
        for i, channel, w, s in chunk:
            valve = task.valve(i, 3)
            out = valve.input_status(channel, s) if s else valve.input_watermark(channel, w)
            outs.append((out, task.combine(i, out)))
        return outs

    whole = feed(TaskWatermarks([0, 1]), events)
    first = TaskWatermarks([0, 1])
    head = feed(first, events[:1_500])
    first.last_seq, first.first_ms, first.effective_ms = 1_499, 100, 123
    state = json.loads(json.dumps(first.to_state()))
    resumed = TaskWatermarks.from_state(state)
    assert (resumed.last_seq, resumed.first_ms, resumed.effective_ms) == (1_499, 100, 123)
    assert resumed.inputs == [0, 1]
    assert head + feed(resumed, events[1_500:]) == whole


def test_state_keeps_semantics_and_lazily_made_valves() -> None:
    task = TaskWatermarks([0, 3], "flink-40475")
    task.valve(3, 5).input_watermark(2, 9)
    state = TaskWatermarks.from_state(task.to_state()).to_state()
    assert state == task.to_state()
    assert state["semantics"] == "flink-40475"
    assert list(state["valves"]) == ["3"]


def test_error_input_not_of_the_task() -> None:
    task = TaskWatermarks([0])
    with pytest.raises(ValveInputError, match="input_index 1 is not one of the task's inputs"):
        task.valve(1, 2)


def test_error_num_channels_changes() -> None:
    task = TaskWatermarks([0])
    task.valve(0, 2)
    with pytest.raises(ValveInputError, match="num_channels 3 differs from the valve's 2"):
        task.valve(0, 3)


@pytest.mark.parametrize(
    ("state", "needle"),
    [
        ([1], "is not a dict"),
        ({"format": "other"}, "format"),
        ({"format": "tidemark.task_watermarks/1"}, "malformed task state"),
    ],
)
def test_error_malformed_task_state(state: object, needle: str) -> None:
    with pytest.raises(ValveInputError, match=needle):
        TaskWatermarks.from_state(state)  # type: ignore[arg-type]


def test_error_bad_inputs() -> None:
    with pytest.raises(ValveInputError, match="at least one input"):
        WatermarkCombiner([])
    with pytest.raises(ValveInputError, match="input_index -1"):
        WatermarkCombiner([-1])
    with pytest.raises(ValveInputError, match="unknown valve semantics"):
        TaskWatermarks([0], "flink-9")


def test_pure_core_does_not_import_pyspark() -> None:
    code = (
        "import udfs.task_watermarks, sys; assert 'pyspark' not in sys.modules, 'pyspark imported'"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
