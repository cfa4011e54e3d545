"""The watermark models end to end: `tidemark generate` / ingest / `dbt build`, as a user runs them.

* On the generator's `idle-source` scenario: a valve goes IDLE only when all its channels are
  idle (S1), emitted watermarks strictly increase (E3), and what each map subtask's valve emits
  is what the sinks receive from it (the generator runs its own valve, an independent check).
* An incremental run reads only the bronze files that can hold the events after its tasks'
  resume points (a bad row planted outside them is not read), and checkpoints from before
  `later_from_ms` migrate by themselves (both deep).
* Incremental equals full refresh: the events cut into seeded random ingest batches (late events,
  duplicate deliveries, shuffled files), `dbt build` after each, give exactly the watermark marts
  of one `dbt build --full-refresh` over all the files on a fresh lake.

Every dbt run costs 30-60 s on two cores, so the incremental tests are `deep`: `make test-deep`
runs four examples (TIDEMARK_WATERMARK_EXAMPLES; CI two; the first in order, late events, default
semantics, odd ones batch at random with the later semantics), `make test` none. Builds select
the watermark models and what they need (`+int_valve_states_checkpointed`); the last
incremental one runs their data tests, never the unit tests, which do not depend on the data and
run on the demo lake.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.e2e.conftest import DemoLake
from tests.e2e.harness import dbt, tidemark, warehouse_rows
from tests.e2e.warm import WarmLake
from tests.events import status, watermark, write_jsonl
from tests.unit.test_valve import (
    REALIGN_VECTOR,
    SKIPPED_FLUSH_VECTOR,
    interleave,
    random_stream,
)
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e

SELECT = ["--select", "+int_valve_states_checkpointed", "--exclude", "test_type:unit"]
MARTS = (
    "fct_valve_emissions",
    "fct_task_watermarks",
    "fct_watermark_seconds",
    "fct_vertex_watermark_seconds",
)
BATCHES = 3
EXAMPLES = int(os.environ.get("TIDEMARK_WATERMARK_EXAMPLES", "1"))
# 2024-01-01T00:59:30Z: the hand-built streams cross an hour, so the marts' partitions split.
BASE_MS = 1_704_070_770_000


def canonical(rows: list[dict]) -> list[tuple]:
    return sorted((tuple(sorted((k, repr(v)) for k, v in row.items())) for row in rows), key=repr)


def read_events(folder: Path) -> list[dict]:
    events = []
    for path in sorted(folder.glob("*.jsonl")):
        with path.open() as handle:
            events.extend(json.loads(line) for line in handle if line.strip())
    return events


def task_key(row: dict) -> tuple:
    return (row["job_id"], row["vertex_id"], row["subtask_index"], row.get("attempt", 0))


# ---------------------------------------------------------------------------- idle-source


@pytest.fixture(scope="module")
def idle_source(demo_lake: DemoLake) -> dict:
    """The idle-source scenario's events and watermark marts, from the suite's demo lake."""
    manifest = demo_lake.manifests["idle-source"]
    lake = demo_lake.lake

    def rows(name: str) -> list[dict]:
        return warehouse_rows(
            lake, "tidemark", name, job_id=manifest["job_id"], warm=demo_lake.warm
        )

    return {
        "lake": lake,
        "events": [
            e
            for e in read_events(demo_lake.events["idle-source"])
            if e["type"] in ("watermark", "watermark_status")
        ],
        "manifest": manifest,
        "emissions": rows("fct_valve_emissions"),
        "timeline": rows("fct_task_watermarks"),
        "seconds": rows("fct_watermark_seconds"),
        "vertex_seconds": rows("fct_vertex_watermark_seconds"),
    }


def test_idle_source_valves_go_idle_only_when_all_their_channels_are_idle(idle_source) -> None:
    """S1(a)/S3: IDLE only when the last active channel goes idle; ACTIVE only when one is back."""
    channel_idle: dict[tuple, dict[int, bool]] = defaultdict(dict)
    sizes: dict[tuple, int] = {}
    by_event: dict[tuple, list[dict]] = defaultdict(list)
    for row in idle_source["emissions"]:
        by_event[(*task_key(row), row["input_index"], row["seq"])].append(row)
    most_idle: dict[tuple, int] = defaultdict(int)
    for event in sorted(idle_source["events"], key=lambda e: (task_key(e), e["seq"])):
        valve = (*task_key(event), event["input_index"])
        sizes[valve] = event["num_channels"]
        if event["type"] == "watermark_status":
            channel_idle[valve][event["channel_index"]] = event["status"] == "IDLE"
        idle = sum(channel_idle[valve].values())
        most_idle[valve] = max(most_idle[valve], idle)
        for row in by_event.get((*valve, event["seq"]), []):
            if row["kind"] == "status":
                assert (row["status"] == "IDLE") == (idle == sizes[valve]), (valve, row)
    # The stopped source is one of the two channels of every map valve: each had one idle
    # channel for a while, and none of them may go idle (nor, downstream, the sinks).
    stopped = idle_source["manifest"]["truth"]["stopped_source"]
    vertices = {v["role"]: v["vertex_id"] for v in idle_source["manifest"]["vertices"]}
    assert stopped["vertex_id"] == vertices["source"]
    map_valves = [v for v in sizes if v[1] == vertices["map"]]
    assert len(map_valves) == 4
    assert all(most_idle[v] == 1 and sizes[v] == 2 for v in map_valves)
    assert all(r["kind"] == "watermark" for r in idle_source["emissions"])


def test_idle_source_emitted_watermarks_never_decrease(idle_source) -> None:
    """E3 per valve, C4 per task clock, and per second."""
    last: dict[tuple, int] = {}
    for row in sorted(idle_source["emissions"], key=lambda r: (r["seq"], r["emission_index"])):
        if row["kind"] == "watermark":
            valve = (*task_key(row), row["input_index"])
            assert row["watermark_ms"] > last.get(valve, -(2**63)), row
            last[valve] = row["watermark_ms"]
    assert len(last) == 6  # 4 map and 2 sink valves
    for rows, order in (
        (idle_source["timeline"], lambda r: (r["seq"], r["change_index"])),
        (idle_source["seconds"], lambda r: r["second_start_ms"]),
    ):
        seen: dict[tuple, int] = {}
        for row in sorted(rows, key=order):
            if row["watermark_ms"] is not None:
                assert row["watermark_ms"] >= seen.get(task_key(row), -(2**63)), row
                seen[task_key(row)] = row["watermark_ms"]


def test_idle_source_sinks_receive_what_the_map_valves_emit(idle_source) -> None:
    """The generator forwards each map subtask's valve output to every sink: same watermarks."""
    vertices = {v["role"]: v["vertex_id"] for v in idle_source["manifest"]["vertices"]}
    emitted: dict[int, list[int]] = defaultdict(list)
    for row in sorted(idle_source["emissions"], key=lambda r: (r["seq"], r["emission_index"])):
        if row["vertex_id"] == vertices["map"] and row["kind"] == "watermark":
            emitted[row["subtask_index"]].append(row["watermark_ms"])
    received: dict[tuple[int, int], list[int]] = defaultdict(list)
    for event in sorted(idle_source["events"], key=lambda e: (task_key(e), e["seq"])):
        if event["vertex_id"] == vertices["sink"] and event["type"] == "watermark":
            got = received[(event["subtask_index"], event["channel_index"])]
            if not got or event["watermark_ms"] > got[-1]:  # stale repeats are dropped (W2)
                got.append(event["watermark_ms"])
    assert len(emitted) == 4 and len(received) == 8
    for (sink, channel), values in received.items():
        assert values == emitted[channel][: len(values)], (sink, channel)
        assert len(values) > 0.9 * len(emitted[channel])


