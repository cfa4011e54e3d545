"""``manifest.json``: the run's parameters, job graph, task attempts and ground truth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidemark.generate.plan import (
    STEP_MS,
    WATERMARK_INTERVAL_MS,
    _Plan,
    _Task,
    _vertex_records,
)


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
        "edges": plan.edges,
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
