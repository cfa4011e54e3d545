"""Unit tests for the synthetic event generator (``tidemark.generate``).

Every scenario is generated once at scale 1 and checked line by line against the event contract
(contract.md section 1) with the strict validator below, then against Flink's rules for the
events (TimerGauge starts and ends alternate, M9: idle never overlaps back pressure) and against
the scenario's ground truth in ``manifest.json``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tidemark.generate as gen
from tidemark.generate import SCENARIOS, GenerateResult, generate
from tidemark.generate.plan import inputs_of

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
TASK_FIELDS = {"type", "job_id", "vertex_id", "subtask_index", "attempt", "seq", "ts_ms"}
FIELDS = {
    "vertex": {
        "type",
        "job_id",
        "vertex_id",
        "vertex_name",
        "parallelism",
        "busy_time_enabled",
        "upstream_vertex_ids",
    },
    "timer": TASK_FIELDS | {"timer", "action"},
    "watermark": TASK_FIELDS | {"input_index", "channel_index", "num_channels", "watermark_ms"},
    "watermark_status": TASK_FIELDS | {"input_index", "channel_index", "num_channels", "status"},
}
TIMERS = {"idle", "soft_backpressured", "hard_backpressured", "backpressured"}
BACKPRESSURE_TIMERS = TIMERS - {"idle"}
# `backpressured` is Flink <= 1.14's name for the soft back pressure gauge (contract.md).
GAUGE = {
    "idle": "idle",
    "soft_backpressured": "soft",
    "backpressured": "soft",
    "hard_backpressured": "hard",
}

Task = tuple[str, str, int, int]  # job_id, vertex_id, subtask_index, attempt


# --------------------------------------------------------------------------------------------
# Strict contract validator
# --------------------------------------------------------------------------------------------


def _is_int(x: object) -> bool:
    return type(x) is int  # not bool, not float


def contract_errors(rec: object) -> list[str]:
    """Everything wrong with one parsed record under contract.md section 1 (empty if valid)."""
    if not isinstance(rec, dict):
        return ["not a JSON object"]
    kind = rec.get("type")
    if kind not in FIELDS:
        return [f"bad type {kind!r}"]
    if rec.keys() != FIELDS[kind]:
        return [f"fields {sorted(set(rec) ^ FIELDS[kind])} missing or unexpected"]
    errors = []
    for key in ("job_id", "vertex_id"):
        if not isinstance(rec[key], str) or not rec[key]:
            errors.append(f"{key} must be a non-empty string")
    if kind == "vertex":
        if not isinstance(rec["vertex_name"], str):
            errors.append("vertex_name must be a string")
        if not _is_int(rec["parallelism"]) or rec["parallelism"] < 1:
            errors.append("parallelism must be an int >= 1")
        if type(rec["busy_time_enabled"]) is not bool:
            errors.append("busy_time_enabled must be a bool")
        up = rec["upstream_vertex_ids"]
        if not isinstance(up, list) or not all(isinstance(v, str) and v for v in up):
            errors.append("upstream_vertex_ids must be a list of non-empty strings")
        return errors
    for key in ("subtask_index", "attempt", "seq"):
        if not _is_int(rec[key]) or not 0 <= rec[key] <= LONG_MAX:
            errors.append(f"{key} must be an int >= 0")
    if not _is_int(rec["ts_ms"]) or not LONG_MIN <= rec["ts_ms"] <= LONG_MAX:
        errors.append("ts_ms must be a long")
    if kind == "timer":
        if rec["timer"] not in TIMERS:
            errors.append(f"bad timer {rec['timer']!r}")
        if rec["action"] not in ("start", "end"):
            errors.append(f"bad action {rec['action']!r}")
        return errors
    if not _is_int(rec["input_index"]) or rec["input_index"] < 0:
        errors.append("input_index must be an int >= 0")
    n_ch, ch = rec["num_channels"], rec["channel_index"]
    if not _is_int(n_ch) or n_ch < 1:
        errors.append("num_channels must be an int >= 1")
    elif not _is_int(ch) or not 0 <= ch < n_ch:
        errors.append("channel_index must be an int in [0, num_channels)")
    if kind == "watermark":
        w = rec["watermark_ms"]
        if not _is_int(w) or not LONG_MIN <= w <= LONG_MAX:
            errors.append("watermark_ms must be a long")
    elif rec["status"] not in ("IDLE", "ACTIVE"):
        errors.append(f"bad status {rec['status']!r}")
    return errors


def test_validator_rejects_what_the_contract_forbids() -> None:
    good = {
        "type": "watermark",
        "job_id": "j",
        "vertex_id": "v",
        "subtask_index": 0,
        "attempt": 0,
        "seq": 3,
        "ts_ms": 5,
        "input_index": 0,
        "channel_index": 1,
        "num_channels": 2,
        "watermark_ms": -7,
    }
    assert contract_errors(good) == []
    bad_variants = [
        {"seq": 3.0},
        {"seq": True},
        {"seq": -1},
        {"channel_index": 2},
        {"num_channels": 0},
        {"watermark_ms": 2**63},
        {"job_id": ""},
        {"type": "metric"},
        {"extra": 1},
    ]
    for change in bad_variants:
        assert contract_errors({**good, **change}), change
    assert contract_errors({k: v for k, v in good.items() if k != "ts_ms"})


# --------------------------------------------------------------------------------------------
# Loading a generated run
# --------------------------------------------------------------------------------------------


@dataclass
class Run:
    """A generated directory, parsed and checked against the contract on load."""

    result: GenerateResult
    manifest: dict[str, Any]
    vertices: dict[str, dict[str, Any]]
    lines: list[dict[str, Any]]  # task events in file order
    by_task: dict[Task, list[dict[str, Any]]] = field(default_factory=dict)  # in seq order

    def vertex_id(self, role: str) -> str:
        return next(v["vertex_id"] for v in self.manifest["vertices"] if v["role"] == role)

    def tasks(self, role: str) -> list[Task]:
        vid = self.vertex_id(role)
        return sorted(t for t in self.by_task if t[1] == vid)


def load(result: GenerateResult) -> Run:
    manifest = json.loads(result.manifest.read_text())
    vertices: dict[str, dict[str, Any]] = {}
    lines: list[dict[str, Any]] = []
    for path in result.files:
        raw = path.read_bytes()
        assert raw.endswith(b"\n") and b"\r" not in raw, path
        text = raw.decode("ascii")
        file_lines = text.splitlines()
        # One parse of the whole file (a third of the time of one a line): a line that is not
        # exactly one JSON value breaks the array or its length.
        records = json.loads("[" + ",".join(file_lines) + "]")
        assert len(records) == len(file_lines), path
        # No key twice (json.loads keeps the last): no string value here holds '":'.
        if text.count('":') != sum(map(len, records)):
            no, line = next(
                (no, line)
                for no, (line, rec) in enumerate(zip(file_lines, records, strict=True), 1)
                if line.count('":') != len(rec)
            )
            raise AssertionError(f"{path.name}:{no}: duplicate key: {line}")
        for no, rec in enumerate(records, 1):
            errors = contract_errors(rec)
            assert not errors, f"{path.name}:{no}: {errors}: {file_lines[no - 1]}"
            if rec["type"] == "vertex":
                assert path.name == "graph.jsonl"
                vertices[rec["vertex_id"]] = rec
            else:
                lines.append(rec)
    run = Run(result, manifest, vertices, lines)
    by_task: dict[Task, list[dict[str, Any]]] = defaultdict(list)
    for rec in lines:
        by_task[(rec["job_id"], rec["vertex_id"], rec["subtask_index"], rec["attempt"])].append(rec)
    run.by_task = {t: sorted(evs, key=lambda r: r["seq"]) for t, evs in by_task.items()}
    return run


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    base = tmp_path_factory.mktemp("generated")
    return {s: load(generate(s, base / s, seed=0, scale=1)) for s in SCENARIOS}


def timer_intervals(events: list[dict[str, Any]], end_ms: int) -> list[tuple[str, int, int]]:
    """Effective (gauge, start, end) measurements of one task's events in seq order."""
    open_at: dict[str, int] = {}
    out = []
    for ev in events:
        if ev["type"] != "timer":
            continue
        gauge = GAUGE[ev["timer"]]
        if ev["action"] == "start":
            open_at.setdefault(gauge, ev["ts_ms"])
        elif gauge in open_at:
            out.append((gauge, open_at.pop(gauge), ev["ts_ms"]))
    out += [(g, t, end_ms) for g, t in open_at.items()]
    return sorted(out, key=lambda x: x[1])