def test_idle_source_seconds_and_vertex_figures(idle_source) -> None:
    """Every task second is there; the map vertex follows its subtasks that are not idle."""
    seconds = idle_source["seconds"]
    per_task: dict[tuple, list[int]] = defaultdict(list)
    for row in seconds:
        per_task[task_key(row)].append(row["second_start_ms"])
    for starts in per_task.values():
        assert sorted(starts) == list(range(min(starts), max(starts) + 1000, 1000))
    lag = [r["watermark_lag_ms"] for r in seconds if r["watermark_lag_ms"] is not None]
    assert min(lag) > 0 and max(lag) < 10_000  # bounded out-of-orderness plus the interval
    assert not any(r["is_idle"] for r in seconds)
    vertex_rows = idle_source["vertex_seconds"]
    assert {r["num_subtasks"] for r in vertex_rows} == {2, 4}
    for row in vertex_rows:
        members = [
            s["watermark_ms"]
            for s in seconds
            if s["vertex_id"] == row["vertex_id"] and s["second_start_ms"] == row["second_start_ms"]
        ]
        if None not in members:
            assert row["watermark_ms"] == min(members)


@pytest.mark.deep
def test_an_incremental_run_reads_bronze_only_where_its_tasks_resume(tmp_path: Path) -> None:
    """Deep: four dbt runs of the watermark models, two minutes of `make test` on two cores.

    An incremental run feeds a task the events after its checkpoint, and reads only the
    bronze files that can hold them (int_valve_outputs_computed): after the previous run's final
    state, the files landed since. A row planted in bronze outside that reach (the first commit,
    an hour earlier, a channel no valve has) is not read: the incremental run succeeds; a full
    refresh of the same lake reads it and fails naming it. Before the bound, every run read the
    whole of bronze and failed on it too."""
    from deltalake import DeltaTable, write_deltalake

    lake = Lake.from_env(tmp_path / "lake")

    def events(seqs: range) -> list[dict]:
        return [
            watermark(
                seq,
                ts_ms=BASE_MS + 1_000 * seq,
                channel_index=seq % 2,
                num_channels=2,
                watermark_ms=BASE_MS + 1_000 * seq - 500,
            )
            for seq in seqs
        ]

    with WarmLake(lake) as warm:
        warm.dbt("run", *SELECT).check()  # no events yet: a plan without tasks feeds nothing
        first = write_jsonl(tmp_path / "first.jsonl", events(range(1, 40)))
        warm.tidemark("ingest", str(first)).check()
        warm.dbt("run", *SELECT).check()
        path = lake.bronze_table("watermark_events")
        table = DeltaTable(str(path)).to_pyarrow_dataset().to_table()
        planted = table.slice(0, 1).to_pylist()[0]
        planted.update(seq=10_000, ts_ms=BASE_MS - 3_600_000, channel_index=5, line_number=99)
        import pyarrow as pa

        files_before = set(_data_files(path))
        write_deltalake(
            str(path), pa.Table.from_pylist([planted], schema=table.schema), mode="append"
        )
        (planted_file,) = set(_data_files(path)) - files_before
        second = write_jsonl(tmp_path / "second.jsonl", events(range(40, 60)))
        warm.tidemark("ingest", str(second)).check()
        landed = set(_data_files(path)) - files_before - {planted_file}
        result = warm.dbt("run", *SELECT)
        assert result.returncode == 0, result.stdout[-5000:]
        # The run named the files it read (macros/tidemark_bronze_reach.sql): the new ones only.
        compiled = lake.root.parent / ".dbt" / "target" / "run" / "tidemark" / "models"
        for model in ("int_valve_tasks_planned", "int_valve_outputs_computed"):
            sql = _compiled_sql(compiled, model)
            named = re.findall(r"data_file in \(([^)]*)\)", sql)
            assert named and all(set(re.findall(r"'([^']+)'", n)) == landed for n in named), sql
        # The plan reads those files once (its tasks, the stale ones and its newest commit).
        plan = lake.root.parent / ".dbt" / "target" / "compiled" / "tidemark" / "models"
        sql = _compiled_sql(plan, "int_valve_tasks_planned")
        assert warm.bronze_scans(sql) == ["watermark_events"], sql
        emitted = warm.sql_rows("select max(seq) as seq from tidemark.fct_valve_emissions")
        assert emitted[0]["seq"] == 59
        result = warm.dbt("run", "--full-refresh", *SELECT)
        assert result.returncode != 0, result.stdout[-5000:]
        assert "seq=10000: channel 5 is outside [0, 2)" in result.stdout, result.stdout[-5000:]


