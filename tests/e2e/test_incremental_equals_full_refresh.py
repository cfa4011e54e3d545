"""Contract §5: incremental runs give exactly the marts of one full refresh over all the files.

Hypothesis draws random task event streams (timer events of every gauge and action, watermark
events, clocks that sometimes run backwards, restarts as new attempts, vertex records that change
busy_time_enabled), cuts them into random ingest batches in random file order with duplicate
deliveries and late events (a batch holds events of lower seq than ones landed before), and runs
`tidemark ingest` + `dbt build` of the gauge models and what reads them after every batch. Every
table built in schema `tidemark` must then equal a `dbt build --full-refresh` of all the files on
a fresh lake (the watermark marts: test_watermarks.py).

Each dbt run costs ~30 s, so this is a `deep` test: `make test-deep` draws 8 examples
(TIDEMARK_PROPERTY_EXAMPLES; CI draws 2), `make test` none, and there is no shrinking; a
failure prints the drawn example and keeps its lakes. Batches before the last `dbt run`; the
last batch's `dbt build` runs the data tests too (not the unit tests: they do not depend on the
data and run on the demo lake).
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, note, settings
from hypothesis import strategies as st

from tests.e2e.harness import dbt, tidemark, warehouse_tables
from tests.events import timer, vertex, watermark, write_jsonl
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e

# 2024-01-01T00:09:20Z: the streams cross a ten-minute slice of an hour, so the marts' partitions
# split inside one hour_at (the watermark property test, test_watermarks.py, crosses an hour).
BASE_MS = 1_704_067_760_000
JOB = "job-1"
VERTICES = ("source", "map")
EXAMPLES = int(os.environ.get("TIDEMARK_PROPERTY_EXAMPLES", "1"))
# The gauge models and everything downstream of them (the analysis marts); the watermark marts
# have their own property test in test_watermarks.py.
GAUGE_MODELS = "int_timer_events_landed+"
# The metric views join dim_vertices, which the gauge models do not select.
METRIC_VIEWS = "path:models/marts/metrics"
TIMERS = ("idle", "soft_backpressured", "hard_backpressured", "backpressured")


@st.composite
def task_stream(draw: st.DrawFn, vertex_id: str, subtask: int, attempt: int) -> list[dict]:
    """One task's events in seq order: seq gaps, a clock that mostly moves forward."""
    task = {"job_id": JOB, "vertex_id": vertex_id, "subtask_index": subtask, "attempt": attempt}
    seq = draw(st.integers(0, 3))
    ts = BASE_MS + draw(st.integers(0, 8_000)) + attempt * 20_000
    events = []
    for _ in range(draw(st.integers(1, 24))):
        seq += draw(st.integers(1, 3))
        ts += draw(st.one_of(st.integers(0, 2_600), st.integers(0, 9_000), st.integers(-1_500, 0)))
        if draw(st.integers(0, 5)) == 0:
            events.append(watermark(seq, ts_ms=ts, watermark_ms=ts - 1_000, **task))
        else:
            events.append(
                timer(
                    seq,
                    ts_ms=ts,
                    timer=draw(st.sampled_from(TIMERS)),
                    action=draw(st.sampled_from(("start", "end"))),
                    **task,
                )
            )
    return events


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from(VERTICES), st.integers(0, 1), st.integers(0, 1)),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    events = [e for key in keys for e in draw(task_stream(*key))]
    # `map` reads `source`: with vertex records `map` is a sink (B1: samples false), `source` not.
    # The job's Flink release (contract §8) decides its rounds' ring (T5); the first records may
    # not name it, and a later one may (issue 66: a job's tasks replay when it becomes known).
    release = draw(st.sampled_from((None, "1.15.4", "2.3.0")))
    named_at_first = release is not None and draw(st.booleans())
    vertices = [
        vertex(
            vertex_id=v,
            busy_time_enabled=draw(st.booleans()),
            upstream_vertex_ids=["source"] if v == "map" else [],
            **({"flink_version": release} if named_at_first else {}),
        )
        for v in VERTICES
        if draw(st.booleans())
    ]
    if vertices and draw(st.booleans()):  # a later record changes a vertex (latest wins)
        changed = dict(vertices[0])
        changed["busy_time_enabled"] = not changed["busy_time_enabled"]
        if release is not None:
            changed["flink_version"] = release
        vertices.append(changed)
    records = events + vertices
    n_batches = draw(st.integers(2, 3))
    batch_of = [draw(st.integers(0, n_batches - 1)) for _ in records]
    # Records of one vertex keep their order (the latest landed record wins).
    seen_vertex: dict[str, int] = {}
    for i, record in enumerate(records):
        if record["type"] == "vertex":
            batch_of[i] = max(batch_of[i], seen_vertex.get(record["vertex_id"], 0))
            seen_vertex[record["vertex_id"]] = batch_of[i]
    batches: list[list[dict]] = [[] for _ in range(n_batches)]
    for record, batch in zip(records, batch_of, strict=True):
        batches[batch].append(record)
    # Duplicate deliveries: some events arrive again in a later (or the same) batch.
    for record in draw(st.lists(st.sampled_from(events), max_size=4)):
        batches[draw(st.integers(0, n_batches - 1))].append(record)
    shuffle_seed = draw(st.integers(0, 2**32 - 1))
    return {
        "batches": batches,
        "seed": shuffle_seed,
        "files_per_batch": draw(st.integers(1, 2)),
        "vars": {
            "flink_gauge_window_s": draw(st.sampled_from((60, 10))),
            # 3 s forces some resumes back to a task's first event.
            "gauge_replay_lookback_s": draw(st.sampled_from((3600, 3))),
            # A sampling every 2 s puts many of them (and resumes inside them) in a stream.
            "legacy_backpressure_refresh_ms": draw(st.sampled_from((60000, 2000))),
            "legacy_backpressure_num_samples": 5,
            "legacy_backpressure_delay_ms": draw(st.sampled_from((50, 300))),
        },
    }


