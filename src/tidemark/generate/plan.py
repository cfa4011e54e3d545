"""The plan of a run: scenarios, the job graph (ids, parallelism, vertex records), phases, tasks.

Everything here is fixed before the simulation starts; the ground truth in the manifest comes from
it. See :mod:`tidemark.generate` for the scenarios.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

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

_ROLE_SOURCE, _ROLE_MAP, _ROLE_SINK = 0, 1, 2

EDGES: tuple[str, ...] = ("all-to-all", "pointwise")
"""How subtasks of neighbouring vertices connect: Flink's two distribution patterns."""
DEFAULT_PARALLELISM: Final = (2, 4, 2)
DEFAULT_EDGES: Final = "all-to-all"


def inputs_of(upstream: int, downstream: int, edges: str) -> tuple[tuple[int, ...], ...]:
    """The upstream subtasks each downstream subtask reads, in channel order.

    ``all-to-all`` (Flink's ALL_TO_ALL: keyBy, rebalance, broadcast): every upstream subtask.
    ``pointwise`` (Flink's POINTWISE: forward, rescale): as Flink's scheduler connects them
    (``EdgeManagerBuildUtil.connectPointwise``): equal counts pair up one to one; more upstream
    subtasks than downstream give each downstream subtask a contiguous range of them; fewer give
    each upstream subtask a contiguous range of downstream subtasks, each of which reads it alone.
    """
    if edges == "all-to-all":
        return tuple(tuple(range(upstream)) for _ in range(downstream))
    if upstream >= downstream:
        return tuple(
            tuple(range(k * upstream // downstream, (k + 1) * upstream // downstream))
            for k in range(downstream)
        )
    reads = [()] * downstream
    for i in range(upstream):
        first = (i * downstream + upstream - 1) // upstream
        last = ((i + 1) * downstream + upstream - 1) // upstream
        for k in range(first, last):
            reads[k] = (i,)
    return tuple(reads)


def split_parallelism(total: int) -> tuple[int, int, int]:
    """A job of ``total`` subtasks as source, map and sink parallelism, about 1 : 2 : 1.

    ``8`` gives the default ``(2, 4, 2)``, ``1000`` gives ``(250, 500, 250)``.
    """
    if total < 3:
        raise ValueError(f"a job of source, map and sink needs at least 3 subtasks, got {total}")
    outer = max(1, round(total / 4))
    return outer, total - 2 * outer, outer


@dataclass(frozen=True)
class _Plan:
    """Everything about one run that is fixed before the simulation."""

    scenario: str
    seed: int
    scale: int
    parallelism: tuple[int, int, int]
    edges: str
    map_inputs: tuple[tuple[int, ...], ...]  # per map subtask: its source subtasks (channels)
    sink_inputs: tuple[tuple[int, ...], ...]  # per sink subtask: its map subtasks (channels)
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


def _hex_id(*parts: object) -> str:
    text = "/".join(str(p) for p in ("tidemark-generate", *parts))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _make_plan(
    scenario: str,
    seed: int,
    scale: int,
    parallelism: tuple[int, int, int] = DEFAULT_PARALLELISM,
    edges: str = DEFAULT_EDGES,
) -> _Plan:
    """The run's plan; ``parallelism`` is the source, map and sink parallelism."""
    ps, pm, pk = parallelism
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
    # The default graph keeps the ids it always had; any other graph is another job.
    graph = (
        ()
        if (parallelism, edges) == (DEFAULT_PARALLELISM, DEFAULT_EDGES)
        else (
            "x".join(map(str, parallelism)),
            edges,
        )
    )
    run_id = (scenario, seed, scale, *graph)
    return _Plan(
        scenario=scenario,
        seed=seed,
        scale=scale,
        parallelism=parallelism,
        edges=edges,
        map_inputs=inputs_of(ps, pm, edges),
        sink_inputs=inputs_of(pm, pk, edges),
        job_id=_hex_id(*run_id, "job"),
        vertex_ids=(
            _hex_id(*run_id, "vertex", names[0]),
            _hex_id(*run_id, "vertex", names[1]),
            _hex_id(*run_id, "vertex", names[2]),
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
