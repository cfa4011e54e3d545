"""A literal Python TimerGauge, and the random job the gauge marts are checked against with it.

The reference follows flink-semantics.md §2 (TimerGauge, newest rules) step by step: a clock,
`markStart`/`markEnd` with T2/T3/T11, `update()` rounds at every multiple of 5000 ms (T4) with
the ring of T5/T6 and the clamp of T12, the accumulated count of T9, and M3/M4/M5 on top. Its one
deliberate difference from Flink is the documented T13 decision: the task's clock is the largest
ts_ms reported so far (docs/gauges.md). Per-second milliseconds come from the same measurements,
cut at second boundaries. The SQL models compute the same things differently (integrating
open/close changes per second, rounds from sums of seconds), so agreement on random streams
checks both.

The job with Flink's default window (60 s) is one more job of the suite's demo lake
(tests/e2e/conftest.py), so its check costs no build of its own.
"""

from __future__ import annotations

import random

import yaml

from tests.e2e.harness import ROOT
from tests.events import timer, vertex, watermark

JOB_ID = "literal-gauges"
PROJECT_WINDOW_S: int = yaml.safe_load((ROOT / "dbt_project.yml").read_text())["vars"][
    "flink_gauge_window_s"
]
"""The project's `flink_gauge_window_s`, which the demo lake is built with."""

GAUGES = ("idle", "soft_backpressured", "hard_backpressured")
BASE_MS = 1_704_067_197_300


class TimerGauge:
    """flink-semantics.md §2.2 (newest code, FLINK-35764 fixed), with a caller-supplied clock."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.count = 0
        self.start_ts = 0
        self.upd_ts = 0
        self.ring = [0] * slots
        self.index = 0
        self.full = False
        self.value = 0
        self.accumulated = 0

    def mark_start(self, now: int) -> None:  # T2
        if self.start_ts != 0:
            return
        self.start_ts = self.upd_ts = now

    def mark_end(self, now: int) -> None:  # T3
        if self.start_ts == 0:
            return
        self.count += now - self.upd_ts
        self.accumulated += now - self.upd_ts
        self.start_ts = self.upd_ts = 0

    def update(self, now: int) -> None:  # T4, T6
        if self.start_ts != 0:
            self.count += now - self.upd_ts
            self.accumulated += now - self.upd_ts
            self.upd_ts = now
        if self.index == self.slots - 1:
            self.full = True
        self.ring[self.index] = self.count
        self.index = (self.index + 1) % self.slots
        k = self.slots if self.full else self.index
        total = sum(self.ring[:k])
        self.value = max(0, min(int(total / (5 * k)), 1000))  # truncates toward zero
        self.count = 0


def reference(events: list[dict], busy_enabled: bool, slots: int) -> tuple[dict, dict]:
    """(seconds, rounds) of one task: {second: {gauge: ms}}, {round: published values}."""
    events = sorted(events, key=lambda e: e["seq"])
    first, horizon = min(e["ts_ms"] for e in events), max(e["ts_ms"] for e in events)
    clock, timeline = None, []
    for event in events:
        clock = event["ts_ms"] if clock is None else max(clock, event["ts_ms"])
        timeline.append((clock, event))
    # Per-second milliseconds from the measurements (T2/T3/T11, open ones up to the horizon).
    seconds: dict[int, dict[str, int]] = {
        s: dict.fromkeys(GAUGES, 0) for s in range(first - first % 1000, horizon + 1, 1000)
    }
    open_since: dict[str, int | None] = dict.fromkeys(GAUGES, None)

    def add(gauge: str, start: int, end: int) -> None:
        for second in range(start - start % 1000, end, 1000):
            seconds[second][gauge] += max(0, min(end, second + 1000) - max(start, second))

    for clock, event in timeline:
        if event["type"] != "timer":
            continue
        gauge = "soft_backpressured" if event["timer"] == "backpressured" else event["timer"]
        if event["action"] == "start" and open_since[gauge] is None:
            open_since[gauge] = clock
        elif event["action"] == "end" and open_since[gauge] is not None:
            add(gauge, open_since[gauge], clock)
            open_since[gauge] = None
    for gauge, since in open_since.items():
        if since is not None:
            add(gauge, since, horizon)
    # Flink's gauges: update rounds between events, a round at an event's ms first (V1, T4).
    gauges = {g: TimerGauge(slots) for g in GAUGES}
    rounds = {}
    next_round = first + (-first) % 5000

    def run_rounds(until: int) -> None:
        nonlocal next_round
        while next_round <= until:
            for gauge in gauges.values():
                gauge.update(next_round)
            idle, soft, hard = (gauges[g].value for g in GAUGES)
            back_pressured = soft + hard  # M3
            rounds[next_round] = {
                "idle": idle,
                "soft": soft,
                "hard": hard,
                "back_pressured": back_pressured,
                "busy": (1000.0 - min(idle + back_pressured, 1000)) if busy_enabled else None,
                "acc_idle": gauges["idle"].accumulated,
                "acc_bp": gauges["soft_backpressured"].accumulated
                + gauges["hard_backpressured"].accumulated,
            }
            next_round += 5000

    for clock, event in timeline:
        run_rounds(clock)
        if event["type"] == "timer":
            gauge = "soft_backpressured" if event["timer"] == "backpressured" else event["timer"]
            if event["action"] == "start":
                gauges[gauge].mark_start(clock)
            else:
                gauges[gauge].mark_end(clock)
    run_rounds(horizon)
    return seconds, rounds


def random_task(rng: random.Random, key: dict, start_ms: int) -> list[dict]:
    seq, ts, events = rng.randint(0, 5), start_ms, []
    for _ in range(rng.randint(30, 160)):
        seq += rng.randint(1, 2)
        ts += rng.choice((0, rng.randint(0, 400), rng.randint(0, 3000), -rng.randint(0, 900)))
        if rng.random() < 0.15:
            events.append(watermark(seq, ts_ms=ts, **key))
        else:
            name = rng.choice(("idle", "soft_backpressured", "hard_backpressured", "backpressured"))
            action = rng.choice(("start", "start", "end"))
            events.append(timer(seq, ts_ms=ts, timer=name, action=action, **key))
    return events


def literal_job(window_s: int) -> tuple[dict[tuple, list[dict]], dict[str, bool], list[dict]]:
    """The random job checked with window ``window_s``: its tasks' events by (job, vertex,
    subtask, attempt), whether each vertex measures busy time, and every record to ingest."""
    rng = random.Random(20240101 + window_s)
    tasks = {}
    for vertex_id in ("source", "map"):
        for subtask in (0, 1):
            for attempt in (0, 1) if subtask == 0 else (0,):
                key = {
                    "job_id": JOB_ID,
                    "vertex_id": vertex_id,
                    "subtask_index": subtask,
                    "attempt": attempt,
                }
                start = BASE_MS + rng.randint(0, 6000) + attempt * 40_000
                tasks[tuple(key.values())] = random_task(rng, key, start)
    busy = {"source": False, "map": True}
    records = [e for events in tasks.values() for e in events]
    rng.shuffle(records)
    records += [
        vertex(job_id=JOB_ID, vertex_id="source", busy_time_enabled=False, upstream_vertex_ids=[]),
        vertex(job_id=JOB_ID, vertex_id="map", busy_time_enabled=True),
    ]
    return tasks, busy, records
