"""Synthetic Flink runtime events for named scenarios (``tidemark generate``).

The generator simulates a three-vertex streaming job, ``source -> map -> sink`` (parallelism 2/4/2,
all-to-all edges), and writes the runtime events such a job would report, valid under the event
contract (``contract.md`` section 1):

* ``graph.jsonl``: one ``vertex`` record per vertex;
* ``events-00000.jsonl``, ``events-00001.jsonl``, ...: at most :data:`MAX_LINES_PER_FILE` lines each,
  mixing ``timer``, ``watermark`` and ``watermark_status`` records in rough arrival order (by
  ``ts_ms`` plus a small delivery jitter, so a task's lines are not always in ``seq`` order);
* ``manifest.json``: the parameters, the job graph, the time range and the scenario's ground truth
  (``truth``: throttle windows, the stopped source, the hot subtask, the failed task).

The output is a pure function of ``(scenario, seed, scale)``: byte-identical on every run.

Simulation
----------
A fluid queue model advances in :data:`STEP_MS` steps. Every channel (one per upstream subtask and
downstream subtask) has a small input buffer; every subtask has a processing capacity in
records/s; each source subtask reads a demand that it cannot always serve (the unserved part is
lag, which it catches up later at full capacity). In each step a subtask is limited either by
its capacity (busy), by its input (idle for the unused part of the step), or by full buffers
downstream (back-pressured for the unused part). The blocked part of a step is laid out as one to
three intervals, as a task waking up for arriving buffers would show; consecutive blocked time
of the same kind merges into one measurement. From those intervals the TimerGauge events follow
(flink-semantics.md section 3, M9): at most one timer is open per task at any time, so starts and
ends alternate per gauge and idle never overlaps back pressure. A state still open at the end of
the run (or at a task failure) stays open. About one blocked interval in ten under back pressure
is a ``hard_backpressured`` one (a blocking buffer request), and one source-or-map subtask per job
reports back pressure under the Flink <= 1.14 name ``backpressured`` (listed in the manifest as
``legacy_timer_tasks``).

Watermarks: every source subtask has an event-time clock, processing time minus a bounded random
delay minus its current lag, and every :data:`WATERMARK_INTERVAL_MS` it sends its watermark to
every map subtask when it has advanced (input 0, one channel per source subtask). Rarely (about
0.3 % of sends) a channel also receives a stale, non-increasing watermark, which Flink ignores
(W2). A source that stops producing sends ``IDLE`` on all its channels and ``ACTIVE`` when it
resumes, and no watermark in between. Each map subtask runs an exact StatusWatermarkValve (rules
W1-W4, S1-S3) over its input and forwards every watermark and status it emits to every sink
subtask (one channel per map subtask), so the sinks see the min over the map's non-idle inputs.

Scenarios
---------
Every scenario runs ``scale * 150`` simulated seconds from :data:`EPOCH_START_MS`
(2024-01-01T00:00:00Z). Total capacity is 10,000 records/s for the sources, 15,000 for the maps
and 12,000 for the sinks.

``steady``
    Sources at 40 % of capacity; idle time everywhere, no back pressure.
``backpressure``
    Sources at 60 % of capacity; every sink subtask is throttled to 30 % of its capacity in two
    windows per 150 s (``[20 s, 50 s)`` and ``[80 s, 115 s)`` of each cycle). Map and source back
    pressure starts within about 0.5 s of a throttle and ends within about 0.5 s of the release;
    there is none outside the windows. The sources then catch up on their lag at full capacity.
``idle-source``
    Like ``steady``, but one source subtask stops producing from 40 % to 65 % of the run.
``skew``
    Sources at 60 %; a hot key routes 70 % of every source's records to one map subtask, which is
    busy all the time and back-pressures the sources; the other map subtasks are mostly idle.
``restart``
    Sources at 50 %; one map subtask fails about half-way through. Its attempt 0 events stop at
    the failure; attempt 1 (``seq`` from 0 again, fresh valve state) starts 5 to 7 s later and runs
    to the end. While it is down the sources are back-pressured.
``legacy-source``
    Like ``steady``, but the source vertex is a legacy SourceFunction: ``busy_time_enabled`` is
    false in its vertex record (Flink publishes NaN busy time for it).

Size and speed
--------------
One scale unit is about 75,000 (``skew``) to 110,000 (``steady``) event lines, each around 200
bytes; scale 50 gives about 5 million lines (about 1 GB). Generation runs at well over a million
events per second on one core; the time goes into the per-step queue loop (linear in the
simulated time) and into formatting and writing the lines (linear in the events).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "EPOCH_START_MS",
    "MAX_LINES_PER_FILE",
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
DEFAULT_PARALLELISM: Final = (2, 4, 2)
"""Parallelism of the source, map and sink vertices."""

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
    num_channels: int = 0
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
    the number of events (about 75k-110k lines per unit, see the module docstring). ``out_dir``
    is created if missing; it may already hold the output of an earlier run (``graph.jsonl``,
    ``events-NNNNN.jsonl``, ``manifest.json``), which is replaced, but nothing else.

    Raises :class:`ValueError` for an unknown scenario, a bad seed or scale, or an output
    directory holding other files.
    """
    _check_args(scenario, seed, scale)
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
    )
    event_files, counts = _write_events(plan, tasks, tails, wm_start, out_dir, rng)
    files = [graph_path, *event_files]
    n_lines = 3 + sum(counts.values())

    manifest = _manifest(plan, tasks, files, counts, n_lines, stopped_truth)
    manifest_path = out_dir / MANIFEST_FILE
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return GenerateResult(files=files, events=n_lines, manifest=manifest_path)


