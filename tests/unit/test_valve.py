"""Unit tests for the StatusWatermarkValve core (flink-semantics.md section 4).

Each test is named after the rule it checks (W1-W4, S1-S3, E1-E10). The scenarios rebuild those of
Flink's ``StatusWatermarkValveTest``; the two ``derived_current_code_*_FLINK_40475`` vectors are
checked under both semantics. A differential test compares the heap-based core with the linear
transcription in ``valve_reference.py`` on well over a million random events.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import udfs.valve as valve_module
from tests.unit.valve_reference import ReferenceValve
from udfs.valve import (
    LONG_MAX,
    LONG_MIN,
    StatusWatermarkValve,
    ValveInputError,
    ValveSemantics,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
OLD = ValveSemantics.FLINK_1_13_TO_2_0
NEW = ValveSemantics.FLINK_40475
BOTH = pytest.mark.parametrize("semantics", [OLD, NEW], ids=lambda s: s.value)

IDLE = [("status", "IDLE")]
ACTIVE = [("status", "ACTIVE")]


def wm(value: int) -> list[tuple[str, int]]:
    return [("watermark", value)]


class Driver:
    """Feeds a valve and checks each call's outputs, like Flink's ``popLastSeenOutput``."""

    def __init__(self, num_channels: int, semantics: ValveSemantics = OLD) -> None:
        self.valve = StatusWatermarkValve(num_channels, semantics)

    def w(self, channel: int, watermark: int, expected: list | None = None) -> None:
        assert self.valve.input_watermark(channel, watermark) == (expected or [])

    def s(self, channel: int, status: str, expected: list | None = None) -> None:
        assert self.valve.input_status(channel, status) == (expected or [])


# ---------------------------------------------------------------------------- W1-W4


def test_W1_watermark_on_idle_channel_is_not_remembered() -> None:
    # testSingleInputWatermarksIntactDuringIdleness
    d = Driver(1)
    d.w(0, 25, wm(25))
    d.s(0, "IDLE", IDLE)
    d.w(0, 50)
    assert d.valve.channel_watermark(0) == 25
    d.s(0, "ACTIVE", ACTIVE)
    d.w(0, 50, wm(50))


def test_W1_watermark_on_idle_channel_of_active_valve_is_dropped() -> None:
    d = Driver(2)
    d.w(0, 5)
    d.s(1, "IDLE", wm(5))
    d.w(1, 100)  # channel idle, valve active: dropped, not stored
    assert d.valve.channel_watermark(1) == LONG_MIN
    assert not d.valve.is_idle
    d.s(1, "ACTIVE")
    assert not d.valve.channel_is_aligned(1)


def test_W1_watermark_ignored_while_valve_idle() -> None:
    d = Driver(2)
    d.w(0, 3)
    d.w(1, 4, wm(3))
    d.s(0, "IDLE", wm(4))
    d.s(1, "IDLE", IDLE)
    d.w(0, 1000)
    d.w(1, 1000)
    assert [d.valve.channel_watermark(0), d.valve.channel_watermark(1)] == [3, 4]
    assert d.valve.last_output_watermark == 4


def test_W2_equal_or_lower_watermark_is_ignored() -> None:
    d = Driver(2)
    d.w(0, 10)
    d.w(0, 10)
    d.w(0, 9)
    assert d.valve.channel_watermark(0) == 10
    d.w(1, 12, wm(10))
    d.w(1, 12)
    d.w(1, 11)
    assert d.valve.channel_watermark(1) == 12


def test_W2_equal_watermark_ignored_right_after_reactivation() -> None:
    d = Driver(1)
    d.w(0, 7, wm(7))
    d.s(0, "IDLE", IDLE)
    d.s(0, "ACTIVE", ACTIVE)
    d.w(0, 7)
    d.w(0, 6)
    d.w(0, 8, wm(8))


def test_W3_unaligned_channel_stores_and_realigns_at_equal_last_out() -> None:
    d = Driver(2)
    d.w(0, 5)
    d.w(1, 10, wm(5))
    d.s(0, "IDLE", wm(10))
    d.s(0, "ACTIVE")
    assert not d.valve.channel_is_aligned(0)
    d.w(0, 8)  # catch-up mode: stored, still unaligned
    assert d.valve.channel_watermark(0) == 8
    assert not d.valve.channel_is_aligned(0)
    d.w(0, 10)  # w >= lastOut (equal) aligns; min 10 is not above lastOut
    assert d.valve.channel_is_aligned(0)
    d.w(1, 20)
    d.w(0, 15, wm(15))


def test_W3_aligned_channel_stays_aligned() -> None:
    d = Driver(2)
    d.w(0, 5)
    d.w(1, 6, wm(5))
    d.w(0, 7, wm(6))
    assert d.valve.channel_is_aligned(0) and d.valve.channel_is_aligned(1)


def test_W4_min_over_aligned_channels() -> None:
    # testMultipleInputIncreasingWatermarks
    d = Driver(3)
    d.w(0, 0)
    d.w(1, 0)
    d.w(2, 0, wm(0))
    d.w(0, 12)
    d.w(2, 8)
    d.w(2, 10)
    d.w(1, 15, wm(10))
    d.w(2, 17, wm(12))
    d.w(0, 20, wm(15))


def test_W4_at_most_one_watermark_per_call() -> None:
    d = Driver(2)
    d.w(0, 100)
    d.w(1, 1, wm(1))
    d.w(1, 200, wm(100))  # jumps straight to the new min, one watermark
    assert d.valve.last_output_watermark == 100


# ---------------------------------------------------------------------------- S1-S3


def test_S1a_all_idle_emits_idle_after_flush() -> None:
    d = Driver(2)
    d.w(0, 3)
    d.w(1, 9, wm(3))
    d.s(1, "IDLE")
    d.s(0, "IDLE", wm(9) + IDLE)
    assert d.valve.is_idle
    assert not d.valve.channel_is_aligned(0) and d.valve.channel_is_idle(0)


def test_S1a_all_idle_without_higher_watermark_emits_only_idle() -> None:
    d = Driver(2)
    d.s(0, "IDLE")
    d.s(1, "IDLE", IDLE)
    assert d.valve.last_output_watermark == LONG_MIN


def test_S1b_idle_channel_at_last_out_runs_min_step() -> None:
    # testMultipleInputWatermarkAdvancingWithPartiallyIdleChannels
    d = Driver(3)
    d.w(0, 15)
    d.w(1, 10)
    d.s(2, "IDLE", wm(10))  # channel 2 still at LONG_MIN == lastOut
    d.w(1, 18, wm(15))
    d.w(0, 20, wm(18))


def test_S1b_channels_individually_become_idle() -> None:
    # testMultipleInputWatermarkAdvancingAsChannelsIndividuallyBecomeIdle
    d = Driver(3)
    d.w(0, 25)
    d.w(1, 10)
    d.w(2, 17, wm(10))
    d.s(1, "IDLE", wm(17))
    d.s(2, "IDLE", wm(25))


def test_S1c_idle_channel_above_last_out_does_nothing() -> None:
    d = Driver(3)
    d.w(0, 10)
    d.w(1, 20)
    d.w(2, 30, wm(10))
    d.s(2, "IDLE")
    assert not d.valve.channel_is_aligned(2)
    d.w(0, 40, wm(20))  # channel 2 (30) no longer holds the min back


def test_S2_reactivation_does_not_run_min_step() -> None:
    d = Driver(3)
    d.w(0, 5)
    d.w(1, 20)
    d.w(2, 3, wm(3))
    d.s(2, "IDLE", wm(5))  # S1(b)
    d.s(2, "ACTIVE")  # 3 < 5: unaligned
    d.s(1, "IDLE")  # S1(c): 20 != 5
    d.s(0, "IDLE")  # S1(b): min step, but only unaligned channel 2 is active
    d.s(1, "ACTIVE")  # 20 >= 5: aligned, min over aligned = 20 > lastOut, yet no min step
    assert d.valve.channel_is_aligned(1)
    assert d.valve.last_output_watermark == 5


def test_S2_aligned_iff_watermark_at_or_above_last_out() -> None:
    d = Driver(3)
    d.w(0, 10)
    d.w(1, 10)
    d.w(2, 4, wm(4))
    d.s(0, "IDLE")  # 10 != 4
    d.s(2, "IDLE", wm(10))  # 4 == lastOut: min over {1: 10}
    d.s(0, "ACTIVE")
    d.s(2, "ACTIVE")
    assert d.valve.channel_is_aligned(0)  # 10 == lastOut
    assert not d.valve.channel_is_aligned(2)  # 4 < lastOut


def test_S3_single_input_status_toggling_and_echoes() -> None:
    # testSingleInputWatermarkStatusToggling
    d = Driver(1)
    d.s(0, "ACTIVE")
    d.s(0, "IDLE", IDLE)
    d.s(0, "IDLE")
    d.s(0, "ACTIVE", ACTIVE)
    d.s(0, "ACTIVE")


def test_S3_multiple_input_status_toggling() -> None:
    # testMultipleInputWatermarkStatusToggling
    d = Driver(2)
    d.s(0, "ACTIVE")
    d.s(1, "ACTIVE")
    d.s(1, "IDLE")
    d.s(0, "IDLE", IDLE)
    d.s(0, "IDLE")
    d.s(1, "IDLE")
    d.s(1, "ACTIVE", ACTIVE)
    d.s(0, "ACTIVE")


# ---------------------------------------------------------------------------- E1-E10


def test_E1_single_input_passes_increasing_watermarks_through() -> None:
    # testSingleInputIncreasingWatermarks
    d = Driver(1)
    d.w(0, 0, wm(0))
    d.w(0, 25, wm(25))


def test_E1_single_input_decreasing_watermarks_yield_no_output() -> None:
    # testSingleInputDecreasingWatermarksYieldsNoOutput
    d = Driver(1)
    d.w(0, 25, wm(25))
    d.w(0, 18)
    d.w(0, 42, wm(42))


@BOTH
def test_E1_single_input_realigned_at_once_after_reactivation(semantics: ValveSemantics) -> None:
    d = Driver(1, semantics)
    d.w(0, 5, wm(5))
    d.s(0, "IDLE", IDLE)
    d.s(0, "ACTIVE", ACTIVE)
    assert d.valve.channel_is_aligned(0)
    d.w(0, 6, wm(6))


def test_E2_watermark_only_when_all_channels_received_one() -> None:
    # testMultipleInputYieldsWatermarkOnlyWhenAllChannelsReceivesWatermarks
    d = Driver(3)
    d.w(0, 0)
    d.w(1, 0)
    d.w(2, 0, wm(0))


def test_E2_channel_idle_before_any_watermark_is_left_out() -> None:
    d = Driver(3)
    d.w(0, 4)
    d.s(2, "IDLE")  # LONG_MIN == lastOut: min step, but channel 1 is still at LONG_MIN
    d.w(1, 6, wm(4))
    d.w(0, 9, wm(6))


def test_E3_long_min_input_is_always_ignored() -> None:
    d = Driver(1)
    d.w(0, LONG_MIN)
    assert d.valve.last_output_watermark == LONG_MIN
    d.s(0, "IDLE", IDLE)  # no flush: max is LONG_MIN, never emitted
    d.s(0, "ACTIVE", ACTIVE)
    d.w(0, LONG_MIN)


def test_E3_negative_watermarks_compare_as_signed() -> None:
    d = Driver(2)
    d.w(0, -5)
    d.w(1, -7, wm(-7))
    d.w(1, -6, wm(-6))
    d.w(1, 0, wm(-5))
    d.w(0, LONG_MIN + 1)  # lower than -5: ignored
    d.w(0, -1, wm(-1))


def test_E3_long_max_is_an_ordinary_value() -> None:
    d = Driver(2)
    d.w(0, LONG_MAX)
    d.w(1, LONG_MAX - 1, wm(LONG_MAX - 1))
    d.w(1, LONG_MAX, wm(LONG_MAX))
    d.w(0, LONG_MAX)
    d.s(0, "IDLE")
    d.s(1, "IDLE", IDLE)  # max LONG_MAX already out: no repeat


def test_E4_multiple_input_decreasing_watermarks_yield_no_output() -> None:
    # testMultipleInputDecreasingWatermarksYieldsNoOutput
    d = Driver(3)
    d.w(0, 25)
    d.w(1, 10)
    d.w(2, 17, wm(10))
    d.w(0, 12)
    d.w(1, 8)
    d.w(2, 15)
    assert [d.valve.channel_watermark(c) for c in range(3)] == [25, 10, 17]


def test_E5_realignment_after_resume_active() -> None:
    # testMultipleInputWatermarkRealignmentAfterResumeActive
    d = Driver(3)
    d.w(0, 10)
    d.w(1, 7)
    d.w(2, 3, wm(3))
    d.s(2, "IDLE", wm(7))
    d.s(2, "ACTIVE")
    assert not d.valve.channel_is_aligned(2)
    d.w(2, 5)  # stored silently
    assert d.valve.channel_watermark(2) == 5
    d.w(2, 9)  # aligns, min is still 7
    assert d.valve.channel_is_aligned(2)
    d.w(1, 12, wm(9))


# derived_current_code_stall_after_reactivation_FLINK_40475: (op, channel, value, old, new)
STALL_VECTOR = [
    ("w", 0, 10, [], []),
    ("w", 1, 7, [], []),
    ("s", 2, "IDLE", wm(7), wm(7)),
    ("s", 2, "ACTIVE", [], []),  # LONG_MIN < 7: unaligned
    ("s", 0, "IDLE", [], []),  # 10 != 7
    ("s", 1, "IDLE", [], []),  # 7 == 7: min step, but nothing is aligned (E8)
    ("s", 0, "ACTIVE", [], wm(10)),  # 10 >= 7: aligned; only FLINK-40475 runs the min step
    ("s", 2, "IDLE", [], []),  # unaligned channel 2 going idle changes nothing
]

# derived_current_code_skipped_flush_FLINK_40475
SKIPPED_FLUSH_VECTOR = [
    ("w", 0, 100, [], []),
    ("w", 1, 50, [], []),
    ("w", 2, 70, wm(50), wm(50)),
    ("s", 1, "IDLE", wm(70), wm(70)),
    ("s", 1, "ACTIVE", [], []),  # 50 < 70: unaligned
    ("w", 1, 60, [], []),  # partial catch-up, stays unaligned
    ("s", 0, "IDLE", [], []),
    ("s", 2, "IDLE", [], []),  # 70 == lastOut: min step over nothing
    ("s", 1, "IDLE", IDLE, wm(100) + IDLE),  # last channel unaligned: flush skipped in old code
]

# testRealignmentAfterResumeActiveEmitsNewMinWatermark (FLINK-40475 test)
REALIGN_VECTOR = [
    ("w", 0, 10, [], []),
    ("w", 1, 20, [], []),
    ("w", 2, 30, wm(10), wm(10)),
    ("s", 2, "IDLE", [], []),
    ("s", 0, "IDLE", wm(20), wm(20)),
    ("s", 0, "ACTIVE", [], []),
    ("s", 1, "IDLE", [], []),
    ("s", 2, "ACTIVE", [], wm(30)),
    ("s", 0, "IDLE", [], []),
    ("s", 2, "IDLE", IDLE, IDLE),  # old: 30 is never emitted (stall, then skipped flush)
]


def run_vector(vector: list, semantics: ValveSemantics, num_channels: int = 3) -> None:
    valve = StatusWatermarkValve(num_channels, semantics)
    for step, (op, channel, value, old, new) in enumerate(vector):
        if op == "w":
            got = valve.input_watermark(channel, value)
        else:
            got = valve.input_status(channel, value)
        expected = new if semantics is NEW else old
        assert got == expected, f"step {step}: {op} {channel} {value}"


def test_E6_stall_after_reactivation() -> None:
    run_vector(STALL_VECTOR, OLD)
    valve = StatusWatermarkValve(3)
    for op, channel, value, *_ in STALL_VECTOR[:7]:
        getattr(valve, "input_watermark" if op == "w" else "input_status")(channel, value)
    assert valve.channel_is_aligned(0) and valve.last_output_watermark == 7  # stalled
    # Any later min step releases it: here a catch-up watermark on unaligned channel 2.
    assert valve.input_watermark(2, 3) == wm(10)
    assert not valve.channel_is_aligned(2)


def test_E6_stall_released_by_larger_watermark_on_reactivated_channel() -> None:
    valve = StatusWatermarkValve(3)
    for op, channel, value, *_ in STALL_VECTOR[:7]:
        getattr(valve, "input_watermark" if op == "w" else "input_status")(channel, value)
    assert valve.input_watermark(0, 11) == wm(11)


def test_E7_all_idle_flushes_max_then_idle() -> None:
    # testMultipleInputFlushMaxWatermarkAndWatermarkStatusOnceAllInputsBecomeIdle
    d = Driver(3)
    d.w(0, 10)
    d.w(1, 5)
    d.w(2, 3, wm(3))
    d.s(0, "IDLE")
    d.s(1, "IDLE")
    d.s(2, "IDLE", wm(10) + IDLE)


def test_E7_final_watermark_independent_of_idle_order() -> None:
    finals = set()
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]):
        valve = StatusWatermarkValve(3)
        for channel, value in ((0, 10), (1, 5), (2, 3)):
            valve.input_watermark(channel, value)
        for channel in order:
            valve.input_status(channel, "IDLE")
        finals.add(valve.last_output_watermark)
    assert finals == {10}


def test_E7_exception_skipped_flush_when_last_idle_channel_unaligned() -> None:
    run_vector(SKIPPED_FLUSH_VECTOR, OLD)


def test_E8_no_output_when_all_active_unaligned() -> None:
    # testNoOutputWhenAllActiveChannelsAreUnaligned (no Long.MAX_VALUE, FLINK-7721)
    d = Driver(3)
    d.w(0, 10)
    d.w(1, 7)
    d.s(2, "IDLE", wm(7))
    d.s(2, "ACTIVE")
    d.s(0, "IDLE")
    d.s(1, "IDLE")
    assert d.valve.last_output_watermark == 7 and not d.valve.is_idle


def test_E9_unaligned_active_channel_becomes_idle() -> None:
    # testUnalignedActiveChannelBecomesIdle
    d = Driver(2)
    d.w(0, 7)
    d.w(1, 10, wm(7))
    d.s(0, "IDLE", wm(10))
    d.s(0, "ACTIVE")
    d.w(0, 9)
    d.s(0, "IDLE")
    assert d.valve.channel_is_aligned(1) and not d.valve.channel_is_aligned(0)
    d.w(1, 11, wm(11))  # the aligned set was unchanged


def test_E10_valve_idle_drops_watermarks_then_first_reactivation_emits_active() -> None:
    d = Driver(3)
    d.w(0, 10)
    d.w(1, 20)
    d.w(2, 30, wm(10))
    d.s(1, "IDLE")
    d.s(2, "IDLE")
    d.s(0, "IDLE", wm(30) + IDLE)
    d.w(0, 40)  # W1
    d.s(0, "ACTIVE", ACTIVE)
    d.s(2, "ACTIVE")  # no second ACTIVE; 30 == lastOut: aligned
    assert not d.valve.channel_is_aligned(0)  # 10 < 30
    assert d.valve.channel_is_aligned(2)
    d.w(2, 35, wm(35))
    d.w(0, 34)  # catch-up, unaligned
    d.w(0, 36)  # aligns
    d.w(2, 50, wm(36))


# ---------------------------------------------------------------------------- FLINK-40475


def test_FLINK_40475_stall_resolved_min_emitted_after_active() -> None:
    # testWatermarkAdvancesWhenReactivatedChannelBecomesOnlyAlignedChannel
    run_vector(STALL_VECTOR, NEW)


def test_FLINK_40475_skipped_flush_resolved_max_flushed() -> None:
    # testMultipleInputFlushMaxWatermarkOnceAllInputsBecomeIdleWithUnalignedLastChannel
    run_vector(SKIPPED_FLUSH_VECTOR, NEW)


@BOTH
def test_FLINK_40475_realignment_emits_new_min_and_no_duplicate_flush(
    semantics: ValveSemantics,
) -> None:
    run_vector(REALIGN_VECTOR, semantics)


def test_FLINK_40475_min_step_follows_active_status() -> None:
    # The state the old code reaches after a skipped flush (E7 exception): valve idle, lastOut
    # below an idle channel's watermark. Restored under FLINK-40475, the min step that follows a
    # reactivation emits its watermark after ACTIVE. (The new code's own unconditional flush
    # never leaves such a state, so from its own states this ordering cannot show.)
    state = StatusWatermarkValve(2).to_state()
    state.update(
        semantics=NEW.value,
        last_output_watermark=5,
        is_idle=True,
        channel_watermarks=[5, 9],
        channel_idle=[True, True],
        channel_aligned=[False, False],
    )
    valve = StatusWatermarkValve.from_state(state)
    assert valve.input_status(1, "ACTIVE") == ACTIVE + wm(9)
    state["semantics"] = OLD.value
    assert StatusWatermarkValve.from_state(state).input_status(1, "ACTIVE") == ACTIVE


def test_semantics_accepts_enum_and_value() -> None:
    assert StatusWatermarkValve(1).semantics is OLD
    assert StatusWatermarkValve(1, "flink-40475").semantics is NEW
    assert StatusWatermarkValve(1, NEW).to_state()["semantics"] == "flink-40475"


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize("channel", [-1, 3, 10**30, "0", 1.0, True, None])
def test_error_bad_channel_is_named(channel: object) -> None:
    valve = StatusWatermarkValve(3)
    with pytest.raises(ValveInputError, match=re.escape(repr(channel))):
        valve.input_watermark(channel, 1)  # type: ignore[arg-type]
    with pytest.raises(ValveInputError, match=re.escape(repr(channel))):
        valve.input_status(channel, "IDLE")  # type: ignore[arg-type]
    with pytest.raises(ValveInputError, match=re.escape(repr(channel))):
        valve.channel_watermark(channel)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", ["idle", "Active", "", None, 1])
def test_error_bad_status_is_named(status: object) -> None:
    valve = StatusWatermarkValve(2)
    with pytest.raises(ValveInputError, match=re.escape(repr(status))):
        valve.input_status(0, status)  # type: ignore[arg-type]
    assert valve.to_state() == StatusWatermarkValve(2).to_state()  # unchanged


@pytest.mark.parametrize("watermark", [LONG_MAX + 1, LONG_MIN - 1, 2**64, 1.5, "5", None, False])
def test_error_bad_watermark_is_named(watermark: object) -> None:
    valve = StatusWatermarkValve(2)
    with pytest.raises(ValveInputError, match=re.escape(repr(watermark))):
        valve.input_watermark(0, watermark)  # type: ignore[arg-type]
    assert valve.channel_watermark(0) == LONG_MIN


@pytest.mark.parametrize("num_channels", [0, -4, 2.0, "3", True])
def test_error_bad_num_channels_is_named(num_channels: object) -> None:
    with pytest.raises(ValveInputError, match=re.escape(repr(num_channels))):
        StatusWatermarkValve(num_channels)  # type: ignore[arg-type]


@pytest.mark.parametrize("semantics", ["flink-1.12", "FLINK_40475", "", None, 40475])
def test_error_unknown_semantics_is_named(semantics: object) -> None:
    with pytest.raises(ValveInputError, match=re.escape(repr(semantics))):
        StatusWatermarkValve(2, semantics)  # type: ignore[arg-type]


def test_error_is_a_value_error() -> None:
    assert issubclass(ValveInputError, ValueError)


def test_numpy_integers_are_accepted() -> None:
    np = pytest.importorskip("numpy")
    valve = StatusWatermarkValve(np.int32(2))
    valve.input_watermark(np.int64(0), np.int64(5))
    assert valve.input_watermark(np.int16(1), np.int64(6)) == wm(5)
    assert type(valve.last_output_watermark) is int


def _good_state() -> dict:
    valve = StatusWatermarkValve(3)
    for channel, value in ((0, 10), (1, 7), (2, 12)):
        valve.input_watermark(channel, value)
    valve.input_status(1, "IDLE")
    return json.loads(json.dumps(valve.to_state()))


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda s: s.pop("channel_idle"), "channel_idle"),
        (lambda s: s.update(extra=1), "extra"),
        (lambda s: s.update(format="tidemark.valve/0"), "tidemark.valve/0"),
        (lambda s: s.update(semantics="flink-9"), "flink-9"),
        (lambda s: s.update(num_channels=0), "0"),
        (lambda s: s.update(num_channels="3"), "'3'"),
        (lambda s: s.update(last_output_watermark=2**63), str(2**63)),
        (lambda s: s.update(is_idle="no"), "'no'"),
        (lambda s: s.update(channel_watermarks=[1, 2]), "2 entries"),
        (lambda s: s.update(channel_watermarks="10,7,12"), "channel_watermarks"),
        (lambda s: s["channel_watermarks"].__setitem__(2, 1.5), "1.5"),
        (lambda s: s["channel_aligned"].__setitem__(0, 1), "channel_aligned[0]"),
        (lambda s: s["channel_aligned"].__setitem__(1, True), "channel 1"),
        (lambda s: s.update(last_output_watermark=11), "channel 0"),
        (lambda s: s.update(is_idle=True), "True"),
        (lambda s: s.update(last_output_watermark=13, channel_aligned=[False] * 3), "13"),
    ],
)
def test_error_malformed_state_is_named(change, needle: str) -> None:
    state = _good_state()
    StatusWatermarkValve.from_state(state)  # the unchanged state is fine
    change(state)
    with pytest.raises(ValveInputError, match=re.escape(needle)):
        StatusWatermarkValve.from_state(state)


def test_error_state_not_a_dict() -> None:
    with pytest.raises(ValveInputError, match=re.escape("[1, 2]")):
        StatusWatermarkValve.from_state([1, 2])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- random streams


def interleave(
    rng: random.Random,
    streams: dict[int, Iterator[tuple]],
    seq: int,
    ts: int,
    seq_steps: Sequence[int],
    ts_steps: Sequence[int],
) -> Iterator[tuple[int, int, int, tuple]]:
    """One task's events from its inputs' streams, interleaved at random: ``(seq, ts_ms,
    input_index, event)``, ``seq`` growing by one of ``seq_steps`` (gaps: other event types take
    seqs too) and the clock by one of ``ts_steps`` (a task's clock may step back)."""
    live = list(streams)
    while live:
        i = rng.choice(live)
        try:
            event = next(streams[i])
        except StopIteration:
            live.remove(i)
            continue
        seq += rng.choice(seq_steps)
        ts += rng.choice(ts_steps)
        yield seq, ts, i, event


def random_stream(rng: random.Random, num_channels: int, steps: int):
    """Yield ``(is_status, channel, value)`` events biased towards the valve's edge cases.

    Watermarks cluster around each channel's last value and around ``lastOut`` so that equality
    with ``lastOut`` (S1), catch-up (W3) and realignment (S2) are frequent; statuses toggle often
    and occasional sweeps take every channel idle (S1(a), E7). Values near Long.MIN_VALUE and
    Long.MAX_VALUE, and negatives, appear via the per-stream base.
    """
    base = rng.choice([0, 1_000, -(10**12), LONG_MIN + 50, LONG_MAX - 10**4])
    p_status = rng.choice([0.05, 0.2, 0.4])
    p_idle = rng.choice([0.3, 0.5, 0.7])
    hot = max(1, min(num_channels, rng.choice([1, 2, 4, num_channels])))
    last = [base] * num_channels
    top = base
    emitted = 0
    while emitted < steps:
        if num_channels > 1 and rng.random() < 0.002:
            order = list(range(num_channels))
            rng.shuffle(order)
            for channel in order[: steps - emitted]:
                yield True, channel, "IDLE"
                emitted += 1
            continue
        channel = rng.randrange(hot) if rng.random() < 0.5 else rng.randrange(num_channels)
        if rng.random() < p_status:
            yield True, channel, "IDLE" if rng.random() < p_idle else "ACTIVE"
        else:
            r = rng.random()
            if r < 0.6:
                value = last[channel] + rng.randint(-2, 4)
            elif r < 0.9:
                value = top + rng.randint(-3, 1)
            elif r < 0.995:
                value = base + rng.randint(-5, 40)
            else:
                # extremes, not remembered: LONG_MAX (rarely) ends all progress of its channel
                extreme = LONG_MAX if rng.random() < 0.05 else rng.choice([LONG_MIN, -1, 0])
                yield False, channel, extreme
                emitted += 1
                continue
            value = min(max(value, LONG_MIN), LONG_MAX)
            last[channel] = max(last[channel], value)
            top = max(top, value)
            yield False, channel, value
        emitted += 1


def check_emission_laws(outputs: list, history: dict) -> None:
    """E3 and W4/S1(a) ordering, on one call's outputs."""
    marks = [v for k, v in outputs if k == "watermark"]
    assert len(marks) <= 1
    for value in marks:
        assert value != LONG_MIN
        assert value > history["last"]
        history["last"] = value
    statuses = [v for k, v in outputs if k == "status"]
    assert len(statuses) <= 1
    if statuses:
        assert statuses[0] != history["status"]
        history["status"] = statuses[0]
        if statuses[0] == "IDLE":
            assert outputs[-1] == ("status", "IDLE")  # watermark before IDLE
        else:
            assert outputs[0] == ("status", "ACTIVE")  # ACTIVE before a FLINK-40475 min


def snapshot(valve, num_channels: int) -> tuple:
    return (
        valve.last_output_watermark,
        valve.is_idle,
        [valve.channel_watermark(c) for c in range(num_channels)],
        [valve.channel_is_idle(c) for c in range(num_channels)],
        [valve.channel_is_aligned(c) for c in range(num_channels)],
    )


def differential_run(
    seed: int, num_channels: int, steps: int, semantics: ValveSemantics, snapshot_every: int
) -> dict:
    rng = random.Random(seed)
    core = StatusWatermarkValve(num_channels, semantics)
    ref = ReferenceValve(num_channels, semantics.value)
    core_w, core_s = core.input_watermark, core.input_status
    ref_w, ref_s = ref.input_watermark, ref.input_status
    history = {"last": LONG_MIN, "status": "ACTIVE"}
    stats = {"steps": 0, "watermarks": 0, "idle": 0, "flush": 0}
    for i, (is_status, channel, value) in enumerate(random_stream(rng, num_channels, steps)):
        if is_status:
            got, want = core_s(channel, value), ref_s(channel, value)
        else:
            got, want = core_w(channel, value), ref_w(channel, value)
        if got != want:
            raise AssertionError(
                f"seed {seed} n={num_channels} {semantics.value} step {i}: "
                f"{'status' if is_status else 'watermark'} {value!r} on {channel}: "
                f"core {got} != reference {want}"
            )
        if got:
            check_emission_laws(got, history)
            stats["watermarks"] += sum(k == "watermark" for k, _ in got)
            if got[-1] == ("status", "IDLE"):
                stats["idle"] += 1
                stats["flush"] += len(got) == 2
        if i % snapshot_every == 0:
            assert snapshot(core, num_channels) == snapshot(ref, num_channels)
        stats["steps"] += 1
    assert snapshot(core, num_channels) == snapshot(ref, num_channels)
    return stats


def test_differential_core_matches_linear_reference_on_random_streams() -> None:
    """W1-W4, S1-S3 and E3: the O(log n) core equals the O(n) transcription, both semantics."""
    totals = {"steps": 0, "watermarks": 0, "idle": 0, "flush": 0}
    runs = []
    for semantics in (OLD, NEW):
        for num_channels in range(1, 9):
            for k in range(12):
                runs.append((num_channels * 100 + k, num_channels, 5_200, semantics, 7))
        for num_channels, steps in ((33, 8_000), (200, 4_000), (1_000, 1_500)):
            runs.append((num_channels, num_channels, steps, semantics, 501))
    for seed, num_channels, steps, semantics, every in runs:
        stats = differential_run(seed, num_channels, steps, semantics, every)
        for key in totals:
            totals[key] += stats[key]
    assert totals["steps"] >= 1_000_000
    # the streams really reach the interesting branches
    assert totals["watermarks"] > 30_000
    assert totals["idle"] > 5_000 and totals["flush"] > 300


def test_differential_semantics_differ_on_random_streams() -> None:
    """The FLINK-40475 option changes outputs on random streams, and only in its two places."""
    differ = 0
    for seed in range(300):
        rng = random.Random(seed)
        num_channels = rng.randint(2, 5)
        old, new = StatusWatermarkValve(num_channels, OLD), StatusWatermarkValve(num_channels, NEW)
        for is_status, channel, value in random_stream(rng, num_channels, 500):
            if is_status:
                a, b = old.input_status(channel, value), new.input_status(channel, value)
            else:
                a, b = old.input_watermark(channel, value), new.input_watermark(channel, value)
            if a != b:
                differ += 1
                assert is_status  # both changes are in the status branches
                break
    assert differ >= 10


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    num_channels=st.integers(1, 6),
    semantics=st.sampled_from([OLD, NEW]),
    events=st.lists(
        st.tuples(
            st.booleans(),
            st.integers(0, 5),
            st.one_of(
                st.integers(-3, 12),
                st.sampled_from([LONG_MIN, LONG_MAX, LONG_MIN + 1, LONG_MAX - 1]),
            ),
            st.booleans(),
        ),
        max_size=60,
    ),
)
def test_differential_hypothesis_matches_reference(
    num_channels: int, semantics: ValveSemantics, events: list
) -> None:
    core = StatusWatermarkValve(num_channels, semantics)
    ref = ReferenceValve(num_channels, semantics.value)
    history = {"last": LONG_MIN, "status": "ACTIVE"}
    for is_status, channel, value, idle in events:
        channel %= num_channels
        if is_status:
            status = "IDLE" if idle else "ACTIVE"
            got, want = core.input_status(channel, status), ref.input_status(channel, status)
        else:
            got, want = core.input_watermark(channel, value), ref.input_watermark(channel, value)
        assert got == want
        check_emission_laws(got, history)
    assert snapshot(core, num_channels) == snapshot(ref, num_channels)
    assert json.loads(json.dumps(core.to_state())) == core.to_state()