def total_ms(intervals: list[tuple[str, int, int]], gauges: set[str], lo: int, hi: int) -> int:
    return sum(max(0, min(e, hi) - max(s, lo)) for g, s, e in intervals if g in gauges)


# --------------------------------------------------------------------------------------------
# Arguments, output directory, determinism, size
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scenario": "nope"}, "unknown scenario 'nope'; choose one of: steady, backpressure"),
        ({"scale": 0}, "scale must be an integer >= 1, got 0"),
        ({"scale": 1.5}, "scale must be an integer >= 1"),
        ({"scale": True}, "scale must be an integer >= 1"),
        ({"seed": -1}, "seed must be an integer >= 0, got -1"),
        ({"parallelism": 2}, "a job of source, map and sink needs at least 3 subtasks, got 2"),
        ({"parallelism": (2, 0, 2)}, "parallelism must be the job's number of subtasks (>= 3)"),
        ({"parallelism": (2, 4)}, "parallelism must be the job's number of subtasks (>= 3)"),
        ({"parallelism": "8"}, "parallelism must be the job's number of subtasks (>= 3)"),
        ({"edges": "hash"}, "unknown edges 'hash'; choose one of: all-to-all, pointwise"),
        ({"file_seconds": 0}, "file_seconds must be an integer >= 1, got 0"),
    ],
)
def test_bad_arguments_raise_value_error(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    args: dict[str, Any] = {"scenario": "steady", "seed": 0, "scale": 1, **kwargs}
    with pytest.raises(ValueError, match="^" + re.escape(message)) as err:
        generate(args.pop("scenario"), tmp_path / "out", **args)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def test_refuses_a_directory_with_foreign_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty .*notes.txt.*choose an empty or new"):
        generate("steady", tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    sub = tmp_path / "sub"
    (sub / "nested").mkdir(parents=True)
    with pytest.raises(ValueError, match="nested"):
        generate("steady", sub)
    target = tmp_path / "file.jsonl"
    target.write_text("")
    with pytest.raises(ValueError, match="not a directory"):
        generate("steady", target)


def test_overwrites_its_own_earlier_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gen, "MAX_LINES_PER_FILE", 10_000)
    first = generate("steady", tmp_path, seed=1)
    assert len(first.files) > 3
    monkeypatch.setattr(gen, "MAX_LINES_PER_FILE", 1_000_000)
    second = generate("backpressure", tmp_path, seed=1)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["events-00000.jsonl", "graph.jsonl", "manifest.json"]  # stale files gone
    assert second.files == [tmp_path / "graph.jsonl", tmp_path / "events-00000.jsonl"]
    assert json.loads(second.manifest.read_text())["scenario"] == "backpressure"


def _read_all(result: GenerateResult) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in [*result.files, result.manifest]}


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    for scenario in ("restart", "idle-source"):
        a = generate(scenario, tmp_path / f"{scenario}-a", seed=7)
        b = generate(scenario, tmp_path / f"{scenario}-b", seed=7)
        assert a.events == b.events
        assert _read_all(a) == _read_all(b)