def _check_args(scenario: str, seed: int, scale: int) -> None:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(SCENARIOS)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be an integer >= 1, got {scale!r}")


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
    ps, pm, _pk = DEFAULT_PARALLELISM
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
        parallelism=DEFAULT_PARALLELISM,
        job_id=_hex_id(scenario, seed, scale, "job"),
        vertex_ids=tuple(_hex_id(scenario, seed, scale, "vertex", n) for n in names),  # type: ignore[arg-type]
        n_steps=n_steps,
        load=load,
        throttle_windows=windows,
        throttle_factor=0.3,
        stopped_source=stopped,
        stop_steps=stop_steps,
        hot_map=hot,
        hot_share=0.7,
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
    ps, pm, pk = plan.parallelism
    tasks: list[_Task] = []
    for role, par in enumerate(plan.parallelism):
        for sub in range(par):
            n_ch = (0, ps, pm)[role]
            if role == _ROLE_MAP and sub == plan.failed_map:
                fail, restart = plan.fail_steps
                tasks.append(_Task(role, sub, 0, 0, fail, n_ch))
                tasks.append(_Task(role, sub, 1, restart, plan.n_steps, n_ch))
            else:
                tasks.append(_Task(role, sub, 0, 0, plan.n_steps, n_ch))
    del pk
    return tasks


# --------------------------------------------------------------------------------------------
# Queue model
# --------------------------------------------------------------------------------------------