# ---------------------------------------------------------------------------- state


@pytest.mark.parametrize("semantics", [OLD, NEW], ids=lambda s: s.value)
def test_state_round_trip_continues_identically(semantics: ValveSemantics) -> None:
    for seed in range(120):
        rng = random.Random(seed)
        num_channels = rng.choice([1, 2, 3, 5, 8, 40])
        events = list(random_stream(rng, num_channels, 400))
        cut = rng.randrange(len(events) + 1)
        straight = StatusWatermarkValve(num_channels, semantics)
        resumed = StatusWatermarkValve(num_channels, semantics)
        for i, (is_status, channel, value) in enumerate(events):
            if i == cut:
                saved = json.dumps(resumed.to_state())
                resumed = StatusWatermarkValve.from_state(json.loads(saved))
            if is_status:
                a, b = straight.input_status(channel, value), resumed.input_status(channel, value)
            else:
                a = straight.input_watermark(channel, value)
                b = resumed.input_watermark(channel, value)
            assert a == b, f"seed {seed}, cut {cut}, step {i}"
        assert straight.to_state() == resumed.to_state()


def test_state_round_trip_of_fresh_valve_and_semantics_kept() -> None:
    for semantics in (OLD, NEW):
        valve = StatusWatermarkValve(4, semantics)
        restored = StatusWatermarkValve.from_state(json.loads(json.dumps(valve.to_state())))
        assert restored.semantics is semantics
        assert restored.to_state() == valve.to_state()