def test_different_seed_gives_different_bytes(tmp_path: Path) -> None:
    a = _read_all(generate("steady", tmp_path / "a", seed=1))
    b = _read_all(generate("steady", tmp_path / "b", seed=2))
    assert a.keys() == b.keys()
    assert all(a[name] != b[name] for name in a)


def test_files_are_split_at_the_line_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = generate("skew", tmp_path / "whole", seed=3)
    monkeypatch.setattr(gen, "MAX_LINES_PER_FILE", 7_000)
    split = generate("skew", tmp_path / "split", seed=3)
    names = [p.name for p in split.files]
    assert names[0] == "graph.jsonl"
    assert names[1:] == [f"events-{i:05d}.jsonl" for i in range(len(names) - 1)]
    counts = [p.read_bytes().count(b"\n") for p in split.files[1:]]
    assert all(c == 7_000 for c in counts[:-1]) and 0 < counts[-1] <= 7_000
    joined = b"".join(p.read_bytes() for p in split.files[1:])
    assert joined == whole.files[1].read_bytes()
    assert split.events == whole.events == 3 + sum(counts)
    manifest = json.loads(split.manifest.read_text())
    assert manifest["files"] == names
    assert manifest["events"] == split.events


def test_files_roll_on_arrival_time(tmp_path: Path) -> None:
    """With ``file_seconds`` every file holds the lines of one span of arrival time."""
    whole = generate("restart", tmp_path / "whole", seed=4)
    rolled = generate("restart", tmp_path / "rolled", seed=4, file_seconds=40)
    joined = b"".join(p.read_bytes() for p in rolled.files[1:])
    assert joined == whole.files[1].read_bytes()  # the same lines in the same order
    manifest = json.loads(rolled.manifest.read_text())
    spans = manifest["file_spans"]
    assert spans["span_ms"] == 40_000
    assert [n for names in spans["events_files"] for n in names] == manifest["files"][1:]
    assert len(spans["events_files"]) == 4  # 150 s in spans of 40 s
    start = manifest["epoch_start_ms"]
    for span, names in enumerate(spans["events_files"]):
        ts = [
            json.loads(line)["ts_ms"]
            for name in names
            for line in (tmp_path / "rolled" / name).read_text().splitlines()
        ]
        # Lines arrive up to 300 ms after their ts_ms; late ones stay in the last span.
        assert min(ts) >= start + span * 40_000 - 300
        if span < 3:
            assert max(ts) < start + (span + 1) * 40_000