def _smooth_noise(rng: np.random.Generator, n: int, sd: float, knot_steps: int) -> NDArray[Any]:
    """Slowly varying noise around 1: random knots every ``knot_steps``, linearly interpolated."""
    knots = 1.0 + sd * rng.standard_normal(n // knot_steps + 2)
    return np.interp(np.arange(n) / knot_steps, np.arange(knots.size), knots)


def _simulate_queues(
    plan: _Plan, rng: np.random.Generator
) -> tuple[dict[tuple[int, int], NDArray[np.int64]], list[NDArray[np.float64]]]:
    """Run the fluid model; return per (role, subtask) step codes and per source lag (ms).

    A step code is ``b`` (0..STEP_MS) for a step with ``b`` idle ms, ``100 + b`` for a step with
    ``b`` back-pressured ms, or ``-1`` while the task is down.
    """
    ps, pm, pk = plan.parallelism
    n = plan.n_steps
    dt = STEP_MS / 1000.0
    step_ms = float(STEP_MS)

    src_cap_nominal = _SOURCE_CAPACITY / ps * dt  # records per step
    src_cap = [
        (src_cap_nominal * np.clip(1 + 0.02 * rng.standard_normal(n), 0.95, 1.05)).tolist()
        for _ in range(ps)
    ]
    demand_rate = plan.load * src_cap_nominal
    demand = []
    for i in range(ps):
        d = demand_rate * _smooth_noise(rng, n, 0.08, 20) * (1 + 0.1 * rng.standard_normal(n))
        d = np.clip(d, 0.6 * demand_rate, 1.4 * demand_rate)
        if i == plan.stopped_source:
            d[plan.stop_steps[0] : plan.stop_steps[1]] = 0.0
        demand.append(d.tolist())
    map_cap = [
        (_MAP_CAPACITY / pm * dt * np.clip(1 + 0.03 * rng.standard_normal(n), 0.9, 1.1)).tolist()
        for _ in range(pm)
    ]
    throttle = np.ones(n)
    for a, b in plan.throttle_windows:
        throttle[a:b] = plan.throttle_factor
    sink_cap = [
        (
            _SINK_CAPACITY
            / pk
            * dt
            * throttle
            * np.clip(1 + 0.02 * rng.standard_normal(n), 0.95, 1.05)
        ).tolist()
        for _ in range(pk)
    ]
    map_up = np.ones((pm, n), dtype=bool)
    if plan.failed_map is not None:
        map_up[plan.failed_map, plan.fail_steps[0] : plan.fail_steps[1]] = False
    restart_step = plan.fail_steps[1] if plan.failed_map is not None else -1

    # Routing shares: source i -> map j, map j -> sink k.
    share = [[1.0 / pm] * pm for _ in range(ps)]
    if plan.hot_map is not None and pm > 1:
        for i in range(ps):
            share[i] = [(1.0 - plan.hot_share) / (pm - 1)] * pm
            share[i][plan.hot_map] = plan.hot_share
    out_share = 1.0 / pk
    q_map = _BUFFER_STEPS * _SOURCE_CAPACITY * dt / (ps * pm)  # capacity of one channel
    q_sink = _BUFFER_STEPS * _SOURCE_CAPACITY * dt / (pm * pk)

    qm = [[0.0] * pm for _ in range(ps)]  # qm[i][j]: channel source i -> map j
    qs = [[0.0] * pk for _ in range(pm)]  # qs[j][k]: channel map j -> sink k
    backlog = [0.0] * ps
    src_codes: list[list[int]] = [[] for _ in range(ps)]
    map_codes: list[list[int]] = [[] for _ in range(pm)]
    sink_codes: list[list[int]] = [[] for _ in range(pk)]
    backlogs: list[list[float]] = [[] for _ in range(ps)]
    up_lists = [row.tolist() for row in map_up]
    rp, rm, rk = range(ps), range(pm), range(pk)

    for t in range(n):
        # Sinks consume what is buffered (no output, so never back-pressured).
        for k in rk:
            a = 0.0
            for j in rm:
                a += qs[j][k]
            c = sink_cap[k][t]
            if a >= c:
                p, code = c, 0
            else:
                p, code = a, int((1.0 - a / c) * step_ms + 0.5)
            if a > 0.0:
                f = 1.0 - p / a
                for j in rm:
                    qs[j][k] *= f
            sink_codes[k].append(code)
        # Maps move records from their input channels into the sinks' channels.
        for j in rm:
            if not up_lists[j][t]:
                map_codes[j].append(_DOWN)
                continue
            if t == restart_step and j == plan.failed_map:
                for i in rp:
                    qm[i][j] = 0.0
            a = 0.0
            for i in rp:
                a += qm[i][j]
            room = qs[j]
            o = min(q_sink - room[k] for k in rk) / out_share
            c = map_cap[j][t]
            p = min(a, c, o)
            if p >= c:
                code = 0
            elif o < a:
                code = 100 + int((1.0 - p / c) * step_ms + 0.5)
            else:
                code = int((1.0 - p / c) * step_ms + 0.5)
            if a > 0.0:
                f = 1.0 - p / a
                for i in rp:
                    qm[i][j] *= f
                add = p * out_share
                for k in rk:
                    room[k] += add
            map_codes[j].append(code if code != 100 else 0)
        # Sources read their demand plus lag and push it into the maps' channels.
        for i in rp:
            a = backlog[i] + demand[i][t]
            row = qm[i]
            sh = share[i]
            o = min((q_map - row[j]) / sh[j] for j in rm)
            c = src_cap[i][t]
            p = min(a, c, o)
            if p < 0.0:
                p = 0.0
            if p >= c:
                code = 0
            elif o < a:
                code = 100 + int((1.0 - p / c) * step_ms + 0.5)
            else:
                code = int((1.0 - p / c) * step_ms + 0.5)
            backlog[i] = a - p
            for j in rm:
                row[j] += p * sh[j]
            src_codes[i].append(code if code != 100 else 0)
            backlogs[i].append(backlog[i])

    steps: dict[tuple[int, int], NDArray[np.int64]] = {}
    for role, codes in ((0, src_codes), (1, map_codes), (2, sink_codes)):
        for sub, c_list in enumerate(codes):
            steps[(role, sub)] = np.asarray(c_list, dtype=np.int64)
    lag_ms = [np.asarray(b) / demand_rate * STEP_MS for b in backlogs]
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
                    f',"input_index":0,"channel_index":{ch},"num_channels":{n_ch},'
                    f'"status":"{st}"}}'
                )
    wm_start = len(tails)
    for n_ch in channel_sets:
        for ch in range(n_ch):
            wm_base[(n_ch, ch)] = len(tails)
            tails.append(
                f',"input_index":0,"channel_index":{ch},"num_channels":{n_ch},"watermark_ms":'
            )
    return tails, status_base, wm_base, wm_start


