"""The live tests' matching rules on hand-made readings (fast; no Flink)."""

from __future__ import annotations

from tests.live.matching import (
    INITIAL,
    NO_WATERMARK,
    gauge_timelines,
    input_watermark_timelines,
    match,
    watermark_timelines,
)


def _round(update_ms: int, idle: int, bp: int, busy: float | None, attempt: int = 0) -> dict:
    return {
        "vertex_id": "v",
        "subtask_index": 0,
        "attempt": attempt,
        "update_ms": update_ms,
        "idle_time_ms_per_second": idle,
        "back_pressured_time_ms_per_second": bp,
        "busy_time_ms_per_second": busy,
    }


def _reading(requested: int, received: int, values: tuple, attempt: int = 0) -> dict:
    idle, bp, busy = values
    return {
        "vertex_id": "v",
        "subtask_index": 0,
        "attempt": attempt,
        "requested_ms": requested,
        "received_ms": received,
        "idle_time_ms_per_second": idle,
        "back_pressured_time_ms_per_second": bp,
        "busy_time_ms_per_second": busy,
    }


# Attempt 0 publishes three rounds; attempt 1 (after a restart) two.
TIMELINES = gauge_timelines(
    [
        _round(10_000, 100, 200, 700.0),
        _round(15_003, 150, 250, 600.0),
        _round(20_010, 0, 0, None),
        _round(31_000, 40, 0, 960.0, attempt=1),
        _round(36_000, 30, 0, 970.0, attempt=1),
    ]
)


def _shown(reading: dict, lag_ms: int) -> tuple[int, int] | None:
    matched, missed = match([reading], TIMELINES, lag_ms)
    assert len(matched) + len(missed) == 1
    return (matched[0][1].attempt, matched[0][1].round_index) if matched else None


def test_a_reading_shows_a_round_in_effect_in_its_window() -> None:
    # Window [14_000, 16_050]: round 0 is in effect at 14_000, round 1 from 15_003.
    assert _shown(_reading(16_000, 16_050, (100.0, 200.0, 700.0)), 2000) == (0, 0)
    assert _shown(_reading(16_000, 16_050, (150.0, 250.0, 600.0)), 2000) == (0, 1)


def test_a_round_outside_the_window_is_a_miss() -> None:
    # Round 0 ended at 15_003, before the window [15_100, 16_050] began.
    matched, missed = match([_reading(16_000, 16_050, (100.0, 200.0, 700.0))], TIMELINES, 900)
    assert not matched and "matches none of" in str(missed[0])


def test_before_the_first_round_flink_publishes_zero_and_busy_1000() -> None:
    assert _shown(_reading(9_000, 9_010, INITIAL), 2000) == (0, -1)
    assert _shown(_reading(9_000, 9_010, (0.0, 0.0, None)), 2000) == (0, -1)
    assert _shown(_reading(12_000, 12_010, INITIAL), 1000) is None


def test_all_three_gauges_must_match_one_round() -> None:
    # idle of round 0 with back pressure of round 1: no single round shows it.
    assert _shown(_reading(16_000, 16_050, (100.0, 250.0, 700.0)), 2000) is None
    # NaN busy (REST "NaN", None here) matches a NULL busy only.
    assert _shown(_reading(21_000, 21_010, (0.0, 0.0, None)), 500) == (0, 2)
    assert _shown(_reading(21_000, 21_010, (0.0, 0.0, 999.0)), 500) is None