@pytest.mark.deep
def test_checkpoints_kept_from_before_later_from_ms_gain_the_column(tmp_path: Path) -> None:
    """A lake whose checkpoints predate `later_from_ms` (CHANGELOG, Migration): the next run adds
    the column, NULL in the old checkpoints, resumes from them reading all of bronze, and gives
    the marts a full refresh gives. A one-time upgrade path and a minute on two cores, which
    `make test` has no room for: `make test-deep` and CI run it."""
    lake = Lake.from_env(tmp_path / "lake")
    checkpoints = "tidemark_intermediate.int_valve_states_checkpointed"
    old_columns = (
        "vertex_id, subtask_index, attempt, batch_id, seq, first_ms, effective_ms,"
        " resumed_after_seq, state, semantics, task_inputs, processed_ingest_id, job_id"
    )
    with WarmLake(lake) as warm:
        first = [
            watermark(seq, ts_ms=BASE_MS + 1_000 * seq, channel_index=seq % 2)
            for seq in range(1, 40)
        ]
        warm.tidemark("ingest", str(write_jsonl(tmp_path / "first.jsonl", first))).check()
        warm.dbt("run", *SELECT).check()
        warm.sql_rows(
            f"create table {checkpoints}_old using parquet partitioned by (job_id)"
            f" as select {old_columns} from {checkpoints}"
        )
        warm.sql_rows(f"drop table {checkpoints}")
        warm.sql_rows(f"alter table {checkpoints}_old rename to {checkpoints}")
        second = [
            watermark(seq, ts_ms=BASE_MS + 1_000 * seq, channel_index=seq % 2)
            for seq in range(40, 60)
        ]
        warm.tidemark("ingest", str(write_jsonl(tmp_path / "second.jsonl", second))).check()
        warm.dbt("run", *SELECT).check()
        kept = warm.sql_rows(
            "select count_if(later_from_ms is null) as old,"
            f" count_if(later_from_ms is not null) as new from {checkpoints}"
        )
        assert kept[0]["old"] > 0 and kept[0]["new"] > 0, kept
        incremental = {name: warm.sql_rows(f"select * from tidemark.{name}") for name in MARTS}
        warm.dbt("run", "--full-refresh", *SELECT).check()
        for name in MARTS:
            want = warm.sql_rows(f"select * from tidemark.{name}")
            assert canonical(incremental[name]) == canonical(want), name


