"""Which of tidemark's rows a Flink REST reading shows: the matching rules of the live tests.

A REST reading is not taken at a known moment of the job: Flink's MetricFetcher serves what it
fetched at its last refresh (rule V5), and a gauge shows the value of its last view update round
(V1-V4). So a reading taken between ``requested_ms`` and ``received_ms`` shows the state of some
moment in the window ``[requested_ms - lag_ms, received_ms]``, and the tests match it like that,
against a subtask's timeline of states built from tidemark's marts:

* gauges (``fct_subtask_flink_gauges``): round k of an attempt is in effect from its
  ``update_ms`` until the attempt's next round; the attempt's last round until the next attempt's
  first round (the attempt ended in between). Before an attempt's first round Flink publishes
  idle 0, back pressure 0 and busy 1000 (T7, M4): in effect from the previous attempt's last
  round or, if earlier, the previous attempt's last event or the attempt's own first event (the
  first attempt: from the start) until that first round; busy is NaN instead while
  the task has not yet enabled busy time (``TaskIOMetricGroup.busyTimeEnabled`` starts false,
  the StreamTask sets it as it starts). A reading matches if all three gauges equal one state
  in effect in its window.
* readings of a subtask that REST lists as closing or closed (CANCELING, CANCELED, FAILED,
  FINISHED) are not matched: REST keeps serving their last fetched values, of unknown age.
* watermarks (``fct_task_watermarks``): a change is in effect from its ``valid_from_ms`` until
  the attempt's next change; the attempt's last one until the next attempt's first change.
  A reading other than Flink's "no watermark" (Long.MIN_VALUE) matches if it equals the
  ``watermark_ms`` of a change in effect in its window. A task with several inputs is the
  exception: its ``currentInputWatermark`` is Flink's ``MinWatermarkGauge``, the min of each
  input's last watermark (every release from 1.15 to 2.3), idle inputs included, not the task's
  clock (C4 leaves idle inputs out). Its timeline is that min, from ``fct_valve_emissions``
  (each input's valve outputs), in effect from the running max ``ts_ms`` of the emissions.

The timeline is per subtask, across its attempts: REST serves the metrics of the attempt that
was current when the MetricFetcher fetched them, while the attempt it names in the vertex
details comes from a cached execution graph (``web.refresh-interval``), so around a restart the
two can differ. Which attempt each reading matched is returned, for the tests to check.

A reading that matches no state is a miss, reported with the states it was compared with.

Flink reads a subtask's three gauges one by one, twice over: the view updater closes the idle
and the back pressure TimerGauge's rounds one after the other (each is a View of its own, V1),
and a metric dump (MetricDumpSerialization) calls each gauge's getValue() in turn, busy
computing 1000 - min(idle + back pressure, 1000) from what it reads at its own moment (M4). A
dump taken while a round closes can so mix two consecutive rounds: seen on Flink 2.2.0 on a
loaded machine, one fetch right at the job's first round showed idle 1000 with busy 1000. With
``straddles`` given, a reading whose every gauge equals that of one of two consecutive states
of an attempt, both in effect in its window, goes there instead of to the misses; the live test
requires them to be rare (any fetch can land on a round's close). Back pressure is itself the
sum of two TimerGauges, soft and hard (M3), whose rounds also close one after the other: a dump can
add one round's soft to the other's hard (seen on Flink 1.20.5 on a slow host: idle 23 of round
2, back pressure 863 where the rounds had 902 and 812, busy 164 of round 3).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass

# REST keeps serving the last fetched metrics of a subtask that is closing or gone, of unknown
# age (V5 no longer bounds it): such readings are not matched.
CLOSED = ("CANCELING", "CANCELED", "FAILED", "FINISHED")
# Long.MIN_VALUE: what Flink's watermark gauges show before the first watermark ("No Watermark").
NO_WATERMARK = -(2**63)
# Before the first view update: idle 0, back pressure 0, busy 1000 - min(0 + 0, 1000) (T7, M4),
# or NaN (None here) in the moments before the starting task enables busy time.
INITIAL = (0.0, 0.0, 1000.0)
INITIAL_BUSY_DISABLED = (0.0, 0.0, None)
# Those two as an attempt's states before its first round, with back pressure's (soft, hard).
INITIAL_STATES = ((INITIAL, (0.0, 0.0)), (INITIAL_BUSY_DISABLED, (0.0, 0.0)))

Subtask = tuple[str, int]  # (vertex_id, subtask_index) within one job


@dataclass(frozen=True)
class State:
    """One value a subtask showed, and when: from ``start_ms`` until ``end_ms`` (exclusive)."""

    attempt: int
    round_index: int  # k of the attempt's rows, -1 for Flink's value before the first round
    start_ms: float
    end_ms: float
    value: object
    # A gauge state's back pressure as Flink sums it, (soft, hard), where the mart has both.
    parts: tuple[float, float] | None = None

    def meets(self, low: int, high: int) -> bool:
        return self.start_ms <= high and self.end_ms > low


@dataclass(frozen=True)
class Miss:
    reading: dict
    candidates: list[State]

    def __str__(self) -> str:
        r = self.reading
        shown = [(s.attempt, s.round_index, s.start_ms, s.value) for s in self.candidates]
        return (
            f"vertex {r['vertex_id']} subtask {r['subtask_index']} (attempt {r['attempt']} by "
            f"REST) read {r['requested_ms']}..{r['received_ms']}: {gauge_value(r)} matches "
            f"none of (attempt, round, from, value) {shown}"
        )


def gauge_value(reading: dict) -> object:
    if "current_input_watermark" in reading:
        return reading["current_input_watermark"]
    return (
        reading["idle_time_ms_per_second"],
        reading["back_pressured_time_ms_per_second"],
        reading["busy_time_ms_per_second"],
    )


def _timeline(
    by_attempt: dict[int, list[tuple[int, object, tuple[float, float] | None]]],
    initial: tuple[tuple[object, tuple[float, float] | None], ...],
    ended: dict[int, int] | None = None,
    restarts: dict[int, int] | None = None,
) -> list[State]:
    """States of one subtask from its attempts' (start_ms, value, parts) rows, sorted per
    attempt; ``initial``: the (value, parts) each attempt shows before its first row.

    A later attempt's initial value is in effect from the previous attempt's last round or, if
    earlier, from the previous attempt's last event (``ended``: a new attempt is deployed only
    once the old one has failed or been cancelled, and its metrics can show before its own first
    event on a slow host) or the job's first event of that attempt, which is no later than the
    attempt's own (``restarts``: the restart deploys all tasks at once; seen on Flink 2.3.0,
    REST showed a task's new attempt 35 ms before its first event, while its old attempt still
    got view updates); the first attempt's from the start (a task's metrics show before its
    first event: seen on a loaded machine).
    Attempts overlap
    around a restart: the old attempt's gauges may still get a view update while the new one
    already runs (seen on Flink 2.2.0 on a loaded machine: attempt 0's last round came 2 s after
    REST showed attempt 1's initial value), so an attempt's last round that comes after the next
    attempt's first round is in effect until REST stops serving it.
    """
    states: list[State] = []
    attempts = sorted(by_attempt)
    for position, attempt in enumerate(attempts):
        rows = by_attempt[attempt]
        following = attempts[position + 1] if position + 1 < len(attempts) else None
        after = by_attempt[following][0][0] if following is not None else math.inf
        before = by_attempt[attempts[position - 1]][-1][0] if position else -math.inf
        if position and ended and attempts[position - 1] in ended:
            before = min(before, ended[attempts[position - 1]])
        if position and restarts and attempt in restarts:
            before = min(before, restarts[attempt])
        states.extend(State(attempt, -1, before, rows[0][0], *shown) for shown in initial)
        for k, (start, value, parts) in enumerate(rows):
            end = rows[k + 1][0] if k + 1 < len(rows) else (after if after > start else math.inf)
            states.append(State(attempt, k, start, end, value, parts))
    return states


def gauge_timelines(
    rows: list[dict],
    started: dict[tuple[str, int, int], int] | None = None,
    ended: dict[tuple[str, int, int], int] | None = None,
) -> dict[Subtask, list[State]]:
    """Per subtask, the states of Flink's three gauges over time, from fct_subtask_flink_gauges;
    ``started`` and ``ended``: each (vertex_id, subtask_index, attempt)'s first and last event
    ``ts_ms``, where known."""
    by_subtask: dict[Subtask, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        busy = row["busy_time_ms_per_second"]
        value = (
            float(row["idle_time_ms_per_second"]),
            float(row["back_pressured_time_ms_per_second"]),
            None if busy is None else float(busy),
        )
        soft = row.get("soft_back_pressured_time_ms_per_second")
        hard = row.get("hard_back_pressured_time_ms_per_second")
        parts = None if soft is None or hard is None else (float(soft), float(hard))
        by_subtask[(row["vertex_id"], row["subtask_index"])][row["attempt"]].append(
            (row["update_ms"], value, parts)
        )
    for attempts in by_subtask.values():
        for rounds in attempts.values():
            rounds.sort(key=lambda r: r[0])
    ends = _per_subtask(ended)
    # A restart deploys every task of its attempt at once: the job's earliest first event of an
    # attempt is when any of its tasks may already show that attempt's metrics.
    restarts: dict[int, int] = {}
    for (_, _, attempt), ts_ms in (started or {}).items():
        restarts[attempt] = min(restarts.get(attempt, ts_ms), ts_ms)
    return {s: _timeline(a, INITIAL_STATES, ends.get(s), restarts) for s, a in by_subtask.items()}


def _per_subtask(moments: dict[tuple[str, int, int], int] | None) -> dict[Subtask, dict[int, int]]:
    out: dict[Subtask, dict[int, int]] = defaultdict(dict)
    for (vertex_id, subtask_index, attempt), ts_ms in (moments or {}).items():
        out[(vertex_id, subtask_index)][attempt] = ts_ms
    return out


def watermark_timelines(rows: list[dict]) -> dict[Subtask, list[State]]:
    """Per subtask, its task's watermark over time, from fct_task_watermarks."""
    by_subtask: dict[Subtask, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        order = (row["valid_from_ms"], row["seq"], row["change_index"])
        by_subtask[(row["vertex_id"], row["subtask_index"])][row["attempt"]].append(
            (order, row["watermark_ms"])
        )
    timelines = {}
    for subtask, attempts in by_subtask.items():
        flat = {a: [(o[0], v, None) for o, v in sorted(changes)] for a, changes in attempts.items()}
        timelines[subtask] = _timeline(flat, ())
    return timelines


def input_watermark_timelines(
    task_rows: list[dict], emission_rows: list[dict]
) -> dict[Subtask, list[State]]:
    """Per subtask, the ``currentInputWatermark`` Flink publishes over time: for a one-input task
    its clock (``fct_task_watermarks``), for a task with several inputs the min of each input's
    last watermark, idle or not (Flink's MinWatermarkGauge over one WatermarkGauge per input,
    set as the input's valve emits a watermark), from ``fct_valve_emissions``."""
    inputs: dict[tuple[str, int], set[int]] = defaultdict(set)
    for row in emission_rows:
        inputs[(row["vertex_id"], row["subtask_index"])].add(row["input_index"])
    several = {subtask for subtask, found in inputs.items() if len(found) > 1}
    timelines = watermark_timelines(
        [r for r in task_rows if (r["vertex_id"], r["subtask_index"]) not in several]
    )
    by_task: dict[tuple[str, int, int], list[dict]] = defaultdict(list)
    for row in emission_rows:
        if (row["vertex_id"], row["subtask_index"]) in several:
            by_task[(row["vertex_id"], row["subtask_index"], row["attempt"])].append(row)
    by_subtask: dict[Subtask, dict[int, list]] = defaultdict(dict)
    for (vertex_id, subtask_index, attempt), rows in by_task.items():
        last = dict.fromkeys(inputs[(vertex_id, subtask_index)], NO_WATERMARK)
        shown, effective, changes = NO_WATERMARK, -math.inf, []
        for row in sorted(rows, key=lambda r: (r["seq"], r["emission_index"], r["input_index"])):
            effective = max(effective, row["ts_ms"])
            if row["kind"] != "watermark":
                continue
            last[row["input_index"]] = row["watermark_ms"]
            if min(last.values()) != shown:
                shown = min(last.values())
                changes.append((effective, shown, None))
        if changes:
            by_subtask[(vertex_id, subtask_index)][attempt] = changes
    for subtask, attempts in by_subtask.items():
        timelines[subtask] = _timeline(attempts, ())
    return timelines


def match(
    readings: list[dict],
    timelines: dict[Subtask, list[State]],
    lag_ms: int,
    straddles: list[tuple[dict, State, State]] | None = None,
) -> tuple[list[tuple[dict, State]], list[Miss]]:
    """(reading, the state it shows) for every matched reading, and the misses.

    Watermark readings of Flink's "no watermark" and readings of closing or closed subtasks are
    left out of both. With ``straddles``, a gauge reading that mixes two consecutive states
    (see the module docstring) is appended there as (reading, earlier, later), not missed.
    """
    matched, missed = [], []
    for reading in readings:
        shown = gauge_value(reading)
        if shown == NO_WATERMARK or reading.get("status") in CLOSED:
            continue
        low, high = reading["requested_ms"] - lag_ms, reading["received_ms"]
        states = timelines.get((reading["vertex_id"], reading["subtask_index"]), [])
        candidates = [s for s in states if s.meets(low, high)]
        # A value that a state of the attempt REST names shows is that attempt's (around a
        # restart the old attempt's round can hold the same value, e.g. 0, 0, 1000).
        equal = [s for s in candidates if s.value == shown]
        hit = next((s for s in equal if s.attempt == reading["attempt"]), None)
        hit = hit or next(iter(equal), None)
        pair = None if hit or straddles is None else _straddled(shown, candidates)
        if pair is not None and straddles is not None:
            straddles.append((reading, *pair))
        elif hit is None:
            missed.append(Miss(reading, candidates))
        else:
            matched.append((reading, hit))
    return matched, missed


def _straddled(shown: object, candidates: list[State]) -> tuple[State, State] | None:
    """Two consecutive states of one attempt whose gauges, one by one, give ``shown``."""
    if not isinstance(shown, tuple):
        return None
    # Before an attempt's first round there are two states (busy time enabled or not yet).
    for earlier, later in itertools.combinations(candidates, 2):
        consecutive = (
            earlier.attempt == later.attempt
            and earlier.round_index + 1 == later.round_index
            and earlier.end_ms == later.start_ms
        )
        if not consecutive:
            continue
        (idle, back_pressure, busy), a, b = shown, earlier.value, later.value
        pressures = {a[1], b[1]}
        if earlier.parts and later.parts:
            # Back pressure is soft + hard (M3), two gauges whose rounds close one by one.
            pressures |= {
                earlier.parts[0] + later.parts[1],
                later.parts[0] + earlier.parts[1],
            }
        if idle in (a[0], b[0]) and back_pressure in pressures and busy in (a[2], b[2]):
            return earlier, later
    return None