@pytest.mark.parametrize(
    ("upstream", "downstream", "edges", "want"),
    [
        # Flink's EdgeManagerBuildUtil.connectPointwise, worked by hand.
        (3, 3, "pointwise", [(0,), (1,), (2,)]),
        (3, 5, "pointwise", [(0,), (0,), (1,), (1,), (2,)]),
        (2, 5, "pointwise", [(0,), (0,), (0,), (1,), (1,)]),
        (5, 2, "pointwise", [(0, 1), (2, 3, 4)]),
        (7, 3, "pointwise", [(0, 1), (2, 3), (4, 5, 6)]),
        (4, 1, "pointwise", [(0, 1, 2, 3)]),
        (2, 3, "all-to-all", [(0, 1), (0, 1), (0, 1)]),
    ],
)
def test_channels_follow_flinks_distribution_patterns(
    upstream: int, downstream: int, edges: str, want: list[tuple[int, ...]]
) -> None:
    assert list(inputs_of(upstream, downstream, edges)) == want


def test_parallelism_of_a_whole_job_is_split_one_two_one(tmp_path: Path) -> None:
    assert gen.split_parallelism(8) == (2, 4, 2)
    assert gen.split_parallelism(1000) == (250, 500, 250)
    assert gen.split_parallelism(3) == (1, 1, 1)
    run = load(generate("steady", tmp_path, parallelism=12, edges="pointwise"))
    assert run.manifest["edges"] == "pointwise"
    got = tuple(run.vertices[run.vertex_id(r)]["parallelism"] for r in ("source", "map", "sink"))
    assert got == (3, 6, 3)


def test_another_graph_is_another_job(tmp_path: Path, runs: dict[str, Run]) -> None:
    """Two graphs of one seed never share ids, so both can sit in one lake."""
    other = json.loads(generate("steady", tmp_path, edges="pointwise").manifest.read_text())
    ids = {runs["steady"].manifest["job_id"], other["job_id"]}
    ids |= {v["vertex_id"] for v in runs["steady"].manifest["vertices"]}
    ids |= {v["vertex_id"] for v in other["vertices"]}
    assert len(ids) == 8


def test_scale_two_gives_about_twice_the_events(tmp_path: Path, runs: dict[str, Run]) -> None:
    for scenario in ("steady", "backpressure"):
        double = generate(scenario, tmp_path / scenario, seed=0, scale=2)
        ratio = double.events / runs[scenario].result.events
        assert 1.8 <= ratio <= 2.2, (scenario, ratio)
        manifest = json.loads(double.manifest.read_text())
        duration = manifest["epoch_end_ms"] - manifest["epoch_start_ms"]
        assert duration == 2 * gen.BASE_DURATION_MS


def test_one_scale_unit_is_about_a_hundred_thousand_events(runs: dict[str, Run]) -> None:
    for scenario, run in runs.items():
        assert 70_000 <= run.result.events <= 130_000, (scenario, run.result.events)


def test_line_builder_matches_plain_formatting() -> None:
    """The numpy line builder writes exactly what an f-string would, edge numbers included."""
    rng = np.random.default_rng(0)
    heads = ['{"type":"timer","seq":', '{"type":"watermark_status","subtask_index":12,"seq":']
    tails = [',"timer":"idle"}', ',"status":"IDLE"}', ',"watermark_ms":']
    edges = [0, 1, 9, 10, 99, 999, 9_999, 10_000, 10_001, 99_999_999, 100_000_000]
    n = 5_000
    seq = np.concatenate([edges, rng.integers(0, 10**9, n - len(edges))])
    ts = rng.integers(0, 2 * 10**12, n)
    ts[:3] = [0, 7, 10**12]
    val = rng.integers(0, 10**15, n)
    val[:4] = [0, 5, 10**4, 10**8]
    head = rng.integers(0, len(heads), n)
    code = rng.integers(0, len(tails), n)
    code[:4] = 2
    builder = gen._LineBuilder(
        heads,
        tails,
        2,
        max_seq=int(seq.max()),
        max_ts=int(ts.max()),
        max_val=int(val.max()),
        rows=n,
    )
    got = builder.build(head, seq, ts, code, val).tobytes()
    want = "".join(
        f'{heads[h]}{s},"ts_ms":{t}{tails[c]}' + (f"{v}}}" if c == 2 else "") + "\n"
        for h, s, t, c, v in zip(head, seq, ts, code, val, strict=True)
    ).encode()
    assert got == want


# --------------------------------------------------------------------------------------------
# Contract and Flink rules: checks every run must pass
# --------------------------------------------------------------------------------------------


def check_result_and_manifest(run: Run) -> None:
    m = run.manifest
    assert m["epoch_start_ms"] == 1_704_067_200_000
    assert run.result.events == len(run.lines) + len(run.vertices) == m["events"]
    assert m["records_by_type"]["vertex"] == len(run.vertices) == 3
    for kind in ("timer", "watermark", "watermark_status"):
        assert m["records_by_type"][kind] == sum(1 for r in run.lines if r["type"] == kind)
    assert [p.name for p in run.result.files] == m["files"]
    assert {r["job_id"] for r in run.lines} == {m["job_id"]}
    assert len(m["job_id"]) == 32 and int(m["job_id"], 16) >= 0
    for v in m["vertices"]:
        assert len(v["vertex_id"]) == 32 and int(v["vertex_id"], 16) >= 0
        rec = run.vertices[v["vertex_id"]]
        assert {k: rec[k] for k in v if k != "role"} == {k: v[k] for k in v if k != "role"}


