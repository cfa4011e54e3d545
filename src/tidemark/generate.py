"""Synthetic Flink runtime events for named scenarios (``tidemark generate``).

The generator simulates a three-vertex streaming job, ``source -> map -> sink`` (all-to-all edges,
parallelism :data:`PARALLELISM`, 2/4/2), and writes the runtime events such a job would report,
valid under the event contract (``contract.md`` section 1), into one directory:

* ``graph.jsonl``: one ``vertex`` record per vertex;
* ``events-00000.jsonl``, ``events-00001.jsonl``, ...: at most :data:`MAX_LINES_PER_FILE` lines
  each, mixing ``timer``, ``watermark`` and ``watermark_status`` records in rough arrival order
  (``ts_ms`` plus up to 300 ms of delivery jitter, so a task's lines are not always in ``seq``
  order);
* ``manifest.json``: the parameters, the job graph, every task attempt with its time range, the
  run's ``epoch_start_ms`` / ``epoch_end_ms`` and the ground truth under ``truth``:
  ``throttle_windows`` (``[start_ms, end_ms)`` pairs), ``stopped_source`` (subtask, ``stop_ms``,
  ``resume_ms`` and when it sent ``IDLE`` / ``ACTIVE``), ``hot_subtask`` and ``failure``
  (subtask, ``failure_ms``, ``restart_ms``) and ``bottleneck`` (the vertex, and subtask if one,
  that causes the back pressure); the keys that do not apply are empty or null.

The output is a pure function of ``(scenario, seed, scale)``: byte-identical on every run. The
job and vertex ids are 32 hex characters derived from it.

Simulation
----------
A fluid queue model advances in :data:`STEP_MS` steps. Every channel (one per upstream and
downstream subtask pair) has a small buffer; every subtask has a processing capacity in
records/s; each source subtask reads a demand it cannot always serve (the rest is lag, which it
catches up later at full capacity). In each step a subtask is limited by its capacity (busy), by
its input (idle for the unused part of the step) or by full buffers downstream (back-pressured
for the unused part). The blocked part of a step is laid out as one to three intervals, as a
task waking up for arriving buffers would show; blocked time of one kind that continues into the
next step is one measurement. From those intervals follow the TimerGauge events
(flink-semantics.md section 3, M9): at most one timer is open per task at any time, so starts and
ends alternate per gauge and idle never overlaps back pressure; a state still open at the end of
the run (or at a task failure) stays open. About one back-pressured interval in ten is a
``hard_backpressured`` one (a blocking buffer request), and one source or map subtask per job
reports back pressure under the Flink <= 1.14 name ``backpressured`` (``legacy_timer_tasks`` in
the manifest).

Watermarks: every source subtask has an event-time clock, processing time minus a bounded random
delay (2.4 to 3.2 s) minus its current lag. Every :data:`WATERMARK_INTERVAL_MS` it sends its
watermark, when it has advanced, to every map subtask (input 0, channel = source subtask), which
receives it 1 to 19 ms later, in channel order. About 0.3 % of the watermarks on a channel are
followed by a stale, lower one, which Flink ignores (W2). A source that stops producing sends
``IDLE`` on all its channels at its next tick, no watermark until it resumes, then ``ACTIVE``.
Each map subtask runs an exact StatusWatermarkValve (W1-W4, S1-S3) over its input and forwards
every watermark and status it emits to every sink subtask (channel = map subtask), so the sinks
see the min over the map's non-idle inputs.

Scenarios
---------
Every scenario runs ``scale * 150`` simulated seconds from :data:`EPOCH_START_MS`
(2024-01-01T00:00:00Z). Total capacity is 10,000 records/s for the sources, 15,000 for the maps
and 12,000 for the sinks.

``steady``
    Sources at 40 % of capacity; idle time everywhere, no back pressure.
``backpressure``
    Sources at 60 % of capacity; every sink subtask is throttled to 30 % of its capacity in two
    windows per 150 s cycle, ``[20 s, 50 s)`` and ``[80 s, 115 s)`` (so ``2 * scale`` windows).
    Map and source back pressure starts within about 0.5 s of a throttle and ends within about
    0.5 s of the release; there is none outside the windows, and none on the sinks. After each
    window the sources catch up on their lag at full capacity (busy, not back-pressured).
``idle-source``
    Like ``steady``, but one source subtask stops producing from 40 % to 65 % of the run.
``skew``
    Sources at 60 %; a hot key routes 90 % of every source's records to one map subtask, which is
    busy all the time and back-pressures the sources; the other map subtasks are mostly idle.
``restart``
    Sources at 50 %; one map subtask fails half-way through (plus up to 1 s). Its attempt 0
    events stop at the failure; attempt 1 (``seq`` from 0 again, fresh valve state) starts 5 to
    7 s later and runs to the end. While it is down, the sources are back-pressured.
``legacy-source``
    Like ``steady`` (the same kind of events, idle time on the sources included), but the source
    vertex is a legacy SourceFunction: ``busy_time_enabled`` is false in its vertex record, so
    its busy time is NaN in Flink and NULL in the marts.

Size and speed
--------------
One scale unit is about 92,000 (``backpressure``) to 110,000 (``steady``) lines of about 200
bytes; scale 50 gives 4.6 to 5.5 million lines (about 1 GB). The simulation is mostly vectorised
(the per-step loop runs only while something is congested) and the lines are built as byte
matrices with numpy and written by a second thread: about 1.5 to 2 million events per second of
CPU time, i.e. 3 to 4 s for 5 million events.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BASE_DURATION_MS",
    "EPOCH_START_MS",
    "MAX_LINES_PER_FILE",
    "PARALLELISM",
    "SCENARIOS",
    "GenerateResult",
    "generate",
]

SCENARIOS: tuple[str, ...] = (
    "steady",
    "backpressure",
    "idle-source",
    "skew",
    "restart",
    "legacy-source",
)

EPOCH_START_MS: Final = 1_704_067_200_000
"""First millisecond of every run: 2024-01-01T00:00:00Z."""
BASE_DURATION_MS: Final = 150_000
"""Simulated time per scale unit."""
STEP_MS: Final = 50
"""Time step of the queue model."""
WATERMARK_INTERVAL_MS: Final = 200
"""Periodic watermark interval of the sources (Flink's ``autoWatermarkInterval`` default)."""
MAX_LINES_PER_FILE: int = 1_000_000
"""Most lines in one ``events-NNNNN.jsonl`` file."""
PARALLELISM: tuple[int, int, int] = (2, 4, 2)
"""Parallelism of the source, map and sink vertices (read at each call)."""

GRAPH_FILE: Final = "graph.jsonl"
MANIFEST_FILE: Final = "manifest.json"
_EVENTS_FILE_RE: Final = re.compile(r"events-\d{5}\.jsonl")

_SOURCE_CAPACITY: Final = 10_000.0  # records/s, whole vertex
_MAP_CAPACITY: Final = 15_000.0
_SINK_CAPACITY: Final = 12_000.0
_BUFFER_STEPS: Final = 2.0  # a vertex's input buffers hold 2 steps of full source output
_WATERMARK_BOUND_MS: Final = 2_000  # bounded out-of-orderness of the sources
_WATERMARK_JITTER_MS: Final = 800
_STALE_WATERMARK_P: Final = 0.003
_HARD_BACKPRESSURE_P: Final = 0.1
_ARRIVAL_JITTER_MS: Final = 300
_WRITE_CHUNK: Final = 100_000
_LONG_MIN: Final = -(2**63)

# Timer tail codes: 2 * name + action, action 0 = start, 1 = end.
_TIMER_NAMES: Final = ("idle", "soft_backpressured", "hard_backpressured", "backpressured")
_IDLE, _SOFT, _HARD, _LEGACY = 1, 2, 3, 4  # run kinds; 0 is busy

_ROLE_SOURCE, _ROLE_MAP, _ROLE_SINK = 0, 1, 2
_DOWN: Final = -1  # step code of a task that is not running


@dataclass(frozen=True)
class GenerateResult:
    """What :func:`generate` wrote.

    ``files`` are the JSON Lines files in write order (``graph.jsonl`` first, then the
    ``events-*.jsonl`` files); ``events`` is the number of lines in them, vertex records included
    (what ``tidemark ingest`` should account for); ``manifest`` is the ``manifest.json`` path.
    """

    files: list[Path]
    events: int
    manifest: Path


@dataclass(frozen=True)
class _Plan:
    """Everything about one run that is fixed before the simulation."""

    scenario: str
    seed: int
    scale: int
    parallelism: tuple[int, int, int]
    job_id: str
    vertex_ids: tuple[str, str, str]
    n_steps: int
    load: float
    throttle_windows: list[tuple[int, int]]  # step ranges
    throttle_factor: float
    stopped_source: int | None
    stop_steps: tuple[int, int]
    hot_map: int | None
    hot_share: float
    failed_map: int | None
    fail_steps: tuple[int, int]  # (failure step, restart step)
    legacy_task: tuple[int, int]  # (role, subtask) that uses the `backpressured` name
    source_busy_time_enabled: bool

    @property
    def start_ms(self) -> int:
        return EPOCH_START_MS

    @property
    def end_ms(self) -> int:
        return EPOCH_START_MS + self.n_steps * STEP_MS

    def step_ms(self, step: int) -> int:
        return EPOCH_START_MS + step * STEP_MS


@dataclass
class _Task:
    """One task attempt and the events it reports (filled in stage by stage)."""

    role: int
    subtask: int
    attempt: int
    first_step: int
    last_step: int  # exclusive
    ts: list[NDArray[np.int64]] = field(default_factory=list)
    code: list[NDArray[np.int64]] = field(default_factory=list)
    val: list[NDArray[np.int64]] = field(default_factory=list)

    @property
    def start_ms(self) -> int:
        return EPOCH_START_MS + self.first_step * STEP_MS

    @property
    def end_ms(self) -> int:
        return EPOCH_START_MS + self.last_step * STEP_MS


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------


def generate(scenario: str, out_dir: Path, *, seed: int = 0, scale: int = 1) -> GenerateResult:
    """Write the event files of ``scenario`` into ``out_dir`` and return what was written.

    ``seed`` (>= 0) picks the random run, ``scale`` (>= 1) multiplies the simulated time and so
    the number of events (92k to 110k lines per unit, see the module docstring). ``out_dir``
    is created if missing; it may already hold the output of an earlier run (``graph.jsonl``,
    ``events-NNNNN.jsonl``, ``manifest.json``), which is replaced, but nothing else.

    Raises :class:`ValueError` for an unknown scenario, a bad seed or scale, or an output
    directory holding other files.
    """
    seed, scale = _check_args(scenario, seed, scale)
    out_dir = Path(out_dir)
    _prepare_out_dir(out_dir)
    plan = _make_plan(scenario, seed, scale)
    rng = np.random.default_rng(np.random.SeedSequence([seed, SCENARIOS.index(scenario), scale]))

    steps, lag_ms = _simulate_queues(plan, rng)
    tasks = _make_tasks(plan)
    tails, status_base, wm_base, wm_start = _tail_table(plan)
    for task in tasks:
        _add_timer_events(task, steps[(task.role, task.subtask)], plan, rng)
    stopped_truth = _add_watermark_events(plan, tasks, lag_ms, rng, status_base, wm_base)

    graph_path = out_dir / GRAPH_FILE
    graph_path.write_text(
        "".join(json.dumps(v, separators=(",", ":")) + "\n" for v in _vertex_records(plan)),
        encoding="utf-8",
        newline="\n",
    )
    event_files, counts = _write_events(plan, tasks, tails, wm_start, out_dir, rng)
    files = [graph_path, *event_files]
    n_lines = 3 + sum(counts.values())

    manifest = _manifest(plan, tasks, files, counts, n_lines, stopped_truth)
    manifest_path = out_dir / MANIFEST_FILE
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8", newline="\n")
    return GenerateResult(files=files, events=n_lines, manifest=manifest_path)


def _check_args(scenario: str, seed: int, scale: int) -> tuple[int, int]:
    """Validate the arguments; return seed and scale as plain ints."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(SCENARIOS)}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if isinstance(scale, bool) or not isinstance(scale, numbers.Integral) or scale < 1:
        raise ValueError(f"scale must be an integer >= 1, got {scale!r}")
    return int(seed), int(scale)


def _is_own_output(name: str) -> bool:
    return name in (GRAPH_FILE, MANIFEST_FILE) or _EVENTS_FILE_RE.fullmatch(name) is not None


def _prepare_out_dir(out_dir: Path) -> None:
    """Create ``out_dir`` or clear an earlier generator output from it; refuse anything else."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"output path {str(out_dir)!r} exists and is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = sorted(out_dir.iterdir())
    foreign = [p.name for p in entries if not (p.is_file() and _is_own_output(p.name))]
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise ValueError(
            f"output directory {str(out_dir)!r} is not empty and holds files the generator did "
            f"not write ({shown}); choose an empty or new directory"
        )
    for p in entries:
        p.unlink()


# --------------------------------------------------------------------------------------------
# Plan: ids, phases, ground truth
# --------------------------------------------------------------------------------------------


def _hex_id(*parts: object) -> str:
    text = "/".join(str(p) for p in ("tidemark-generate", *parts))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _make_plan(scenario: str, seed: int, scale: int) -> _Plan:
    parallelism = PARALLELISM
    ps, pm, _ = parallelism
    # A separate stream for the plan, so the phases do not shift with simulation details.
    prng = np.random.default_rng(np.random.SeedSequence([seed, SCENARIOS.index(scenario), 7]))
    n_steps = scale * BASE_DURATION_MS // STEP_MS
    cycle = BASE_DURATION_MS // STEP_MS
    s = 1000 // STEP_MS  # steps per second

    load = {"backpressure": 0.6, "skew": 0.6, "restart": 0.5}.get(scenario, 0.4)
    windows: list[tuple[int, int]] = []
    if scenario == "backpressure":
        for c in range(scale):
            windows += [(c * cycle + 20 * s, c * cycle + 50 * s)]
            windows += [(c * cycle + 80 * s, c * cycle + 115 * s)]
    stopped = int(prng.integers(ps)) if scenario == "idle-source" else None
    stop_steps = (round(0.40 * n_steps), round(0.65 * n_steps)) if stopped is not None else (0, 0)
    hot = int(prng.integers(pm)) if scenario == "skew" else None
    failed = int(prng.integers(pm)) if scenario == "restart" else None
    fail_steps = (0, 0)
    if failed is not None:
        fail = n_steps // 2 + int(prng.integers(0, s))
        fail_steps = (fail, fail + 5 * s + int(prng.integers(0, 2 * s)))
    legacy_role = int(prng.integers(2))
    legacy_task = (legacy_role, int(prng.integers((ps, pm)[legacy_role])))
    names = ("source", "map", "sink")
    return _Plan(
        scenario=scenario,
        seed=seed,
        scale=scale,
        parallelism=parallelism,
        job_id=_hex_id(scenario, seed, scale, "job"),
        vertex_ids=(
            _hex_id(scenario, seed, scale, "vertex", names[0]),
            _hex_id(scenario, seed, scale, "vertex", names[1]),
            _hex_id(scenario, seed, scale, "vertex", names[2]),
        ),
        n_steps=n_steps,
        load=load,
        throttle_windows=windows,
        throttle_factor=0.3,
        stopped_source=stopped,
        stop_steps=stop_steps,
        hot_map=hot,
        hot_share=0.9,
        failed_map=failed,
        fail_steps=fail_steps,
        legacy_task=legacy_task,
        source_busy_time_enabled=scenario != "legacy-source",
    )


def _vertex_records(plan: _Plan) -> list[dict[str, Any]]:
    names = ("Source: synthetic-events", "Map: enrich", "Sink: delta-writer")
    out = []
    for role in range(3):
        out.append(
            {
                "type": "vertex",
                "job_id": plan.job_id,
                "vertex_id": plan.vertex_ids[role],
                "vertex_name": names[role],
                "parallelism": plan.parallelism[role],
                "busy_time_enabled": plan.source_busy_time_enabled if role == 0 else True,
                "upstream_vertex_ids": [plan.vertex_ids[role - 1]] if role else [],
            }
        )
    return out


def _make_tasks(plan: _Plan) -> list[_Task]:
    tasks: list[_Task] = []
    for role, par in enumerate(plan.parallelism):
        for sub in range(par):
            if role == _ROLE_MAP and sub == plan.failed_map:
                fail, restart = plan.fail_steps
                tasks.append(_Task(role, sub, 0, 0, fail))
                tasks.append(_Task(role, sub, 1, restart, plan.n_steps))
            else:
                tasks.append(_Task(role, sub, 0, 0, plan.n_steps))
    return tasks


# --------------------------------------------------------------------------------------------
# Queue model
# --------------------------------------------------------------------------------------------


def _smooth_noise(rng: np.random.Generator, n: int, sd: float, knot_steps: int) -> NDArray[Any]:
    """Slowly varying noise around 1: random knots every ``knot_steps``, linearly interpolated."""
    knots = 1.0 + sd * rng.standard_normal(n // knot_steps + 2)
    return np.interp(np.arange(n) / knot_steps, np.arange(knots.size), knots)


def _blocked_ms(p: NDArray[Any], c: NDArray[Any]) -> NDArray[np.int64]:
    """Milliseconds of a step not used when processing ``p`` of capacity ``c``."""
    return np.floor((1.0 - np.minimum(p / c, 1.0)) * STEP_MS + 0.5).astype(np.int64)


class _QueueModel:
    """The fluid model of the job, one :data:`STEP_MS` step at a time.

    Every channel holds a few steps of records at most. In a step the sinks consume from their
    channels, then the maps move records from theirs into the sinks' channels, then the sources
    read demand plus lag into the maps' channels. A task processes ``p = min(available,
    capacity, room downstream)``; the unused part of the step is idle if input was the limit and
    back-pressured if room downstream was.

    While nothing is congested (no lag, every task keeps up, no full channel) every task simply
    processes what arrived in the previous step, which :meth:`_free` computes with numpy for a
    whole block of steps; only congested stretches run through the exact per-step loop
    (:meth:`_exact`).
    """

    _FREE_BLOCK = 4096
    _CLEAN_STEPS = 20  # clean steps before the exact loop hands back to the vectorised one

    def __init__(self, plan: _Plan, rng: np.random.Generator) -> None:
        ps, pm, pk = plan.parallelism
        n = plan.n_steps
        dt = STEP_MS / 1000.0
        self.plan = plan
        self.n = n
        src_nominal = _SOURCE_CAPACITY / ps * dt  # records per step
        self.src_cap = src_nominal * np.clip(1 + 0.02 * rng.standard_normal((ps, n)), 0.95, 1.05)
        self.demand_rate = plan.load * src_nominal
        demand = np.empty((ps, n))
        for i in range(ps):
            noise = _smooth_noise(rng, n, 0.08, 20) * (1 + 0.1 * rng.standard_normal(n))
            demand[i] = self.demand_rate * np.clip(noise, 0.6, 1.4)
            if i == plan.stopped_source:
                demand[i, plan.stop_steps[0] : plan.stop_steps[1]] = 0.0
        self.demand = demand
        self.map_cap = (_MAP_CAPACITY / pm * dt) * np.clip(
            1 + 0.03 * rng.standard_normal((pm, n)), 0.9, 1.1
        )
        throttle = np.ones(n)
        for a, b in plan.throttle_windows:
            throttle[a:b] = plan.throttle_factor
        self.sink_cap = (_SINK_CAPACITY / pk * dt) * (
            throttle * np.clip(1 + 0.02 * rng.standard_normal((pk, n)), 0.95, 1.05)
        )
        self.map_up = np.ones((pm, n), dtype=bool)
        self.restart_step = -1
        if plan.failed_map is not None:
            self.map_up[plan.failed_map, plan.fail_steps[0] : plan.fail_steps[1]] = False
            self.restart_step = plan.fail_steps[1]
        share = np.full((ps, pm), 1.0 / pm)  # source i -> map j
        if plan.hot_map is not None and pm > 1:
            share[:] = (1.0 - plan.hot_share) / (pm - 1)
            share[:, plan.hot_map] = plan.hot_share
        self.share = share
        self.q_map = _BUFFER_STEPS * _SOURCE_CAPACITY * dt / (ps * pm)  # one channel's room
        self.q_sink = _BUFFER_STEPS * _SOURCE_CAPACITY * dt / (pm * pk)
        self.src_code = np.zeros((ps, n), dtype=np.int64)
        self.map_code = np.zeros((pm, n), dtype=np.int64)
        self.sink_code = np.zeros((pk, n), dtype=np.int64)
        self.backlog = np.zeros((ps, n))

    def run(self) -> None:
        ps, pm, _ = self.plan.parallelism
        t = 0
        pushed_src = np.zeros(ps)  # what each source pushed in the previous step
        pushed_map = np.zeros(pm)  # what each map pushed in the previous step
        while t < self.n:
            t, pushed_src, pushed_map, congested = self._free(t, pushed_src, pushed_map)
            if congested:
                t, pushed_src, pushed_map = self._exact(t, pushed_src, pushed_map)

    def _free(
        self, t0: int, pushed_src: NDArray[Any], pushed_map: NDArray[Any]
    ) -> tuple[int, NDArray[Any], NDArray[Any], bool]:
        """Vectorised steps from ``t0`` until the first congested one (or a block end)."""
        pk = self.plan.parallelism[2]
        t1 = min(self.n, t0 + self._FREE_BLOCK)
        d = self.demand[:, t0:t1]
        prev_src = np.concatenate([pushed_src[:, None], d[:, :-1]], axis=1)
        a_map = self.share.T @ prev_src
        prev_map = np.concatenate([pushed_map[:, None], a_map[:, :-1]], axis=1)
        a_sink = prev_map.sum(axis=0) / pk
        sc, mc, kc = self.src_cap[:, t0:t1], self.map_cap[:, t0:t1], self.sink_cap[:, t0:t1]
        ok = (d <= sc).all(axis=0)
        ok &= (d * self.share.max(axis=1)[:, None] <= self.q_map).all(axis=0)
        ok &= (a_map <= mc).all(axis=0) & self.map_up[:, t0:t1].all(axis=0)
        ok &= (a_map / pk <= self.q_sink).all(axis=0)
        ok &= (a_sink[None, :] <= kc).all(axis=0)
        bad = np.flatnonzero(~ok)
        m = int(bad[0]) if bad.size else t1 - t0
        end = t0 + m
        self.src_code[:, t0:end] = _blocked_ms(d[:, :m], sc[:, :m])
        self.map_code[:, t0:end] = _blocked_ms(a_map[:, :m], mc[:, :m])
        self.sink_code[:, t0:end] = _blocked_ms(
            np.broadcast_to(a_sink[:m], kc[:, :m].shape), kc[:, :m]
        )
        if bad.size:
            return end, prev_src[:, m], prev_map[:, m], True
        return end, d[:, -1].copy(), a_map[:, -1].copy(), False

    def _exact(
        self, t0: int, pushed_src: NDArray[Any], pushed_map: NDArray[Any]
    ) -> tuple[int, NDArray[Any], NDArray[Any]]:
        """The per-step loop from ``t0`` until the job has been uncongested for a while."""
        plan = self.plan
        ps, pm, pk = plan.parallelism
        rp, rm, rk = range(ps), range(pm), range(pk)
        step_ms = float(STEP_MS)
        share = self.share.tolist()
        q_map, q_sink = self.q_map, self.q_sink
        # Channel contents: qm[j][i] source i -> map j, qs[k][j] map j -> sink k.
        src_prev, map_prev = pushed_src.tolist(), pushed_map.tolist()  # Python floats: faster
        qm = [[src_prev[i] * share[i][j] for i in rp] for j in rm]
        qs = [[map_prev[j] / pk for j in rm] for _ in rk]
        failed = plan.failed_map
        backlog = [0.0] * ps
        zeros_m = [0.0] * pm
        src_codes: list[list[int]] = [[] for _ in rp]
        map_codes: list[list[int]] = [[] for _ in rm]
        sink_codes: list[list[int]] = [[] for _ in rk]
        backlogs: list[list[float]] = [[] for _ in rp]
        t = t0
        clean_run = 0
        p_src = [0.0] * ps
        p_map = [0.0] * pm
        chunk = self._FREE_BLOCK
        while t < self.n and clean_run < self._CLEAN_STEPS:
            t_end = min(self.n, t + chunk)
            demand = self.demand[:, t:t_end].tolist()
            src_cap = self.src_cap[:, t:t_end].tolist()
            map_cap = self.map_cap[:, t:t_end].tolist()
            sink_cap = self.sink_cap[:, t:t_end].tolist()
            map_up = self.map_up[:, t:t_end].tolist()
            restart_u = self.restart_step - t
            for u in range(t_end - t):
                clean = True
                # Sinks consume what is buffered (no output, so never back-pressured).
                for k in rk:
                    col = qs[k]
                    a = sum(col)
                    c = sink_cap[k][u]
                    if a > c:
                        f = 1.0 - c / a
                        qs[k] = [x * f for x in col]
                        sink_codes[k].append(0)
                        clean = False
                    else:
                        qs[k] = zeros_m[:]
                        sink_codes[k].append(int((1.0 - a / c) * step_ms + 0.5))
                # Maps move records from their channels into the sinks' channels.
                for j in rm:
                    if not map_up[j][u]:
                        map_codes[j].append(_DOWN)
                        p_map[j] = 0.0
                        clean = False
                        continue
                    col = qm[j]
                    if u == restart_u and j == failed:
                        col = qm[j] = [0.0] * ps
                    a = sum(col)
                    fullest = 0.0
                    for k in rk:
                        x = qs[k][j]
                        if x > fullest:
                            fullest = x
                    o = (q_sink - fullest) * pk
                    c = map_cap[j][u]
                    p = a if a < c else c
                    if o < p:
                        p = o if o > 0.0 else 0.0
                        code = 100 + int((1.0 - p / c) * step_ms + 0.5)
                    else:
                        code = int((1.0 - p / c) * step_ms + 0.5)
                    if p < a:
                        f = 1.0 - p / a
                        qm[j] = [x * f for x in col]
                        clean = False
                    else:
                        qm[j] = [0.0] * ps
                    add = p / pk
                    for k in rk:
                        qs[k][j] += add
                    p_map[j] = p
                    map_codes[j].append(0 if code == 100 else code)
                # Sources read demand plus lag and push it into the maps' channels.
                for i in rp:
                    a = backlog[i] + demand[i][u]
                    sh = share[i]
                    o = a + 1.0
                    for j in rm:
                        room = (q_map - qm[j][i]) / sh[j]
                        if room < o:
                            o = room
                    c = src_cap[i][u]
                    p = a if a < c else c
                    if o < p:
                        p = o if o > 0.0 else 0.0
                        code = 100 + int((1.0 - p / c) * step_ms + 0.5)
                    else:
                        code = int((1.0 - p / c) * step_ms + 0.5)
                    for j in rm:
                        qm[j][i] += p * sh[j]
                    rest = a - p
                    if rest > 1e-9:
                        clean = False
                    else:
                        rest = 0.0
                    backlog[i] = rest
                    backlogs[i].append(rest)
                    p_src[i] = p
                    src_codes[i].append(0 if code == 100 else code)
                clean_run = clean_run + 1 if clean else 0
                if clean_run >= self._CLEAN_STEPS:
                    t_end = t + u + 1
                    break
            t = t_end
        self.src_code[:, t0:t] = src_codes
        self.map_code[:, t0:t] = map_codes
        self.sink_code[:, t0:t] = sink_codes
        self.backlog[:, t0:t] = backlogs
        return t, np.asarray(p_src), np.asarray(p_map)


def _simulate_queues(
    plan: _Plan, rng: np.random.Generator
) -> tuple[dict[tuple[int, int], NDArray[np.int64]], list[NDArray[np.float64]]]:
    """Run the fluid model; return per (role, subtask) step codes and per source lag (ms).

    A step code is ``b`` (0..STEP_MS) for a step with ``b`` idle ms, ``100 + b`` for a step with
    ``b`` back-pressured ms, or ``-1`` while the task is down.
    """
    model = _QueueModel(plan, rng)
    model.run()
    steps: dict[tuple[int, int], NDArray[np.int64]] = {}
    for role, codes in enumerate((model.src_code, model.map_code, model.sink_code)):
        for sub in range(codes.shape[0]):
            steps[(role, sub)] = codes[sub]
    lag_ms = [row / model.demand_rate * STEP_MS for row in model.backlog]
    return steps, lag_ms


# --------------------------------------------------------------------------------------------
# Timer events
# --------------------------------------------------------------------------------------------


def _compose(
    totals: NDArray[np.int64],
    counts: NDArray[np.int64],
    mins: NDArray[np.int64],
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """Split each ``totals[g]`` into ``counts[g] >= 1`` random integer parts ``>= mins``.

    ``mins`` has one entry per part (groups laid out one after the other); the parts of a group
    sum to its total. Requires ``totals[g] >= sum of its mins``.
    """
    ends = np.cumsum(counts)
    starts = ends - counts
    rem = totals - np.add.reduceat(mins, starts)
    w = rng.random(int(ends[-1])) + 0.05
    cw = np.cumsum(w)
    before = cw[starts] - w[starts]
    gsum = cw[ends - 1] - before
    frac = (cw - np.repeat(before, counts)) / np.repeat(gsum, counts)
    rem_rep = np.repeat(rem, counts)
    cut = np.minimum(np.floor(rem_rep * frac).astype(np.int64), rem_rep)
    cut[ends - 1] = rem
    prev = np.empty_like(cut)
    prev[0] = 0
    prev[1:] = cut[:-1]
    prev[starts] = 0
    return cut - prev + mins


def _add_timer_events(
    task: _Task, step_codes: NDArray[np.int64], plan: _Plan, rng: np.random.Generator
) -> None:
    """Lay out the task's blocked time inside each step and append its TimerGauge events."""
    codes = step_codes[task.first_step : task.last_step]
    n = codes.size
    if n == 0:
        return
    bp = codes >= 100
    blocked = np.where(bp, codes - 100, codes)
    kind = np.where(bp, _SOFT, _IDLE)
    busy = STEP_MS - blocked
    pieces = rng.integers(1, 4, size=n)
    pieces = np.minimum(pieces, np.minimum(blocked, busy + 1))  # parts >= 1 ms, inner gaps >= 1
    n_runs = 2 * pieces + 1  # busy, blocked, busy, ..., blocked, busy
    run_first = np.cumsum(n_runs) - n_runs
    total = int(n_runs.sum())
    pos = np.arange(total) - np.repeat(run_first, n_runs)
    step_of = np.repeat(np.arange(n), n_runs)
    even = pos % 2 == 0

    lengths = np.empty(total, dtype=np.int64)
    q = pos[even] // 2
    k_even = pieces[step_of[even]]
    busy_mins = ((q > 0) & (q < k_even)).astype(np.int64)
    lengths[even] = _compose(busy, pieces + 1, busy_mins, rng)
    has = pieces > 0
    if has.any():
        lengths[~even] = _compose(
            blocked[has], pieces[has], np.ones(int(pieces.sum()), np.int64), rng
        )
    kinds = np.zeros(total, dtype=np.int64)
    odd_kind = kind[step_of[~even]]
    hard = (odd_kind == _SOFT) & (rng.random(odd_kind.size) < _HARD_BACKPRESSURE_P)
    kinds[~even] = np.where(hard, _HARD, odd_kind)
    if (task.role, task.subtask) == plan.legacy_task:
        kinds[kinds >= _SOFT] = _LEGACY

    nz = lengths > 0
    lengths, kinds = lengths[nz], kinds[nz]
    starts = task.start_ms + np.cumsum(lengths) - lengths
    keep = np.ones(kinds.size, dtype=bool)
    keep[1:] = kinds[1:] != kinds[:-1]
    k_run, t_run = kinds[keep], starts[keep]
    prev = np.zeros_like(k_run)
    prev[1:] = k_run[:-1]
    # At every change: end the previous state (if timed), then start the new one (if timed).
    ev_ts = np.repeat(t_run, 2)
    ev_code = np.column_stack([2 * (prev - 1) + 1, 2 * (k_run - 1)]).ravel()
    mask = np.column_stack([prev != 0, k_run != 0]).ravel()
    task.ts.append(ev_ts[mask])
    task.code.append(ev_code[mask])
    task.val.append(np.zeros(int(mask.sum()), dtype=np.int64))


# --------------------------------------------------------------------------------------------
# Watermarks
# --------------------------------------------------------------------------------------------


def _tail_table(
    plan: _Plan,
) -> tuple[list[str], dict[tuple[int, int, str], int], dict[tuple[int, int], int], int]:
    """Line tails after ``"ts_ms":<ts>``: timers first, then statuses, then watermarks."""
    tails = [
        f',"timer":"{name}","action":"{action}"}}'
        for name in _TIMER_NAMES
        for action in ("start", "end")
    ]
    ps, pm, _ = plan.parallelism
    status_base: dict[tuple[int, int, str], int] = {}
    wm_base: dict[tuple[int, int], int] = {}
    channel_sets = sorted({ps, pm})
    for n_ch in channel_sets:
        for ch in range(n_ch):
            for st in ("IDLE", "ACTIVE"):
                status_base[(n_ch, ch, st)] = len(tails)
                tails.append(
                    f',"input_index":0,"channel_index":{ch},"num_channels":{n_ch},"status":"{st}"}}'
                )
    wm_start = len(tails)
    for n_ch in channel_sets:
        for ch in range(n_ch):
            wm_base[(n_ch, ch)] = len(tails)
            tails.append(
                f',"input_index":0,"channel_index":{ch},"num_channels":{n_ch},"watermark_ms":'
            )
    return tails, status_base, wm_base, wm_start


# Channel event kinds; a status sent at the same tick as a watermark goes first.
_EV_IDLE, _EV_ACTIVE, _EV_WM = 0, 1, 2


@dataclass
class _ChannelEvents:
    """Events on one channel in channel (FIFO) order: receive times, kinds, values."""

    ts: NDArray[np.int64]
    kind: NDArray[np.int64]
    val: NDArray[np.int64]


def _deliver(
    sent_ts: NDArray[np.int64],
    kind: NDArray[np.int64],
    val: NDArray[np.int64],
    rng: np.random.Generator,
) -> _ChannelEvents:
    """What the downstream task receives for events sent in this order on one channel.

    Each event takes 1-19 ms, never overtaking an earlier one (channels are FIFO). Rarely a
    watermark is followed by a stale repeat of a lower value, which the valve ignores (W2).
    """
    ts = np.maximum.accumulate(sent_ts + rng.integers(1, 20, size=sent_ts.size))
    pick = (kind == _EV_WM) & (rng.random(sent_ts.size) < _STALE_WATERMARK_P)
    if pick.any():
        at = np.flatnonzero(pick) + 1
        stale = val[pick] - rng.integers(0, 1000, size=at.size)
        ts = np.insert(ts, at, ts[pick])
        kind = np.insert(kind, at, _EV_WM)
        val = np.insert(val, at, stale)
    return _ChannelEvents(ts, kind, val)


def _source_channels(
    plan: _Plan, lag_ms: list[NDArray[np.float64]], rng: np.random.Generator
) -> tuple[list[list[_ChannelEvents]], dict[str, int | None] | None]:
    """What each map subtask receives from each source subtask (``[source][map]``).

    A source's watermark is its processing time minus a bounded random delay minus its lag; it
    is sent every :data:`WATERMARK_INTERVAL_MS` when it has advanced. A stopped source sends
    ``IDLE`` at its first tick after the stop and ``ACTIVE`` (then its watermark) at its first
    tick after the resume. Also returns the stop's ground truth.
    """
    ps, pm, _ = plan.parallelism
    out: list[list[_ChannelEvents]] = []
    truth: dict[str, int | None] | None = None
    for i in range(ps):
        phase = int(rng.integers(0, WATERMARK_INTERVAL_MS))
        tick = np.arange(plan.start_ms + phase, plan.end_ms, WATERMARK_INTERVAL_MS, dtype=np.int64)
        step = (tick - plan.start_ms) // STEP_MS
        jitter = _WATERMARK_JITTER_MS * np.clip(_smooth_noise(rng, tick.size, 0.25, 25), 0.5, 1.5)
        wm = tick - _WATERMARK_BOUND_MS - np.round(jitter + lag_ms[i][step]).astype(np.int64)
        cur = np.maximum.accumulate(wm)
        send = np.ones(tick.size, dtype=bool)
        send[1:] = cur[1:] > cur[:-1]
        st_ts: list[int] = []
        st_kind: list[int] = []
        if i == plan.stopped_source:
            stop_ms, resume_ms = (plan.step_ms(s) for s in plan.stop_steps)
            idle_at = int(np.searchsorted(tick, stop_ms))
            active_at = int(np.searchsorted(tick, resume_ms))
            send[idle_at:active_at] = False
            st_ts.append(int(tick[idle_at]))
            st_kind.append(_EV_IDLE)
            if active_at < tick.size:
                send[active_at] = True
                st_ts.append(int(tick[active_at]))
                st_kind.append(_EV_ACTIVE)
            truth = {
                "stop_ms": stop_ms,
                "resume_ms": resume_ms,
                "idle_status_sent_ms": st_ts[0],
                "active_status_sent_ms": st_ts[1] if len(st_ts) > 1 else None,
            }
        sent_ts = np.concatenate([tick[send], np.asarray(st_ts, dtype=np.int64)])
        kind = np.concatenate(
            [np.full(int(send.sum()), _EV_WM), np.asarray(st_kind, dtype=np.int64)]
        )
        val = np.concatenate([cur[send], np.zeros(len(st_ts), dtype=np.int64)])
        order = np.lexsort((kind, sent_ts))
        sent_ts, kind, val = sent_ts[order], kind[order], val[order]
        out.append([_deliver(sent_ts, kind, val, rng) for _ in range(pm)])
    return out, truth


def _merge_channels(
    channels: list[_ChannelEvents], lo: int, hi: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """The events of all channels received in ``[lo, hi)``, in the order a task takes them.

    By time, then channel index; a channel's own order is kept. Returns (ts, kind, val, channel).
    """
    ts, kind, val, ch, pos = [], [], [], [], []
    for c, ev in enumerate(channels):
        sel = (ev.ts >= lo) & (ev.ts < hi)
        ts.append(ev.ts[sel])
        kind.append(ev.kind[sel])
        val.append(ev.val[sel])
        ch.append(np.full(int(sel.sum()), c, dtype=np.int64))
        pos.append(np.flatnonzero(sel))
    order = np.lexsort((np.concatenate(pos), np.concatenate(ch), np.concatenate(ts)))
    return (
        np.concatenate(ts)[order],
        np.concatenate(kind)[order],
        np.concatenate(val)[order],
        np.concatenate(ch)[order],
    )


def _channel_codes(
    kind: NDArray[np.int64],
    ch: NDArray[np.int64],
    n_ch: int,
    status_base: dict[tuple[int, int, str], int],
    wm_base: dict[tuple[int, int], int],
) -> NDArray[np.int64]:
    """Line tail codes of channel events."""
    table = np.array(
        [
            [status_base[(n_ch, c, "IDLE")] for c in range(n_ch)],
            [status_base[(n_ch, c, "ACTIVE")] for c in range(n_ch)],
            [wm_base[(n_ch, c)] for c in range(n_ch)],
        ]
    )
    return table[kind, ch]


class _Valve:
    """Flink's StatusWatermarkValve, rules W1-W4 and S1-S3 (flink-semantics.md section 4)."""

    def __init__(self, n: int) -> None:
        self.wm = [_LONG_MIN] * n
        self.active = [True] * n
        self.aligned = [True] * n
        self.last = _LONG_MIN
        self.idle = False

    def _min_step(self) -> int | None:
        m: int | None = None
        for w, al in zip(self.wm, self.aligned, strict=True):
            if al and (m is None or w < m):
                m = w
        if m is not None and m > self.last:
            self.last = m
            return m
        return None

    def watermark(self, ch: int, w: int) -> int | None:
        if self.idle or not self.active[ch] or w <= self.wm[ch]:
            return None
        self.wm[ch] = w
        if not self.aligned[ch] and w >= self.last:
            self.aligned[ch] = True
        return self._min_step()

    def status(self, ch: int, idle: bool) -> list[tuple[int, int]]:
        """Returns the emissions as ``(kind, value)`` pairs."""
        out: list[tuple[int, int]] = []
        if idle and self.active[ch]:
            self.active[ch] = False
            self.aligned[ch] = False
            if not any(self.active):
                if self.wm[ch] == self.last:
                    top = max(self.wm)
                    if top > self.last:
                        self.last = top
                        out.append((_EV_WM, top))
                self.idle = True
                out.append((_EV_IDLE, 0))
            elif self.wm[ch] == self.last:
                m = self._min_step()
                if m is not None:
                    out.append((_EV_WM, m))
        elif not idle and not self.active[ch]:
            self.active[ch] = True
            self.aligned[ch] = self.wm[ch] >= self.last
            if self.idle:
                self.idle = False
                out.append((_EV_ACTIVE, 0))
        return out


def _add_watermark_events(
    plan: _Plan,
    tasks: list[_Task],
    lag_ms: list[NDArray[np.float64]],
    rng: np.random.Generator,
    status_base: dict[tuple[int, int, str], int],
    wm_base: dict[tuple[int, int], int],
) -> dict[str, int | None] | None:
    """Append the maps' and sinks' watermark and status events; return the stop truth.

    Each map attempt runs a valve over what it receives and forwards every emission, in order,
    to every sink subtask.
    """
    ps, pm, pk = plan.parallelism
    src, stop_truth = _source_channels(plan, lag_ms, rng)
    emitted: list[list[tuple[int, int, int]]] = [[] for _ in range(pm)]  # per map (ts, kind, val)
    for task in tasks:
        if task.role != _ROLE_MAP:
            continue
        j = task.subtask
        ts, kind, val, ch = _merge_channels(
            [src[i][j] for i in range(ps)], task.start_ms, task.end_ms
        )
        if task.attempt > 0 and plan.stopped_source is not None:
            # A restarted attempt learns which of its inputs are idle when it connects.
            a, b = (plan.step_ms(s) for s in plan.stop_steps)
            if a <= task.start_ms < b:
                ts = np.insert(ts, 0, task.start_ms)
                kind = np.insert(kind, 0, _EV_IDLE)
                val = np.insert(val, 0, 0)
                ch = np.insert(ch, 0, plan.stopped_source)
        task.ts.append(ts)
        task.code.append(_channel_codes(kind, ch, ps, status_base, wm_base))
        task.val.append(np.where(kind == _EV_WM, val, 0))
        valve = _Valve(ps)
        out = emitted[j]
        for t_ev, k_ev, v_ev, c_ev in zip(
            ts.tolist(), kind.tolist(), val.tolist(), ch.tolist(), strict=True
        ):
            if k_ev == _EV_WM:
                w = valve.watermark(c_ev, v_ev)
                if w is not None:
                    out.append((t_ev, _EV_WM, w))
            else:
                out.extend(
                    (t_ev, k_out, v_out) for k_out, v_out in valve.status(c_ev, k_ev == _EV_IDLE)
                )

    to_sink: list[list[_ChannelEvents]] = []  # [map][sink]
    for j in range(pm):
        em = np.asarray(emitted[j], dtype=np.int64).reshape(-1, 3)
        to_sink.append([_deliver(em[:, 0], em[:, 1], em[:, 2], rng) for _ in range(pk)])
    for task in tasks:
        if task.role != _ROLE_SINK:
            continue
        k = task.subtask
        ts, kind, val, ch = _merge_channels(
            [to_sink[j][k] for j in range(pm)], task.start_ms, task.end_ms
        )
        task.ts.append(ts)
        task.code.append(_channel_codes(kind, ch, pm, status_base, wm_base))
        task.val.append(np.where(kind == _EV_WM, val, 0))
    return stop_truth


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _digit_tables() -> NDArray[np.uint32]:
    """Every 4-digit group as 4 ASCII bytes packed in a uint32, in three tables of 10,000.

    Table 0 keeps leading zeros ("0042"). Table 1 (a group whose higher groups are all zero)
    has NUL bytes instead of leading zeros and all NULs for 0; table 2 is the same for the last
    group, where 0 stays "0".
    """
    i = np.arange(10_000)
    full = np.stack([(i // 10**p) % 10 + ord("0") for p in (3, 2, 1, 0)], axis=1).astype(np.uint8)
    last = full.copy()
    for p, col in zip((3, 2, 1), range(3), strict=True):
        last[i < 10**p, col] = 0
    mid = last.copy()
    mid[0] = 0
    return np.ascontiguousarray(np.concatenate([full, mid, last])).view(np.uint32)[:, 0]


_DIGITS4: Final = _digit_tables()
_TS_MS_KEY: Final = np.frombuffer(b',"ts_ms":', dtype=np.uint8)


def _text_matrix(texts: list[str]) -> NDArray[np.uint8]:
    """ASCII strings as rows of a zero-padded byte matrix."""
    width = max(len(t) for t in texts)
    mat = np.zeros((len(texts), width), dtype=np.uint8)
    for row, text in enumerate(texts):
        mat[row, : len(text)] = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return mat


def _put_digits(block: NDArray[np.uint8], x: NDArray[np.int64]) -> None:
    """Write the non-negative ``x`` as decimal digits, right-aligned, into ``block`` (n x width).

    Leading positions become 0 bytes (dropped when the lines are assembled); ``width`` must be
    at least the number of digits of ``x.max()``.
    """
    width = block.shape[1]
    groups = -(-width // 4)
    packed = np.empty((x.size, groups), dtype=np.uint32)
    lead: NDArray[np.bool_] | None = None  # all higher groups are zero
    for g in range(groups):
        div = 10 ** (4 * (groups - 1 - g))
        part = x // div if g == 0 else (x // div) % 10_000
        table = 20_000 if g == groups - 1 else 10_000
        packed[:, g] = _DIGITS4[part + table if lead is None else part + lead * table]
        lead = (part == 0) if lead is None else (lead & (part == 0))
    block[:] = packed.view(np.uint8)[:, 4 * groups - width :]


class _LineBuilder:
    """Builds the JSON lines of a chunk of events column-wise in a reused byte matrix.

    A line is ``heads[head]`` ``seq`` ``,"ts_ms":`` ``ts`` ``tails[code]``, then for a watermark
    (``code >= wm_start``) its value and ``}``. Every column block is written for every row, with
    0 bytes for padding and leading zeros, which are dropped at the end. Numbers must be
    non-negative and no wider than the widths given (the generator never makes others).
    """

    def __init__(
        self,
        heads: list[str],
        tails: list[str],
        wm_start: int,
        *,
        max_seq: int,
        max_ts: int,
        max_val: int,
        rows: int,
    ) -> None:
        self.heads, self.tails, self.wm_start = _text_matrix(heads), _text_matrix(tails), wm_start
        self.w_seq, self.w_ts, self.w_val = (len(str(x)) for x in (max_seq, max_ts, max_val))
        lh, lt = self.heads.shape[1], self.tails.shape[1]
        width = lh + self.w_seq + _TS_MS_KEY.size + self.w_ts + lt + self.w_val + 2
        self.buf = np.empty((rows, width), dtype=np.uint8)
        c = np.cumsum([0, lh, self.w_seq, _TS_MS_KEY.size, self.w_ts, lt, self.w_val])
        self.cols = [slice(int(a), int(b)) for a, b in zip(c[:-1], c[1:], strict=True)]

    def build(
        self,
        head: NDArray[np.int64],
        seq: NDArray[np.int64],
        ts: NDArray[np.int64],
        code: NDArray[np.int64],
        val: NDArray[np.int64],
    ) -> NDArray[np.uint8]:
        """The lines' bytes (a new array, safe to hand to another thread)."""
        buf = self.buf[: head.size]
        c_head, c_seq, c_key, c_ts, c_tail, c_val = self.cols
        buf[:, c_head] = self.heads[head]
        _put_digits(buf[:, c_seq], seq)
        buf[:, c_key] = _TS_MS_KEY
        _put_digits(buf[:, c_ts], ts)
        buf[:, c_tail] = self.tails[code]
        is_wm = code >= self.wm_start
        _put_digits(buf[:, c_val], val)
        buf[:, c_val] *= is_wm[:, None]  # no value on the other lines
        buf[:, -2] = is_wm * ord("}")
        buf[:, -1] = ord("\n")
        flat = buf.ravel()
        return flat[flat != 0]


def _write_events(
    plan: _Plan,
    tasks: list[_Task],
    tails: list[str],
    wm_start: int,
    out_dir: Path,
    rng: np.random.Generator,
) -> tuple[list[Path], dict[str, int]]:
    """Number each task's events (``seq``), order all lines by arrival and write the files."""
    n_tasks = len(tasks)
    heads: list[str] = []
    for type_name in ("timer", "watermark_status", "watermark"):
        for task in tasks:
            heads.append(
                f'{{"type":"{type_name}","job_id":"{plan.job_id}",'
                f'"vertex_id":"{plan.vertex_ids[task.role]}","subtask_index":{task.subtask},'
                f'"attempt":{task.attempt},"seq":'
            )
    all_ts, all_code, all_val, all_seq, all_head = [], [], [], [], []
    for t_idx, task in enumerate(tasks):
        if not task.ts:
            continue
        ts = np.concatenate(task.ts)
        code = np.concatenate(task.code).astype(np.int32)
        val = np.concatenate(task.val)
        task.ts, task.code, task.val = [], [], []  # free as we go
        order = np.argsort(ts, kind="stable")  # timers first at equal ms, each part in order
        ts, code, val = ts[order], code[order], val[order]
        kind = np.where(code < 2 * len(_TIMER_NAMES), 0, np.where(code < wm_start, 1, 2))
        all_ts.append(ts)
        all_code.append(code)
        all_val.append(val)
        all_seq.append(np.arange(ts.size, dtype=np.int64))
        all_head.append((kind * n_tasks + t_idx).astype(np.int32))
    ts = np.concatenate(all_ts)
    code = np.concatenate(all_code)
    val = np.concatenate(all_val)
    seq = np.concatenate(all_seq)
    head = np.concatenate(all_head)
    del all_ts, all_code, all_val, all_seq, all_head
    order = np.argsort(ts + rng.integers(0, _ARRIVAL_JITTER_MS, size=ts.size), kind="stable")

    n_timer = int(np.count_nonzero(code < 2 * len(_TIMER_NAMES)))
    n_wm = int(np.count_nonzero(code >= wm_start))
    counts = {"timer": n_timer, "watermark": n_wm, "watermark_status": ts.size - n_timer - n_wm}

    builder = _LineBuilder(
        heads,
        tails,
        wm_start,
        max_seq=int(seq.max()),
        max_ts=int(ts.max()),
        max_val=int(val.max()),
        rows=min(_WRITE_CHUNK, ts.size),
    )
    files: list[Path] = []
    n = ts.size
    per_file = MAX_LINES_PER_FILE
    # One writer thread overlaps the disk writes with building the next chunk; the writes keep
    # their order, so the bytes do not depend on timing.
    with ThreadPoolExecutor(max_workers=1) as writer:
        for f_no, f_start in enumerate(range(0, n, per_file)):
            path = out_dir / f"events-{f_no:05d}.jsonl"
            files.append(path)
            f_end = min(f_start + per_file, n)
            with path.open("wb") as fh:
                pending: Future[int] | None = None
                try:
                    for c_start in range(f_start, f_end, _WRITE_CHUNK):
                        idx = order[c_start : min(c_start + _WRITE_CHUNK, f_end)]
                        data = builder.build(head[idx], seq[idx], ts[idx], code[idx], val[idx])
                        if pending is not None:
                            pending.result()
                        pending = writer.submit(fh.write, memoryview(data))
                finally:
                    if pending is not None:
                        pending.result()
    return files, counts


def _manifest(
    plan: _Plan,
    tasks: list[_Task],
    files: list[Path],
    counts: dict[str, int],
    n_lines: int,
    stop_truth: dict[str, int | None] | None,
) -> dict[str, Any]:
    vid = plan.vertex_ids
    vertices = [
        {"role": role, **{k: v for k, v in rec.items() if k not in ("type", "job_id")}}
        for role, rec in zip(("source", "map", "sink"), _vertex_records(plan), strict=True)
    ]
    stopped = None
    if plan.stopped_source is not None and stop_truth is not None:
        stopped = {"vertex_id": vid[0], "subtask_index": plan.stopped_source, **stop_truth}
    failure = None
    if plan.failed_map is not None:
        failure = {
            "vertex_id": vid[1],
            "subtask_index": plan.failed_map,
            "failed_attempt": 0,
            "failure_ms": plan.step_ms(plan.fail_steps[0]),
            "restart_attempt": 1,
            "restart_ms": plan.step_ms(plan.fail_steps[1]),
        }
    role, sub = plan.legacy_task
    return {
        "generator": "tidemark.generate",
        "format_version": 1,
        "scenario": plan.scenario,
        "seed": plan.seed,
        "scale": plan.scale,
        "job_id": plan.job_id,
        "epoch_start_ms": plan.start_ms,
        "epoch_end_ms": plan.end_ms,
        "step_ms": STEP_MS,
        "watermark_interval_ms": WATERMARK_INTERVAL_MS,
        "vertices": vertices,
        "files": [p.name for p in files],
        "events": n_lines,
        "records_by_type": {"vertex": 3, **counts},
        "tasks": [
            {
                "vertex_id": vid[t.role],
                "subtask_index": t.subtask,
                "attempt": t.attempt,
                "start_ms": t.start_ms,
                "end_ms": t.end_ms,
            }
            for t in tasks
        ],
        "legacy_timer_tasks": [{"vertex_id": vid[role], "subtask_index": sub}],
        "truth": {
            "source_load": plan.load,
            "throttled_vertex_id": vid[2] if plan.throttle_windows else None,
            "throttle_factor": plan.throttle_factor if plan.throttle_windows else None,
            "throttle_windows": [
                [plan.step_ms(a), plan.step_ms(b)] for a, b in plan.throttle_windows
            ],
            "stopped_source": stopped,
            "hot_subtask": (
                {"vertex_id": vid[1], "subtask_index": plan.hot_map, "share": plan.hot_share}
                if plan.hot_map is not None
                else None
            ),
            "failure": failure,
            "bottleneck": _bottleneck(plan),
        },
    }


def _bottleneck(plan: _Plan) -> dict[str, Any] | None:
    """Where back pressure comes from: the throttled sinks, or the hot map subtask."""
    if plan.throttle_windows:
        return {"vertex_id": plan.vertex_ids[2], "subtask_index": None}
    if plan.hot_map is not None:
        return {"vertex_id": plan.vertex_ids[1], "subtask_index": plan.hot_map}
    return None