def test_a_dump_can_mix_two_consecutive_rounds_gauge_by_gauge() -> None:
    """Flink reads the gauges one by one: at a round's close a reading can mix two rounds."""
    mixed = _reading(16_000, 16_050, (150.0, 200.0, 700.0))  # idle of round 1, the rest of 0
    straddles: list = []
    matched, missed = match([mixed], TIMELINES, 2000, straddles)
    assert not matched and not missed
    [(reading, earlier, later)] = straddles
    assert (earlier.round_index, later.round_index) == (0, 1)
    # Flink's first round can mix with the initial value (the reading of the live test's run).
    first = gauge_timelines([_round(5_000, 1000, 0, 0.0)])
    straddles = []
    matched, missed = match([_reading(5_010, 5_020, (1000.0, 0.0, 1000.0))], first, 2000, straddles)
    assert not missed and len(straddles) == 1
    # Without straddles asked for, it is a miss; so is a mix of rounds 0 and 2 (not consecutive),
    # and a value neither round has.
    assert _shown(mixed, 2000) is None
    for values in [(100.0, 0.0, 700.0), (100.0, 999.0, 700.0)]:
        straddles = []
        matched, missed = match([_reading(21_000, 21_010, values)], TIMELINES, 10_000, straddles)
        assert len(missed) == 1 and not straddles, values


def test_around_a_restart_both_attempts_are_in_effect() -> None:
    # Between attempt 0's last round and attempt 1's first, REST may show either: attempt 0's
    # last value, or attempt 1's value before its first round.
    assert _shown(_reading(25_000, 25_010, (0.0, 0.0, None)), 500) == (0, 2)
    assert _shown(_reading(25_000, 25_010, INITIAL, attempt=1), 500) == (1, -1)
    # After attempt 1's first round, attempt 0's values are over.
    assert _shown(_reading(33_000, 33_010, (0.0, 0.0, None), attempt=1), 500) is None
    assert _shown(_reading(33_000, 33_010, (40.0, 0.0, 960.0), attempt=1), 500) == (1, 0)


def test_overlapping_attempts_both_show_their_values() -> None:
    """Seen on Flink 2.2.0: attempt 1 ran (REST showed its initial value at 9_000) while attempt
    0's gauges still got a view update at 12_000, after attempt 1's first round was due."""
    timelines = gauge_timelines(
        [
            _round(7_000, 36, 0, 964.0),
            _round(12_000, 40, 0, 960.0),
            _round(11_000, 5, 0, 995.0, attempt=1),
            _round(16_000, 6, 0, 994.0, attempt=1),
        ],
        started={("v", 0, 0): 2_000, ("v", 0, 1): 8_500},
    )

    def shown(reading: dict) -> tuple[int, int] | None:
        matched, _ = match([reading], timelines, 500)
        return (matched[0][1].attempt, matched[0][1].round_index) if matched else None

    assert shown(_reading(9_000, 9_010, INITIAL, attempt=1)) == (1, -1)
    assert shown(_reading(13_000, 13_010, (40.0, 0.0, 960.0))) == (0, 1)
    assert shown(_reading(13_000, 13_010, (5.0, 0.0, 995.0), attempt=1)) == (1, 0)
    # Attempt 1 started at 8_500: its initial value is not in effect before that (attempt 0's
    # is: a task's metrics show before its first event, so the first attempt's starts at once).
    assert shown(_reading(8_000, 8_010, INITIAL, attempt=1)) is None
    assert shown(_reading(1_000, 1_010, INITIAL)) == (0, -1)


def test_a_new_attempts_value_shows_once_the_old_attempt_has_ended() -> None:
    """Seen once on Flink 2.2.0 on a slow host: REST, still naming attempt 0, showed Flink's
    value before a first round while attempt 0's rounds were in effect. Attempt 1's metrics
    showed before its first captured event, and attempt 0 got a round after that. A new attempt
    is deployed only once the old one has ended, so its value before a first round is in effect
    from the old attempt's last event."""
    rounds = [
        _round(7_000, 36, 0, 964.0),
        _round(12_000, 40, 0, 960.0),
        _round(17_000, 45, 0, 955.0),  # attempt 0's last view update, after it ended
        _round(21_000, 5, 0, 995.0, attempt=1),
    ]
    started = {("v", 0, 0): 2_000, ("v", 0, 1): 16_000}
    ended = {("v", 0, 0): 13_500, ("v", 0, 1): 30_000}

    def shown(reading: dict, **bounds: dict) -> tuple[int, int] | None:
        matched, _ = match([reading], gauge_timelines(rounds, started, **bounds), 500)
        return (matched[0][1].attempt, matched[0][1].round_index) if matched else None

    after_the_end = _reading(14_000, 14_010, INITIAL)
    assert shown(after_the_end) is None  # without the old attempt's end: a miss
    assert shown(after_the_end, ended=ended) == (1, -1)
    # While attempt 0 still ran, its rounds are all REST could show.
    assert shown(_reading(13_000, 13_010, INITIAL), ended=ended) is None
    assert shown(_reading(13_000, 13_010, (40.0, 0.0, 960.0)), ended=ended) == (0, 1)