def check_job_graph(run: Run) -> None:
    src, mp, sink = (run.vertices[run.vertex_id(r)] for r in ("source", "map", "sink"))
    assert src["upstream_vertex_ids"] == []
    assert mp["upstream_vertex_ids"] == [src["vertex_id"]]
    assert sink["upstream_vertex_ids"] == [mp["vertex_id"]]
    assert mp["busy_time_enabled"] and sink["busy_time_enabled"]
    assert src["busy_time_enabled"] is (run.manifest["scenario"] != "legacy-source")


def check_tasks_and_channels(run: Run) -> None:
    m = run.manifest
    channels: dict[tuple[Task, int], set[int]] = defaultdict(set)
    for rec in run.lines:
        vertex = run.vertices[rec["vertex_id"]]
        assert rec["subtask_index"] < vertex["parallelism"]
        assert m["epoch_start_ms"] <= rec["ts_ms"] < m["epoch_end_ms"]
        if rec["type"] != "timer":
            assert vertex["upstream_vertex_ids"], "a source has no inputs"
            upstream = run.vertices[vertex["upstream_vertex_ids"][0]]
            assert rec["input_index"] == 0
            task = (rec["job_id"], rec["vertex_id"], rec["subtask_index"], rec["attempt"])
            channels[(task, rec["input_index"])].add(rec["num_channels"])
            reads = inputs_of(upstream["parallelism"], vertex["parallelism"], m["edges"])
            assert rec["num_channels"] == len(reads[rec["subtask_index"]])
            assert 0 <= rec["channel_index"] < rec["num_channels"]
    assert all(len(v) == 1 for v in channels.values())  # constant per (task, input)
    expected = {(t["vertex_id"], t["subtask_index"], t["attempt"]) for t in m["tasks"]}
    assert {t[1:] for t in run.by_task} == expected


def check_seq(run: Run) -> None:
    for task, events in run.by_task.items():
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(len(seqs))), task  # unique, strictly increasing, from 0
        ts = [e["ts_ms"] for e in events]
        assert ts == sorted(ts), task  # the task's clock runs forward in seq order


def check_arrival_order(run: Run) -> None:
    latest = run.manifest["epoch_start_ms"]
    for rec in run.lines:
        assert rec["ts_ms"] >= latest - 1_000
        latest = max(latest, rec["ts_ms"])
    types_seen = {r["type"] for r in run.lines[:5_000]}
    assert {"timer", "watermark"} <= types_seen  # event types are mixed within a file
    last_seq: dict[Task, int] = {}
    out_of_seq_order = 0
    for rec in run.lines:
        task = (rec["job_id"], rec["vertex_id"], rec["subtask_index"], rec["attempt"])
        out_of_seq_order += rec["seq"] < last_seq.get(task, -1)
        last_seq[task] = max(rec["seq"], last_seq.get(task, -1))
    assert out_of_seq_order > 0  # consumers must order by seq, not by line


def check_timers_alternate(run: Run) -> None:
    for task, events in run.by_task.items():
        names: dict[str, set[str]] = defaultdict(set)
        is_open: dict[str, bool] = defaultdict(bool)
        for ev in events:
            if ev["type"] != "timer":
                continue
            gauge = GAUGE[ev["timer"]]
            names[gauge].add(ev["timer"])
            starting = ev["action"] == "start"
            assert is_open[gauge] != starting, (task, ev)  # no double start, no stray end
            is_open[gauge] = starting
        assert all(len(n) == 1 for n in names.values()), (task, names)  # one name per gauge


def check_idle_and_back_pressure_disjoint(run: Run) -> None:
    for task, events in run.by_task.items():
        open_now: set[str] = set()
        for ev in events:
            if ev["type"] != "timer":
                continue
            gauge = GAUGE[ev["timer"]]
            if ev["action"] == "end":
                open_now.discard(gauge)
                continue
            assert not open_now, (task, ev, open_now)  # at most one state at a time (M9)
            open_now.add(gauge)
        intervals = timer_intervals(events, run.manifest["epoch_end_ms"])
        for (_, _, e1), (_, s2, _) in zip(intervals, intervals[1:], strict=False):
            assert e1 <= s2, task