def _late_far_back() -> dict:
    """Late events 80 s before a task's horizon: int_timer_anchors_found's first look (the last
    minute of seconds) holds no candidate anchor, so the whole lookback is searched (0004)."""
    task = {"job_id": JOB, "vertex_id": "source", "subtask_index": 0, "attempt": 0}

    def event(seq: int) -> dict:
        action = "start" if seq % 2 else "end"
        return timer(seq, ts_ms=BASE_MS + seq * 10_000, timer="idle", action=action, **task)

    first = [event(seq) for seq in (*range(1, 11), *range(13, 21))]
    return {
        "batches": [first, [event(11), event(12), event(21)]],
        "seed": 1,
        "files_per_batch": 1,
        "vars": {
            "flink_gauge_window_s": 60,
            "gauge_replay_lookback_s": 3600,
            "legacy_backpressure_refresh_ms": 60000,
            "legacy_backpressure_num_samples": 5,
            "legacy_backpressure_delay_ms": 50,
        },
    }


def write_batch(folder: Path, records: list[dict], files: int, rng: random.Random) -> list[Path]:
    """Records shuffled into `files` files (vertex records keep their relative order)."""
    folder.mkdir(parents=True)
    others = [r for r in records if r["type"] != "vertex"]
    rng.shuffle(others)
    vertex_records = [r for r in records if r["type"] == "vertex"]
    chunks: list[list[dict]] = [[] for _ in range(files)]
    for i, record in enumerate(others):
        chunks[i % files].append(record)
    chunks[-1].extend(vertex_records)
    paths = []
    for i, chunk in enumerate(chunks):
        if chunk:
            paths.append(write_jsonl(folder / f"events-{i}.jsonl", chunk))
    return paths


def dbt_vars(values: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in values.items()) + "}"


@pytest.mark.deep
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(scenario=scenarios())
@example(scenario=_late_far_back())
def test_incremental_builds_equal_a_full_refresh(scenario: dict, tmp_path: Path) -> None:
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    note(f"work folder: {work}")
    note(f"scenario: {scenario}")
    rng = random.Random(scenario["seed"])
    build_vars = [
        *("--select", GAUGE_MODELS),
        *("--exclude", "test_type:unit", "fct_capture_conformance", METRIC_VIEWS),
        *("--vars", dbt_vars(scenario["vars"])),
    ]

    incremental = Lake.from_env(work / "incremental" / "lake")
    all_files: list[Path] = []
    batches = [
        write_batch(work / f"batch-{i}", batch, scenario["files_per_batch"], rng)
        for i, batch in enumerate(scenario["batches"])
    ]
    batches = [files for files in batches if files]
    for i, files in enumerate(batches):
        rng.shuffle(files)
        all_files.extend(files)
        tidemark("ingest", *map(str, files), lake=incremental).check()
        dbt("build" if i == len(batches) - 1 else "run", *build_vars, lake=incremental).check()

    full = Lake.from_env(work / "full" / "lake")
    tidemark("ingest", *map(str, all_files), lake=full).check()
    dbt("run", "--full-refresh", *build_vars, lake=full).check()

    got, want = warehouse_tables(incremental), warehouse_tables(full)
    assert {"fct_subtask_seconds", "fct_subtask_flink_gauges", "fct_vertex_seconds"} <= set(want)
    assert len(want["fct_subtask_seconds"]) > 1, "the full refresh has no task seconds"
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], f"tidemark.{name} differs from a full refresh"