def _compiled_sql(models: Path, model: str) -> str:
    """A model's compiled SQL wherever its folder is (a model moving folder breaks no test)."""
    (path,) = models.rglob(f"{model}.sql")
    return path.read_text()


def _data_files(path: Path) -> list[str]:
    from deltalake import DeltaTable

    return [uri.rsplit("/", 1)[-1] for uri in DeltaTable(str(path)).file_uris()]


# ---------------------------------------------------------------------------- incremental


def hand_built_events(rng: random.Random) -> list[dict]:
    """Tasks the generator does not make: a two-input task, many channels, statuses, a restart.

    Streams come from the edge-case-biased generator of the valve's unit tests (lastOut ties,
    catch-up, all channels idle, Long.MIN/MAX), with a clock that sometimes steps back and
    crosses an hour boundary.
    """
    events = []
    specs = [
        ("join", 0, 0, {0: 3, 1: 2}),
        ("wide", 0, 0, {0: 7}),
        ("wide", 1, 0, {0: 2}),
        ("wide", 1, 1, {0: 2}),  # a restart: attempt 1 starts fresh
    ]
    for vertex_id, subtask, attempt, inputs in specs:
        streams = {i: random_stream(rng, n, 120) for i, n in inputs.items()}
        first_seq = rng.randrange(3)
        first_ts = BASE_MS + attempt * 25_000 + rng.randrange(4_000)
        for seq, ts, i, (is_status, channel, value) in interleave(
            rng, streams, first_seq, first_ts, [1, 1, 2, 5], [0, 40, 150, 400, -300]
        ):
            task = {
                "job_id": "job-2",
                "vertex_id": vertex_id,
                "subtask_index": subtask,
                "attempt": attempt,
                "seq": seq,
                "ts_ms": ts,
                "input_index": i,
                "channel_index": channel,
                "num_channels": inputs[i],
            }
            if is_status:
                events.append(status(**task, status=value))
            else:
                events.append(watermark(**task, watermark_ms=value))
    return events