def count_watermarks(run: Run) -> tuple[int, int]:
    """(advancing, stale) watermark events over all channels, in seq order."""
    advancing = stale = 0
    for events in run.by_task.values():
        top: dict[int, int] = {}
        for ev in events:
            if ev["type"] == "watermark":
                ch = ev["channel_index"]
                if ev["watermark_ms"] > top.get(ch, LONG_MIN):
                    advancing += 1
                    top[ch] = ev["watermark_ms"]
                else:
                    stale += 1
    return advancing, stale


def check_watermarks_mostly_advance(run: Run) -> None:
    advancing, stale = count_watermarks(run)
    assert advancing > 1_000
    assert stale <= 0.02 * advancing


class ValveModel:
    """StatusWatermarkValve (flink-semantics.md section 4), written from the rules for the test."""

    def __init__(self, n: int) -> None:
        self.wm = [LONG_MIN] * n
        self.idle_ch = [False] * n
        self.aligned = [True] * n
        self.last = LONG_MIN
        self.idle = False
        self.out: list[tuple[str, int | str]] = []

    def _min_step(self) -> None:
        vals = [w for w, a in zip(self.wm, self.aligned, strict=True) if a]
        if vals and min(vals) > self.last:
            self.last = min(vals)
            self.out.append(("wm", self.last))

    def feed(self, ev: dict[str, Any]) -> None:
        ch = ev["channel_index"]
        if ev["type"] == "watermark":
            w = ev["watermark_ms"]
            if self.idle or self.idle_ch[ch] or w <= self.wm[ch]:
                return
            self.wm[ch] = w
            self.aligned[ch] = self.aligned[ch] or w >= self.last
            self._min_step()
        elif ev["status"] == "IDLE" and not self.idle_ch[ch]:
            self.idle_ch[ch], self.aligned[ch] = True, False
            if all(self.idle_ch):
                if self.wm[ch] == self.last and max(self.wm) > self.last:
                    self.last = max(self.wm)
                    self.out.append(("wm", self.last))
                self.idle = True
                self.out.append(("status", "IDLE"))
            elif self.wm[ch] == self.last:
                self._min_step()
        elif ev["status"] == "ACTIVE" and self.idle_ch[ch]:
            self.idle_ch[ch] = False
            self.aligned[ch] = self.wm[ch] >= self.last
            if self.idle:
                self.idle = False
                self.out.append(("status", "ACTIVE"))


def check_sinks_get_the_maps_valve_output(run: Run) -> None:
    """Each map forwards what its valve emits: the min over its non-idle inputs."""
    n_sources, n_maps, n_sinks = (
        run.vertices[run.vertex_id(r)]["parallelism"] for r in ("source", "map", "sink")
    )
    map_inputs = inputs_of(n_sources, n_maps, run.manifest["edges"])
    sink_inputs = inputs_of(n_maps, n_sinks, run.manifest["edges"])
    emitted: dict[int, list[tuple[str, int | str]]] = defaultdict(list)
    for task in run.tasks("map"):
        valve = ValveModel(len(map_inputs[task[2]]))
        for ev in run.by_task[task]:
            if ev["type"] != "timer":
                valve.feed(ev)
        emitted[task[2]] += valve.out
    assert all(emitted[j] for j in range(n_maps))
    for task in run.tasks("sink"):
        received: dict[int, list[tuple[str, int | str]]] = defaultdict(list)
        top: dict[int, int] = {}
        for ev in run.by_task[task]:
            ch = ev.get("channel_index")
            if ev["type"] == "watermark":
                if ev["watermark_ms"] > top.get(ch, LONG_MIN):
                    received[ch].append(("wm", ev["watermark_ms"]))
                    top[ch] = ev["watermark_ms"]
            elif ev["type"] == "watermark_status":
                received[ch].append(("status", ev["status"]))
        for c, j in enumerate(sink_inputs[task[2]]):
            # The sink sees a prefix (the last emissions may land after the end of the run).
            assert received[c] == emitted[j][: len(received[c])], (task, j)
            assert len(emitted[j]) - len(received[c]) <= 2