def test_a_new_attempts_value_shows_from_the_jobs_restart() -> None:
    """Seen on Flink 2.3.0 in CI: REST, naming attempt 0, showed a task's value before a first
    round 35 ms before the task's attempt 1 logged its first event, while attempt 0 still got
    view updates (so its last event came later). The restart deploys every task at once: another
    task's attempt 1 had started 143 ms earlier, and from then on any task may show attempt 1."""
    rounds = [
        _round(7_000, 36, 0, 964.0),
        _round(12_000, 40, 0, 960.0),
        _round(17_000, 45, 0, 955.0),  # attempt 0 still updated after attempt 1 started
        _round(21_000, 5, 0, 995.0, attempt=1),
    ]
    own = {("v", 0, 0): 2_000, ("v", 0, 1): 16_000}
    ended = {("v", 0, 0): 17_500, ("v", 0, 1): 30_000}
    early = _reading(15_900, 15_950, INITIAL)

    def shown(reading: dict, started: dict) -> tuple[int, int] | None:
        matched, _ = match([reading], gauge_timelines(rounds, started, ended), 0)
        return (matched[0][1].attempt, matched[0][1].round_index) if matched else None

    assert shown(early, own) is None  # the task's own first event is too late
    job = {**own, ("w", 0, 1): 15_857, ("w", 0, 0): 1_000}
    assert shown(early, job) == (1, -1)
    # Before the job's restart, only attempt 0's rounds are in effect.
    assert shown(_reading(15_000, 15_010, INITIAL), job) is None


def _change(valid_from: int, seq: int, watermark: int | None, attempt: int = 0) -> dict:
    return {
        "vertex_id": "v",
        "subtask_index": 0,
        "attempt": attempt,
        "valid_from_ms": valid_from,
        "seq": seq,
        "change_index": 0,
        "watermark_ms": watermark,
    }


def _watermark(requested: int, received: int, value: int) -> dict:
    return {
        "vertex_id": "v",
        "subtask_index": 0,
        "attempt": 0,
        "requested_ms": requested,
        "received_ms": received,
        "current_input_watermark": value,
    }


def test_watermark_readings_match_changes_in_their_window() -> None:
    timelines = watermark_timelines(
        [
            _change(1_000, 1, 500),
            _change(2_000, 5, 1_500),
            _change(3_000, 9, 2_500),
            _change(9_000, 2, 8_000, attempt=1),
        ]
    )
    readings = [
        _watermark(2_500, 2_510, 1_500),
        _watermark(2_500, 2_510, 500),  # in effect at 2_500 - 1_000 = 1_500
        _watermark(2_500, 2_510, NO_WATERMARK),  # not a watermark: neither matched nor missed
        _watermark(8_000, 8_010, 2_500),  # attempt 0's last, until attempt 1's first change
    ]
    matched, missed = match(readings, timelines, 1_000)
    assert len(matched) == 3 and not missed
    for late in (2_500, 1_000):  # reached only later; never the task's watermark
        _, missed = match([_watermark(2_500, 2_510, late)], timelines, 1_000)
        assert missed
    _, missed = match([_watermark(9_500, 9_510, 2_500)], timelines, 100)
    assert missed  # attempt 1 has its own watermark from 9_000 on