def batches_of(events: list[dict], rng: random.Random, mode: str, n: int) -> list[list[dict]]:
    """`n` ingest batches. `in_order`: cut by time; for half of the tasks some events near the end
    of a batch arrive with the next one (late events, a few seconds older than the newest of the
    task already processed), the other tasks only ever get newer events. `random`: each event in
    a random batch. Some events are delivered twice."""
    if mode == "in_order":
        ordered = sorted(events, key=lambda e: e["ts_ms"])
        cut = [len(ordered) * (k + 1) // n for k in range(n)]
        batches = [ordered[(cut[k - 1] if k else 0) : cut[k]] for k in range(n)]
        # Sorted: a set's order follows the process's string hashing, so the same seed picked
        # other tasks in another run (and sometimes none that resumed from its last run's end).
        jittered = {key for key in sorted({task_key(e) for e in events}) if rng.random() < 0.5}
        for k in range(n - 1):
            tail_from = int(len(batches[k]) * 0.95)
            kept, moved = batches[k][:tail_from], []
            for event in batches[k][tail_from:]:
                if task_key(event) in jittered and rng.random() < 0.3:
                    moved.append(event)
                else:
                    kept.append(event)
            batches[k] = kept
            batches[k + 1].extend(moved)
    else:
        batches = [[] for _ in range(n)]
        for event in events:
            batches[rng.randrange(n)].append(event)
    for event in rng.sample(events, k=min(25, len(events))):
        batches[rng.randrange(n)].append(event)
    return batches


@pytest.mark.deep
@pytest.mark.parametrize("example", range(EXAMPLES))
def test_incremental_builds_equal_a_full_refresh(example: int, tmp_path: Path) -> None:
    """Contract §5 for the watermark marts, whatever the batching, order and duplicates."""
    rng = random.Random(4_000 + example)
    mode = ("in_order", "random")[example % 2]
    semantics = ("flink-1.13-2.0", "flink-40475")[example % 2]
    build = [*SELECT, "--vars", f"{{valve_semantics: {semantics}}}"]
    scenario = tmp_path / "scenario"
    tidemark(
        "generate", "--scenario", "idle-source", "--out", str(scenario), "--seed", str(example),
        lake=Lake.from_env(tmp_path / "unused"),
    ).check()  # fmt: skip
    events = [
        e for e in read_events(scenario) if e["type"] in ("watermark", "watermark_status")
    ] + hand_built_events(rng)

    incremental = Lake.from_env(tmp_path / "incremental" / "lake")
    files: list[Path] = []
    runs: list[dict[tuple, tuple[int, int]]] = []  # per run: task -> (resumed_after_seq, seq)
    for k, batch in enumerate(batches_of(events, rng, mode, BATCHES)):
        rng.shuffle(batch)
        half = len(batch) // 2
        folder = tmp_path / f"batch-{k}"
        folder.mkdir()
        parts = [
            write_jsonl(folder / f"part-{p}.jsonl", c)
            for p, c in enumerate((batch[:half], batch[half:]))
            if c
        ]
        rng.shuffle(parts)
        files += parts
        tidemark("ingest", *map(str, parts), lake=incremental).check()
        dbt("build" if k == BATCHES - 1 else "run", *build, lake=incremental).check()
        runs.append(
            {
                task_key(r): (r["resumed_after_seq"], r["seq"])
                for r in warehouse_rows(
                    incremental, "tidemark_intermediate", "int_valve_outputs_computed"
                )
                if r["row_kind"] == "state"
            }
        )

    full = Lake.from_env(tmp_path / "full" / "lake")
    tidemark("ingest", *map(str, files), lake=full).check()
    dbt("run", "--full-refresh", *build, lake=full).check()

    if mode == "in_order":
        # The paths this example is for: tasks resumed from their last run's end (new events
        # only) and tasks resumed from a checkpoint made along the way (late events).
        resumes = [
            (after, runs[k - 1][key][1])
            for k in range(1, len(runs))
            for key, (after, _) in runs[k].items()
            if key in runs[k - 1]
        ]
        assert any(after == previous_end for after, previous_end in resumes), resumes
        assert any(0 <= after < previous_end for after, previous_end in resumes), resumes

    for name in MARTS:
        want = warehouse_rows(full, "tidemark", name)
        got = warehouse_rows(incremental, "tidemark", name)
        assert len(want) > 100, f"{name}: the full refresh is nearly empty"
        assert canonical(got) == canonical(want), f"tidemark.{name} differs from a full refresh"


@pytest.mark.deep
def test_changing_valve_semantics_recomputes_every_task(tmp_path: Path) -> None:
    """A build with another `valve_semantics` and no new events equals a full refresh with it."""
    events = hand_built_events(random.Random(99))
    # Flink's vectors where the two semantics differ (E6 stall, E7 skipped flush), one task each.
    for subtask, vector in enumerate((SKIPPED_FLUSH_VECTOR, REALIGN_VECTOR)):
        for seq, (op, channel, value, *_) in enumerate(vector):
            task = {"vertex_id": "vectors", "subtask_index": subtask, "seq": seq}
            task.update(ts_ms=BASE_MS + 100 * seq, channel_index=channel, num_channels=3)
            if op == "w":
                events.append(watermark(**task, watermark_ms=value))
            else:
                events.append(status(**task, status=value))
    path = write_jsonl(tmp_path / "events.jsonl", events)
    old = ["--vars", "{valve_semantics: flink-1.13-2.0}"]
    new = ["--vars", "{valve_semantics: flink-40475}"]

    switched = Lake.from_env(tmp_path / "switched" / "lake")
    tidemark("ingest", str(path), lake=switched).check()
    dbt("run", *SELECT, *old, lake=switched).check()
    before = warehouse_rows(switched, "tidemark", "fct_valve_emissions")
    dbt("run", *SELECT, *new, lake=switched).check()

    full = Lake.from_env(tmp_path / "full" / "lake")
    tidemark("ingest", str(path), lake=full).check()
    dbt("run", "--full-refresh", *SELECT, *new, lake=full).check()

    want = warehouse_rows(full, "tidemark", "fct_valve_emissions")
    assert canonical(before) != canonical(want), "the streams do not tell the semantics apart"
    for name in MARTS:
        got = warehouse_rows(switched, "tidemark", name)
        want = warehouse_rows(full, "tidemark", name)
        assert canonical(got) == canonical(want), f"tidemark.{name} differs from a full refresh"