CHECKS = [
    check_result_and_manifest,
    check_job_graph,
    check_tasks_and_channels,
    check_seq,
    check_arrival_order,
    check_timers_alternate,
    check_idle_and_back_pressure_disjoint,
    check_watermarks_mostly_advance,
    check_sinks_get_the_maps_valve_output,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_follows_the_rules(
    runs: dict[str, Run], scenario: str, check: Callable[[Run], None]
) -> None:
    run = runs[scenario]
    assert (run.manifest["scenario"], run.manifest["seed"], run.manifest["scale"]) == (
        scenario,
        0,
        1,
    )
    check(run)


@pytest.mark.parametrize(
    ("scenario", "parallelism", "edges"),
    [
        ("idle-source", (1, 3, 2), "all-to-all"),  # the only source stops: every valve idles
        ("restart", (1, 3, 2), "all-to-all"),
        ("backpressure", (3, 1, 1), "all-to-all"),
        ("skew", (3, 2, 1), "all-to-all"),
        ("idle-source", (3, 5, 2), "pointwise"),  # one map reads only the stopped source
        ("restart", (2, 5, 3), "pointwise"),
        ("backpressure", (5, 2, 4), "pointwise"),
        ("skew", (4, 4, 4), "pointwise"),
    ],
)
def test_other_graphs_follow_the_rules(
    tmp_path: Path, scenario: str, parallelism: tuple[int, int, int], edges: str
) -> None:
    run = load(generate(scenario, tmp_path, seed=5, parallelism=parallelism, edges=edges))
    got = tuple(run.vertices[run.vertex_id(r)]["parallelism"] for r in ("source", "map", "sink"))
    assert got == parallelism
    for check in CHECKS:
        check(run)


def test_default_graph_is_2_4_2(runs: dict[str, Run]) -> None:
    for run in runs.values():
        got = tuple(
            run.vertices[run.vertex_id(r)]["parallelism"] for r in ("source", "map", "sink")
        )
        assert got == (2, 4, 2)


def test_some_channels_get_a_stale_watermark(runs: dict[str, Run]) -> None:
    assert sum(count_watermarks(run)[1] for run in runs.values()) > 0


# --------------------------------------------------------------------------------------------
# Scenario ground truth
# --------------------------------------------------------------------------------------------


def test_steady_has_no_back_pressure_but_some_idle(runs: dict[str, Run]) -> None:
    run = runs["steady"]
    assert all(r["timer"] == "idle" for r in run.lines if r["type"] == "timer")
    end = run.manifest["epoch_end_ms"]
    start = run.manifest["epoch_start_ms"]
    for task, events in run.by_task.items():
        idle = total_ms(timer_intervals(events, end), {"idle"}, start, end)
        assert 0.2 * (end - start) < idle < end - start, task
    truth = run.manifest["truth"]
    assert truth["throttle_windows"] == [] and truth["failure"] is None
    assert truth["bottleneck"] is None and truth["hot_subtask"] is None


def test_backpressure_rises_upstream_exactly_while_the_sink_is_throttled(
    runs: dict[str, Run],
) -> None:
    run = runs["backpressure"]
    truth = run.manifest["truth"]
    windows = truth["throttle_windows"]
    assert len(windows) == 2
    assert all(10_000 <= e - s <= 60_000 for s, e in windows)
    assert truth["throttled_vertex_id"] == run.vertex_id("sink")
    assert truth["throttle_factor"] == 0.3 and truth["source_load"] == 0.6
    assert truth["bottleneck"] == {"vertex_id": run.vertex_id("sink"), "subtask_index": None}
    end = run.manifest["epoch_end_ms"]
    bp = {"soft", "hard"}
    for task in run.tasks("sink"):
        assert not [g for g, *_ in timer_intervals(run.by_task[task], end) if g in bp]
    for role in ("source", "map"):
        per_task = {t: timer_intervals(run.by_task[t], end) for t in run.tasks(role)}
        union: list[tuple[int, int]] = []
        for task, intervals in per_task.items():
            for gauge, s, e in intervals:
                if gauge in bp:
                    assert any(ws - 1_000 <= s and e <= we + 1_000 for ws, we in windows), (
                        task,
                        s,
                        e,
                    )
                    union.append((s, e))
            for ws, we in windows:
                share = total_ms(intervals, bp, ws, we) / (we - ws)
                assert share >= 0.5, (task, ws, share)
        union.sort()
        for ws, we in windows:
            # Back pressure episodes of the vertex (gaps under 1 s closed) cover the window.
            covered, cur_s, cur_e = 0, None, None
            for s, e in union + [(LONG_MAX, LONG_MAX)]:
                if cur_e is not None and s - cur_e < 1_000:
                    cur_e = max(cur_e, e)
                    continue
                if cur_s is not None and cur_e is not None:
                    covered += max(0, min(cur_e, we) - max(cur_s, ws))
                cur_s, cur_e = s, e
            assert covered >= 0.8 * (we - ws), (role, ws, covered)
            first = min(s for s, e in union if e > ws - 1_000 and s < we + 1_000)
            last = max(e for s, e in union if e > ws - 1_000 and s < we + 1_000)
            assert first <= ws + 1_000 and last >= we - 1_000, (role, ws, first, last)


def test_backpressure_uses_hard_and_legacy_names(runs: dict[str, Run]) -> None:
    run = runs["backpressure"]
    names = {r["timer"] for r in run.lines if r["type"] == "timer"}
    assert names == TIMERS
    legacy = run.manifest["legacy_timer_tasks"]
    assert len(legacy) == 1
    users = {
        (r["vertex_id"], r["subtask_index"])
        for r in run.lines
        if r["type"] == "timer" and r["timer"] == "backpressured"
    }
    assert users == {(legacy[0]["vertex_id"], legacy[0]["subtask_index"])}


def test_idle_source_channel_goes_idle_then_active(runs: dict[str, Run]) -> None:
    run = runs["idle-source"]
    stopped = run.manifest["truth"]["stopped_source"]
    assert stopped["vertex_id"] == run.vertex_id("source")
    ch = stopped["subtask_index"]
    stop, resume = stopped["stop_ms"], stopped["resume_ms"]
    assert run.manifest["epoch_start_ms"] < stop < resume < run.manifest["epoch_end_ms"]
    statuses = [r for r in run.lines if r["type"] == "watermark_status"]
    assert {r["vertex_id"] for r in statuses} == {run.vertex_id("map")}
    for task in run.tasks("map"):
        events = [e for e in run.by_task[task] if e["type"] != "timer"]
        mine = [e for e in events if e["channel_index"] == ch]
        kinds = [e.get("status", "wm") for e in mine]
        i_idle, i_active = kinds.index("IDLE"), kinds.index("ACTIVE")
        assert kinds.count("IDLE") == kinds.count("ACTIVE") == 1
        assert i_active == i_idle + 1, task  # no watermark on the channel in between
        assert i_idle > 0 and i_active < len(kinds) - 1  # watermarks before and after
        assert stop <= mine[i_idle]["ts_ms"] < stop + 1_000
        assert resume <= mine[i_active]["ts_ms"] < resume + 1_000
        others = [
            e
            for e in events
            if e["channel_index"] != ch
            and mine[i_idle]["ts_ms"] < e["ts_ms"] < mine[i_active]["ts_ms"]
        ]
        assert len(others) > 50  # the other source keeps going
    # The stopped source is idle for the whole stop window.
    src = next(t for t in run.tasks("source") if t[2] == ch)
    intervals = timer_intervals(run.by_task[src], run.manifest["epoch_end_ms"])
    assert total_ms(intervals, {"idle"}, stop + 100, resume) == resume - stop - 100


def test_skew_hot_subtask_is_busy_and_back_pressures_the_sources(runs: dict[str, Run]) -> None:
    run = runs["skew"]
    hot = run.manifest["truth"]["hot_subtask"]
    assert hot["vertex_id"] == run.vertex_id("map")
    assert run.manifest["truth"]["bottleneck"] == {
        "vertex_id": hot["vertex_id"],
        "subtask_index": hot["subtask_index"],
    }
    start, end = run.manifest["epoch_start_ms"], run.manifest["epoch_end_ms"]
    idle = {}
    for task in run.tasks("map"):
        intervals = timer_intervals(run.by_task[task], end)
        idle[task[2]] = total_ms(intervals, {"idle"}, start, end)
    hot_idle = idle.pop(hot["subtask_index"])
    assert hot_idle < 0.02 * (end - start)
    assert all(other > 0.6 * (end - start) for other in idle.values()), idle
    for task in run.tasks("source"):
        intervals = timer_intervals(run.by_task[task], end)
        assert total_ms(intervals, {"soft", "hard"}, start, end) > 0.3 * (end - start)


def test_restart_gives_exactly_the_failed_task_a_second_attempt(runs: dict[str, Run]) -> None:
    run = runs["restart"]
    failure = run.manifest["truth"]["failure"]
    assert failure["vertex_id"] == run.vertex_id("map")
    retried = {t for t in run.by_task if t[3] > 0}
    job = run.manifest["job_id"]
    assert retried == {(job, failure["vertex_id"], failure["subtask_index"], 1)}
    before = run.by_task[(job, failure["vertex_id"], failure["subtask_index"], 0)]
    after = run.by_task[(job, failure["vertex_id"], failure["subtask_index"], 1)]
    start, end = run.manifest["epoch_start_ms"], run.manifest["epoch_end_ms"]
    assert start + 60_000 < failure["failure_ms"] < end - 60_000
    assert 5_000 <= failure["restart_ms"] - failure["failure_ms"] <= 8_000
    assert after[0]["seq"] == 0
    assert max(e["ts_ms"] for e in before) < failure["failure_ms"]
    assert max(e["ts_ms"] for e in before) > failure["failure_ms"] - 1_000
    assert min(e["ts_ms"] for e in after) >= failure["restart_ms"]
    assert max(e["ts_ms"] for e in after) > end - 1_000
    assert {e["type"] for e in after} == {"timer", "watermark"}


def test_legacy_source_vertex_has_busy_time_disabled(runs: dict[str, Run]) -> None:
    run = runs["legacy-source"]
    src = run.vertices[run.vertex_id("source")]
    assert src["busy_time_enabled"] is False
    assert [v["busy_time_enabled"] for v in run.manifest["vertices"]] == [False, True, True]
    assert all(
        r["busy_time_enabled"]
        for s, other in runs.items()
        if s != "legacy-source"
        for r in other.vertices.values()
    )