def _emission(
    ts: int, seq: int, input_index: int, watermark: int | None, status: str | None = None
) -> dict:
    return {
        "vertex_id": "v",
        "subtask_index": 0,
        "attempt": 0,
        "input_index": input_index,
        "seq": seq,
        "ts_ms": ts,
        "emission_index": 0,
        "kind": "status" if status else "watermark",
        "watermark_ms": watermark,
        "status": status,
    }


def test_a_two_input_tasks_reading_is_the_min_of_its_inputs_idle_ones_included() -> None:
    """Flink's currentInputWatermark of a two-input task is MinWatermarkGauge: the min of each
    input's last watermark, whether the input is idle or not (seen live on Flink 1.15.4, whose
    join's input 0 goes idle under back pressure at 5_905 while input 1 moves on: REST showed
    5_905 for seconds while the task's clock, C4, was 5_940). Its clock is not what REST shows."""
    clock = [_change(1_000, 3, 5_806), _change(1_200, 5, 5_940)]  # input 0 idle from seq 2 on
    emissions = [
        _emission(900, 1, 0, 5_905),
        _emission(900, 2, 0, None, "IDLE"),
        _emission(1_000, 3, 1, 5_806),
        _emission(1_200, 5, 1, 5_940),
    ]
    timelines = input_watermark_timelines(clock, emissions)
    stuck = [_watermark(3_000, 3_010, 5_905)]
    matched, missed = match(stuck, timelines, 1_000)
    assert len(matched) == 1 and not missed
    assert match([_watermark(3_000, 3_010, 5_940)], timelines, 1_000)[1]  # never the min
    assert match(stuck, watermark_timelines(clock), 1_000)[1]  # the clock never showed 5_905
    # Before both inputs have a watermark, Flink shows Long.MIN_VALUE: nothing to match.
    assert match([_watermark(950, 960, 5_905)], timelines, 10)[1]
    # A one-input task's reading is its clock.
    one = [{**_change(1_000, 1, 700), "vertex_id": "w"}]
    alone = input_watermark_timelines(one, [{**_emission(1_000, 1, 0, 700), "vertex_id": "w"}])
    assert match([{**_watermark(1_500, 1_510, 700), "vertex_id": "w"}], alone, 100)[0]


def test_a_dump_can_add_one_rounds_soft_back_pressure_to_the_others_hard() -> None:
    """Back pressure is soft + hard, two TimerGauges closing their rounds one after the other:
    at a round's close a dump can sum one round's soft with the other's hard (seen on Flink
    1.20.5: idle 23, back pressure 863 where the rounds had 902 and 812, busy 164)."""
    rounds = [
        {**_round(10_000, 23, 902, 75.0), "soft_back_pressured_time_ms_per_second": 2,
         "hard_back_pressured_time_ms_per_second": 900},
        {**_round(15_000, 24, 812, 164.0), "soft_back_pressured_time_ms_per_second": 0,
         "hard_back_pressured_time_ms_per_second": 812},
    ]  # fmt: skip
    timelines = gauge_timelines(rounds)
    for back_pressure in (2.0 + 812.0, 0.0 + 900.0):
        straddles: list = []
        reading = _reading(15_010, 15_020, (23.0, back_pressure, 164.0))
        matched, missed = match([reading], timelines, 2000, straddles)
        assert not matched and not missed and len(straddles) == 1, back_pressure
    # A sum neither pairing gives is a miss; so is a cross sum without the parts in the mart.
    straddles = []
    _, missed = match([_reading(15_010, 15_020, (23.0, 863.0, 164.0))], timelines, 2000, straddles)
    assert len(missed) == 1 and not straddles
    plain = gauge_timelines([_round(10_000, 23, 902, 75.0), _round(15_000, 24, 812, 164.0)])
    _, missed = match([_reading(15_010, 15_020, (23.0, 814.0, 164.0))], plain, 2000, [])
    assert len(missed) == 1