# Channel event kinds (in this order when they share a millisecond).
_EV_IDLE, _EV_ACTIVE, _EV_WM = 0, 1, 2


@dataclass
class _ChannelEvents:
    """Events one upstream subtask sends on one channel: times, kinds, values."""

    ts: NDArray[np.int64]
    kind: NDArray[np.int64]
    val: NDArray[np.int64]


def _with_stale(
    ts: NDArray[np.int64], val: NDArray[np.int64], rng: np.random.Generator
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Insert rare stale (non-increasing) watermarks 1 ms after a sent one."""
    pick = rng.random(ts.size) < _STALE_WATERMARK_P
    if not pick.any():
        return ts, val
    stale_ts = ts[pick] + 1
    stale_val = val[pick] - rng.integers(0, 1000, size=int(pick.sum()))
    all_ts = np.concatenate([ts, stale_ts])
    all_val = np.concatenate([val, stale_val])
    order = np.argsort(all_ts, kind="stable")
    return all_ts[order], all_val[order]


def _source_channels(
    plan: _Plan, lag_ms: list[NDArray[np.float64]], rng: np.random.Generator
) -> tuple[list[list[_ChannelEvents]], dict[str, int] | None]:
    """Watermark and status events each source subtask sends to each map subtask."""
    ps, pm, _ = plan.parallelism
    out: list[list[_ChannelEvents]] = []
    truth: dict[str, int] | None = None
    for i in range(ps):
        phase = int(rng.integers(0, WATERMARK_INTERVAL_MS))
        tick = np.arange(plan.start_ms + phase, plan.end_ms, WATERMARK_INTERVAL_MS, dtype=np.int64)
        step = (tick - plan.start_ms) // STEP_MS
        jitter = _WATERMARK_JITTER_MS * np.clip(
            (_smooth_noise(rng, tick.size, 0.5, 25) - 1.0) / 2 + 0.5, 0.0, 1.0
        )
        wm = tick - _WATERMARK_BOUND_MS - np.round(jitter + lag_ms[i][step]).astype(np.int64)
        cur = np.maximum.accumulate(wm)
        send = np.ones(tick.size, dtype=bool)
        send[1:] = cur[1:] > cur[:-1]
        idle_at = active_at = -1
        if i == plan.stopped_source:
            stop_ms, resume_ms = (plan.step_ms(s) for s in plan.stop_steps)
            idle_at = int(np.searchsorted(tick, stop_ms))
            active_at = int(np.searchsorted(tick, resume_ms))
            send[idle_at:active_at] = False
            if active_at < tick.size:
                send[active_at] = True
            truth = {
                "stop_ms": stop_ms,
                "resume_ms": resume_ms,
                "idle_status_ms": int(tick[idle_at]),
                "active_status_ms": int(tick[active_at]) if active_at < tick.size else -1,
            }
        per_map = []
        for _j in range(pm):
            lat = rng.integers(1, 20, size=tick.size)
            ts, val = _with_stale((tick + lat)[send], cur[send], rng)
            kind = np.full(ts.size, _EV_WM, dtype=np.int64)
            if idle_at >= 0:
                st_ts = [int(tick[idle_at] + lat[idle_at])]
                st_kind = [_EV_IDLE]
                if active_at < tick.size:
                    st_ts.append(int(tick[active_at] + lat[active_at]))
                    st_kind.append(_EV_ACTIVE)
                ts = np.concatenate([ts, np.asarray(st_ts, dtype=np.int64)])
                kind = np.concatenate([kind, np.asarray(st_kind, dtype=np.int64)])
                val = np.concatenate([val, np.zeros(len(st_ts), dtype=np.int64)])
                order = np.lexsort((kind, ts))
                ts, kind, val = ts[order], kind[order], val[order]
            per_map.append(_ChannelEvents(ts, kind, val))
        out.append(per_map)
    return out, truth


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
) -> dict[str, int] | None:
    """Append the maps' and sinks' watermark and status events; return the stop truth."""
    ps, pm, pk = plan.parallelism
    src, stop_truth = _source_channels(plan, lag_ms, rng)
    sink_in: list[list[_ChannelEvents]] = [[] for _ in range(pk)]  # [k] -> list over maps
    emitted_by_map: list[list[tuple[int, int, int]]] = [[] for _ in range(pm)]

    for task in tasks:
        if task.role != _ROLE_MAP:
            continue
        j = task.subtask
        lo, hi = task.start_ms, task.end_ms
        ts_l, kind_l, val_l, ch_l = [], [], [], []
        for i in range(ps):
            ev = src[i][j]
            sel = (ev.ts >= lo) & (ev.ts < hi)
            ts_l.append(ev.ts[sel])
            kind_l.append(ev.kind[sel])
            val_l.append(ev.val[sel])
            ch_l.append(np.full(int(sel.sum()), i, dtype=np.int64))
        ts = np.concatenate(ts_l)
        kind = np.concatenate(kind_l)
        val = np.concatenate(val_l)
        ch = np.concatenate(ch_l)
        # A restarted attempt learns which inputs are idle when it connects.
        if task.attempt > 0 and plan.stopped_source is not None:
            a, b = (plan.step_ms(s) for s in plan.stop_steps)
            if a <= lo < b:
                ts = np.append(ts, lo)
                kind = np.append(kind, _EV_IDLE)
                val = np.append(val, 0)
                ch = np.append(ch, plan.stopped_source)
        order = np.lexsort((kind, ch, ts))
        ts, kind, val, ch = ts[order], kind[order], val[order], ch[order]
        code = np.where(
            kind == _EV_WM,
            np.asarray([wm_base[(ps, c)] for c in range(ps)])[ch],
            np.where(
                kind == _EV_IDLE,
                np.asarray([status_base[(ps, c, "IDLE")] for c in range(ps)])[ch],
                np.asarray([status_base[(ps, c, "ACTIVE")] for c in range(ps)])[ch],
            ),
        )
        task.ts.append(ts)
        task.code.append(code)
        task.val.append(np.where(kind == _EV_WM, val, 0))

        valve = _Valve(ps)
        emitted = emitted_by_map[j]
        for t_ev, k_ev, v_ev, c_ev in zip(
            ts.tolist(), kind.tolist(), val.tolist(), ch.tolist(), strict=True
        ):
            if k_ev == _EV_WM:
                w = valve.watermark(c_ev, v_ev)
                if w is not None:
                    emitted.append((t_ev, _EV_WM, w))
            else:
                for k_out, v_out in valve.status(c_ev, k_ev == _EV_IDLE):
                    emitted.append((t_ev, k_out, v_out))

    for j in range(pm):
        em = emitted_by_map[j]
        e_ts = np.asarray([e[0] for e in em], dtype=np.int64)
        e_kind = np.asarray([e[1] for e in em], dtype=np.int64)
        e_val = np.asarray([e[2] for e in em], dtype=np.int64)
        for k in range(pk):
            lat = rng.integers(1, 20, size=e_ts.size)
            ts = e_ts + lat
            wm = e_kind == _EV_WM
            w_ts, w_val = _with_stale(ts[wm], e_val[wm], rng)
            ts = np.concatenate([ts[~wm], w_ts])
            kind = np.concatenate([e_kind[~wm], np.full(w_ts.size, _EV_WM)])
            val = np.concatenate([e_val[~wm], w_val])
            order = np.lexsort((kind, ts))
            keep = ts[order] < plan.end_ms
            sink_in[k].append(_ChannelEvents(ts[order][keep], kind[order][keep], val[order][keep]))

    for task in tasks:
        if task.role != _ROLE_SINK:
            continue
        k = task.subtask
        ts = np.concatenate([c.ts for c in sink_in[k]])
        kind = np.concatenate([c.kind for c in sink_in[k]])
        val = np.concatenate([c.val for c in sink_in[k]])
        ch = np.concatenate([np.full(c.ts.size, j, dtype=np.int64) for j, c in enumerate(sink_in[k])])
        pos = np.concatenate([np.arange(c.ts.size) for c in sink_in[k]])
        order = np.lexsort((pos, ch, ts))
        ts, kind, val, ch = ts[order], kind[order], val[order], ch[order]
        wm_codes = np.asarray([wm_base[(pm, c)] for c in range(pm)])
        idle_codes = np.asarray([status_base[(pm, c, "IDLE")] for c in range(pm)])
        active_codes = np.asarray([status_base[(pm, c, "ACTIVE")] for c in range(pm)])
        code = np.where(
            kind == _EV_WM,
            wm_codes[ch],
            np.where(kind == _EV_IDLE, idle_codes[ch], active_codes[ch]),
        )
        task.ts.append(ts)
        task.code.append(code)
        task.val.append(np.where(kind == _EV_WM, val, 0))
    return stop_truth


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


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
        code = np.concatenate(task.code)
        val = np.concatenate(task.val)
        order = np.argsort(ts, kind="stable")  # timers first at equal ms, each part in order
        ts, code, val = ts[order], code[order], val[order]
        kind = np.where(code < 2 * len(_TIMER_NAMES), 0, np.where(code < wm_start, 1, 2))
        all_ts.append(ts)
        all_code.append(code)
        all_val.append(val)
        all_seq.append(np.arange(ts.size, dtype=np.int64))
        all_head.append(kind * n_tasks + t_idx)
    ts = np.concatenate(all_ts)
    code = np.concatenate(all_code)
    val = np.concatenate(all_val)
    seq = np.concatenate(all_seq)
    head = np.concatenate(all_head)
    arrival = ts + rng.integers(0, _ARRIVAL_JITTER_MS, size=ts.size)
    order = np.argsort(arrival, kind="stable")

    n_timer = int(np.count_nonzero(code < 2 * len(_TIMER_NAMES)))
    n_wm = int(np.count_nonzero(code >= wm_start))
    counts = {"timer": n_timer, "watermark": n_wm, "watermark_status": ts.size - n_timer - n_wm}

    files: list[Path] = []
    n = ts.size
    per_file = MAX_LINES_PER_FILE
    for f_no, f_start in enumerate(range(0, n, per_file)):
        path = out_dir / f"events-{f_no:05d}.jsonl"
        files.append(path)
        f_end = min(f_start + per_file, n)
        with path.open("w", encoding="ascii", newline="\n") as fh:
            for c_start in range(f_start, f_end, _WRITE_CHUNK):
                idx = order[c_start : min(c_start + _WRITE_CHUNK, f_end)]
                lines = [
                    f'{heads[h]}{s},"ts_ms":{t}{tails[u]}{v}}}'
                    if u >= wm_start
                    else f'{heads[h]}{s},"ts_ms":{t}{tails[u]}'
                    for h, s, t, u, v in zip(
                        head[idx].tolist(),
                        seq[idx].tolist(),
                        ts[idx].tolist(),
                        code[idx].tolist(),
                        val[idx].tolist(),
                        strict=True,
                    )
                ]
                lines.append("")
                fh.write("\n".join(lines))
    return files, counts


def _manifest(
    plan: _Plan,
    tasks: list[_Task],
    files: list[Path],
    counts: dict[str, int],
    n_lines: int,
    stop_truth: dict[str, int] | None,
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
        },
    }
