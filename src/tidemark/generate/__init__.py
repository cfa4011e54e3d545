"""Synthetic Flink runtime events for named scenarios (``tidemark generate``).

The generator simulates a three-vertex streaming job, ``source -> map -> sink`` (by default
parallelism 2/4/2 with all-to-all edges; see "Job graph" below), and writes the runtime events such
a job would report, valid under the event contract (``contract.md`` section 1), into one directory:

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
  that causes the back pressure); the keys that do not apply are empty or null. With
  ``file_seconds``, ``file_spans`` lists the events files of each span of arrival time.

The output is a pure function of ``(scenario, seed, scale, parallelism, edges)`` (and the file
span): byte-identical on every run. The job and vertex ids are 32 hex characters derived from it.

Job graph
---------
``parallelism`` is the source, map and sink parallelism, or a total that is split about 1 : 2 : 1
(1,000 gives 250/500/250). ``edges`` is Flink's distribution pattern of both edges:
``all-to-all`` (keyBy, rebalance: every subtask reads every upstream subtask) or ``pointwise``
(forward, rescale: connected as Flink's scheduler does, :func:`~tidemark.generate.plan.inputs_of`).
Each valve's ``num_channels`` and every record's route follow it. The volume grows with the
graph: a 1,000-subtask pointwise job gives about 4.0 million timer and 0.3 million watermark
events per simulated minute; all-to-all at that size would be about 38 million watermark events
per minute (every map reads 250 channels), which is what Flink's valves would see, but is rarely
what one wants to generate.

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
see the min over the map's non-idle inputs. It is the product's valve,
:class:`udfs.valve.StatusWatermarkValve`, with its default semantics (Flink 1.13 to 2.0).

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

Modules
-------
:mod:`~tidemark.generate.plan` (scenarios, job graph, vertex records, tasks),
:mod:`~tidemark.generate.queues` (the queue model and the timer events),
:mod:`~tidemark.generate.watermarks` (channels, valves and the watermark events),
:mod:`~tidemark.generate.lines` (fast JSON Lines writing) and
:mod:`~tidemark.generate.manifest` (the manifest and its ground truth); this module runs them.
"""

from __future__ import annotations

import json
import numbers
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from tidemark.generate.lines import _LineBuilder as _LineBuilder
from tidemark.generate.lines import _tail_table, _write_events
from tidemark.generate.manifest import _manifest
from tidemark.generate.plan import (
    BASE_DURATION_MS,
    DEFAULT_EDGES,
    DEFAULT_PARALLELISM,
    EDGES,
    EPOCH_START_MS,
    SCENARIOS,
    _make_plan,
    _make_tasks,
    _vertex_records,
    split_parallelism,
)
from tidemark.generate.plan import STEP_MS as STEP_MS
from tidemark.generate.plan import WATERMARK_INTERVAL_MS as WATERMARK_INTERVAL_MS
from tidemark.generate.queues import _add_timer_events, _simulate_queues
from tidemark.generate.watermarks import _add_watermark_events

__all__ = [
    "BASE_DURATION_MS",
    "DEFAULT_EDGES",
    "DEFAULT_PARALLELISM",
    "EDGES",
    "EPOCH_START_MS",
    "MAX_LINES_PER_FILE",
    "SCENARIOS",
    "GenerateResult",
    "generate",
    "split_parallelism",
]

MAX_LINES_PER_FILE: int = 1_000_000
"""Most lines in one ``events-NNNNN.jsonl`` file."""

GRAPH_FILE: Final = "graph.jsonl"
MANIFEST_FILE: Final = "manifest.json"
_EVENTS_FILE_RE: Final = re.compile(r"events-\d{5}\.jsonl")


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


def generate(
    scenario: str,
    out_dir: Path,
    *,
    seed: int = 0,
    scale: int = 1,
    parallelism: int | tuple[int, int, int] = DEFAULT_PARALLELISM,
    edges: str = DEFAULT_EDGES,
    file_seconds: int | None = None,
) -> GenerateResult:
    """Write the event files of ``scenario`` into ``out_dir`` and return what was written.

    ``seed`` (>= 0) picks the random run, ``scale`` (>= 1) multiplies the simulated time and so
    the number of events (92k to 110k lines per unit, see the module docstring). ``parallelism``
    is the source, map and sink parallelism, or the job's total number of subtasks, split about
    1 : 2 : 1 (:func:`split_parallelism`); ``edges`` how their subtasks connect (:data:`EDGES`).
    With ``file_seconds``, a new events file starts at every ``file_seconds`` of arrival time
    (the manifest's ``file_spans`` lists the files of each span). ``out_dir`` is created if
    missing; it may already hold the output of an earlier run (``graph.jsonl``,
    ``events-NNNNN.jsonl``, ``manifest.json``), which is replaced, but nothing else.

    Raises :class:`ValueError` for an unknown scenario or edges, a bad seed, scale,
    parallelism or file span, or an output directory holding other files.
    """
    seed, scale = _check_args(scenario, seed, scale)
    graph = _check_graph(parallelism, edges, file_seconds)
    out_dir = Path(out_dir)
    _prepare_out_dir(out_dir)
    plan = _make_plan(scenario, seed, scale, graph, edges)
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
    span_ms = None if file_seconds is None else file_seconds * 1000
    event_files, counts, spans = _write_events(
        plan, tasks, tails, wm_start, out_dir, rng, per_file=MAX_LINES_PER_FILE, span_ms=span_ms
    )
    files = [graph_path, *event_files]
    n_lines = 3 + sum(counts.values())

    manifest = _manifest(plan, tasks, files, counts, n_lines, stopped_truth)
    if span_ms is not None:
        by_span: list[list[str]] = [[] for _ in range(max(spans, default=-1) + 1)]
        for path, span in zip(event_files, spans, strict=True):
            by_span[span].append(path.name)
        manifest["file_spans"] = {"span_ms": span_ms, "events_files": by_span}
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


def _check_graph(
    parallelism: int | tuple[int, int, int], edges: str, file_seconds: int | None
) -> tuple[int, int, int]:
    """Validate the job graph and file span; return the three parallelisms."""
    if edges not in EDGES:
        raise ValueError(f"unknown edges {edges!r}; choose one of: {', '.join(EDGES)}")
    if file_seconds is not None and (
        isinstance(file_seconds, bool)
        or not isinstance(file_seconds, numbers.Integral)
        or file_seconds < 1
    ):
        raise ValueError(f"file_seconds must be an integer >= 1, got {file_seconds!r}")
    if isinstance(parallelism, numbers.Integral) and not isinstance(parallelism, bool):
        return split_parallelism(int(parallelism))
    graph = tuple(parallelism) if isinstance(parallelism, (tuple, list)) else ()
    if len(graph) != 3 or not all(
        isinstance(p, numbers.Integral) and not isinstance(p, bool) and p >= 1 for p in graph
    ):
        raise ValueError(
            "parallelism must be the job's number of subtasks (>= 3) or three integers >= 1 "
            f"(source, map, sink), got {parallelism!r}"
        )
    return int(graph[0]), int(graph[1]), int(graph[2])


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