# ---------------------------------------------------------------------------- cost, imports


def count_heap_work(monkeypatch: pytest.MonkeyPatch, num_channels: int, events: int) -> float:
    """Heap element operations per event on a random workload (a non-timing O(log n) check).

    A push or pop is one operation (O(log n) each); a rebuild counts as many operations as it
    has entries (heapify is O(n)). Returns operations per event and checks the heap's size bound.
    """
    counter = {"ops": 0}

    def push(heap: list, item: int) -> None:
        counter["ops"] += 1
        valve_module.heappush(heap, item)

    def pop(heap: list) -> int:
        counter["ops"] += 1
        return valve_module.heappop(heap)

    def rebuild(heap: list) -> None:
        counter["ops"] += len(heap)
        valve_module.heapify(heap)

    monkeypatch.setattr(valve_module, "_heappush", push)
    monkeypatch.setattr(valve_module, "_heappop", pop)
    monkeypatch.setattr(valve_module, "_heapify", rebuild)
    rng = random.Random(num_channels)
    valve = StatusWatermarkValve(num_channels)
    following = [0] * num_channels
    for step in range(events):
        channel = rng.randrange(num_channels)
        if rng.random() < 0.05:
            valve.input_status(channel, "IDLE" if rng.random() < 0.5 else "ACTIVE")
        else:
            following[channel] += rng.randrange(1, 1_000)
            valve.input_watermark(channel, following[channel])
        if step % 1_000 == 0:
            assert len(valve._heap) <= 2 * num_channels + 32
    return counter["ops"] / events


def test_cost_heap_work_per_event_does_not_grow_with_channels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Amortised O(1) heap operations per event, each O(log n), whatever the channel count.

    Per event: at most one push; every pop removes an entry pushed earlier (or one of the
    ``num_channels`` initial ones); a rebuild of k <= num_channels entries follows at least
    num_channels + 32 pushes. So operations <= 3 * events + num_channels, and the heap never
    exceeds 2 * num_channels + 32 entries (checked inside ``count_heap_work``).
    """
    events = 60_000
    for num_channels in (4, 10_000):
        per_event = count_heap_work(monkeypatch, num_channels, events)
        assert per_event <= 3 + num_channels / events, (num_channels, per_event)


def test_pure_core_does_not_import_pyspark() -> None:
    code = "import udfs.valve, sys; assert 'pyspark' not in sys.modules, 'pyspark imported'"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
