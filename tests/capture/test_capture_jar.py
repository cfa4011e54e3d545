"""The capture jar's own tests (capture/src/test): Java programs on Flink's real classes.

Each Java program does one scenario (a real TimerGauge, Flink's real StatusWatermarkValve, the
writer with a full queue or a full disk) and prints ``FACT name json`` lines; this driver runs it,
reads the JSON Lines files it wrote and checks them. ``capture/build.sh test`` builds the jar and
the test classes (a no-op when nothing changed). Contract §6 and flink-semantics.md rules are named
per test.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.capture.releases import RUNTIMES, VERSIONS

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "capture"
BUILD = CAPTURE / "build"
JAR = BUILD / "tidemark-capture.jar"


def needs_agent_for_updates(version: str) -> bool:
    """1.15 and 1.16: TimerGauge has no slot ring; the agent adds the reporter's update counter."""
    return version.startswith(("1.15.", "1.16."))


@pytest.fixture(scope="session")
def built() -> Path:
    missing = [tool for tool in ("java", "javac", "jar") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the capture tests need a JDK ({', '.join(missing)} not found)")
    subprocess.run([str(CAPTURE / "build.sh"), "test"], check=True, capture_output=True, text=True)
    return BUILD


def flink_dist(version: str) -> str:
    lib = subprocess.run(
        [str(CAPTURE / "flink-jars.sh"), version], check=True, capture_output=True, text=True
    ).stdout.strip()
    return str(next(Path(lib).glob("flink-dist*.jar")))


def java(major: str) -> str:
    """The `java` of one Java major version: the machine's for 17, else one from PyPI."""
    if major == "17":
        return "java"
    return subprocess.run(
        [str(CAPTURE / "java-runtime.sh"), major], check=True, capture_output=True, text=True
    ).stdout.strip()


def run_java(
    classpath: list[str],
    main: str,
    *args: str,
    agent: str | None = None,
    timeout: float = 60,
    java_major: str = "17",
) -> tuple[dict, str]:
    command = [java(java_major)]
    if agent is not None:
        command.append(f"-javaagent:{JAR}={agent}")
    command += ["-cp", os.pathsep.join(classpath), main, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{main} failed:\n{done.stdout}\n{done.stderr}"
    facts = {}
    for line in done.stdout.splitlines():
        if line.startswith("FACT "):
            _, name, value = line.split(" ", 2)
            facts[name] = json.loads(value)
    return facts, done.stderr


def records(directory: Path) -> list[dict]:
    """Every record of the published files; no temporary file may be left behind."""
    assert not list(directory.glob(".*.tmp")), "a temporary file was left behind"
    found = []
    for path in sorted(directory.glob("*.jsonl*")):
        text = (
            gzip.decompress(path.read_bytes()).decode()
            if path.suffix == ".gz"
            else path.read_text()
        )
        assert text.endswith("\n"), f"{path.name} ends with a partial line"
        found += [json.loads(line) for line in text.splitlines()]
    return found


def task_key(r: dict) -> tuple:
    return (r["job_id"], r["vertex_id"], r["subtask_index"], r["attempt"])


def check_seqs(recs: list[dict]) -> None:
    """Contract §1: seq strictly increasing per task; events and capture_gap ranges tile 0..n."""
    by_task: dict[tuple, list[tuple[int, int]]] = {}
    for r in recs:
        if r["type"] == "vertex":
            continue
        end = r["to_seq"] if r["type"] == "capture_gap" else r["seq"]
        by_task.setdefault(task_key(r), []).append((r["seq"], end))
    for key, ranges in by_task.items():
        ranges.sort()
        expected = 0
        for start, end in ranges:
            assert start == expected, (
                f"task {key}: seq {expected} missing or doubled (next {start})"
            )
            expected = end + 1


@pytest.mark.parametrize(("version", "java_major"), RUNTIMES)
def test_timer_records_carry_the_gauges_own_readings(
    built: Path, version: str, java_major: str, tmp_path: Path
) -> None:
    """T1-T3, T11, T14, V1-V4 on Flink's real TimerGauge: start/end ts_ms are the gauge's own clock
    readings, each update has the value the gauge published and sits between its neighbours in seq
    order, double calls and operator-scope gauges give nothing. With listeners (1.19 on) and
    without (starts and ends told by the clock readings); on 1.15 and 1.16 with the agent's update
    counter."""
    agent = f"dir={tmp_path}" if needs_agent_for_updates(version) else None
    facts, _ = run_java(
        [str(built / "test-classes"), str(JAR), flink_dist(version)],
        "tidemark.capture.TimerGaugeTest",
        str(tmp_path),
        agent=agent,
        java_major=java_major,
    )
    assert facts["dropped"] == 0 and facts["errors"] == 0
    recs = records(tmp_path)
    check_seqs(recs)
    assert {task_key(r) for r in recs} == {
        ("j1", "v1", 3, 1)
    }  # the operator-scope gauge wrote nothing
    got = [
        {k: r[k] for k in ("action", "ts_ms", "published") if k in r}
        for r in sorted(recs, key=lambda r: r["seq"])
    ]
    for r in recs:
        assert r["type"] == "timer" and r["timer"] == "idle"
    expected = facts["expected"]
    for e in expected:
        e.pop("published_unknown", None)  # see TimerGaugeTest: optional there
    assert got == expected


@pytest.mark.parametrize("version", [v for v in VERSIONS if needs_agent_for_updates(v)])
def test_without_a_ring_or_the_agent_update_records_are_absent(
    built: Path, version: str, tmp_path: Path
) -> None:
    """Contract §6 safety on 1.15 / 1.16 with the reporter alone: TimerGauge has no slot ring, so
    the updates of a gauge that is not measuring cannot be seen: no update record at all (never a
    partial set, which would misnumber rounds), one log line saying so, every start and end kept."""
    run = subprocess.run(
        [java("11"), "-cp", os.pathsep.join([str(built / "test-classes"), str(JAR),
         flink_dist(version)]), "tidemark.capture.TimerGaugeTest", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    # The program's own check of the expected records fails without update records: only the
    # files count here.
    recs = records(tmp_path)
    check_seqs(recs)
    assert [r["action"] for r in sorted(recs, key=lambda r: r["seq"])] == ["start", "end"] * 3
    said = [line for line in run.stderr.splitlines() if "update records disabled" in line]
    assert len(said) == 1 and f"Flink {version}" in said[0], run.stderr


def test_rotation_publishes_only_complete_files(built: Path, tmp_path: Path) -> None:
    """Contract §6 output: a reader polling the folder never sees a partial or growing *.jsonl; the
    size limit and the age limit both rotate; nothing is lost."""
    facts, _ = run_java(
        [str(built / "test-classes"), str(JAR), flink_dist("1.20.5")],
        "tidemark.capture.RotationTest",
        str(tmp_path),
    )
    # 3000 events of ~170 bytes, 4000-byte files: the limit is checked between drained batches,
    # so one burst may overshoot a file, but the size limit must rotate more than once.
    assert facts["size_rotated_files"] >= 2, facts
    assert facts["files"] >= facts["size_rotated_files"] + 3, facts  # 8 slow events over 1.6 s
    assert facts["polls"] > 50
    recs = records(tmp_path)
    assert len(recs) == facts["events"]
    check_seqs(recs)


def test_queue_full_drops_and_says_where(built: Path, tmp_path: Path) -> None:
    """Contract §6 safety: a full queue never blocks the producer (the writer is stopped while
    1,000 offers meet a queue of 100: one that waited for room would hang until run_java's
    timeout); drops become capture_gap records with the exact seq ranges per task; later events
    are written. No clock is read: a bound on an offer's nanoseconds failed on a busy 2-core
    machine (57 ms) with nothing blocked."""
    run_java(
        [str(built / "test-classes"), str(JAR), flink_dist("1.20.5")],
        "tidemark.capture.QueueFullTest",
        str(tmp_path),
    )
    recs = records(tmp_path)
    check_seqs(recs)
    gaps = sorted(
        (
            (r["vertex_id"], r["seq"], r["to_seq"], r["dropped"], r["reason"])
            for r in recs
            if r["type"] == "capture_gap"
        ),
    )
    # the first 100 offers fit: 75 of task a (seq 0-74), 25 of b (seq 0-24); the rest is lost
    assert gaps == [("a", 75, 749, 675, "queue full"), ("b", 25, 249, 225, "queue full")]
    a_events = sorted(r["seq"] for r in recs if r["type"] == "timer" and r["vertex_id"] == "a")
    assert a_events == list(range(75)) + list(range(750, 760))
    gap_a = next(r for r in recs if r["type"] == "capture_gap" and r["vertex_id"] == "a")
    assert (gap_a["ts_ms"], gap_a["to_ts_ms"]) == (1000 + 100, 1000 + 998)


def test_a_failing_hook_becomes_a_gap_of_its_task(built: Path, tmp_path: Path) -> None:
    """Contract §6 safety: a hook that throws never reaches the job; it is logged once and counted,
    and the event it was recording becomes a capture_gap of its task ("capture hook failed"), so the
    affected seconds show as not exact; the task's later events are written."""
    facts, stderr = run_java(
        [str(built / "test-classes"), str(JAR), flink_dist("1.20.5")],
        "tidemark.capture.HookFailureTest",
        str(tmp_path),
    )
    assert (facts["errors"], facts["dropped"]) == (2, 2)
    recs = records(tmp_path)
    check_seqs(recs)
    assert [(r["seq"], r["watermark_ms"]) for r in recs if r["type"] == "watermark"] == [
        (0, 1_000),
        (3, 4_000),
    ]
    gaps = [
        (r["seq"], r["to_seq"], r["dropped"], r["reason"])
        for r in recs
        if r["type"] == "capture_gap"
    ]
    assert gaps == [(1, 2, 2, "capture hook failed")]
    failures = [line for line in stderr.splitlines() if "a capture hook failed" in line]
    assert len(failures) == 1 and "broken valve" in failures[0], stderr


def _mount_tmpfs(directory: Path, size: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)], capture_output=True
    )
    return done.returncode == 0


def test_full_disk_counts_drops_and_recovers(built: Path, tmp_path: Path) -> None:
    """Contract §6 safety: writes failing with ENOSPC never throw into the producer (whose offers
    never wait: test_queue_full_drops_and_says_where); the
    drops are counted and logged once per episode; after space is freed, capture_gap records cover
    exactly the lost seqs and later events are written. A real 256 KB tmpfs when mount is allowed
    (root), else an injected IOException."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = _mount_tmpfs(disk, "256k")
    try:
        if mounted:
            filler = disk / "filler"
            with filler.open("wb") as out:  # leave about 56 KB free
                out.write(b"\0" * (200 * 1024))
            second = str(filler)
        else:
            second = "inject"
        facts, stderr = run_java(
            [str(built / "test-classes"), str(JAR), flink_dist("1.20.5")],
            "tidemark.capture.DiskFullTest",
            str(disk),
            second,
        )
        recs = records(disk)
    finally:
        if mounted:
            subprocess.run(["umount", str(disk)], check=False)
    check_seqs(recs)
    gaps = [r for r in recs if r["type"] == "capture_gap"]
    assert gaps and all(g["reason"].startswith("write failed: ") for g in gaps)
    assert "No space left on device" in gaps[0]["reason"]
    lost = sum(g["dropped"] for g in gaps)
    assert lost == facts["dropped"] >= 500
    written = [r["seq"] for r in recs if r["type"] == "timer"]
    assert len(written) + lost == facts["events"]
    assert max(written) == facts["events"] - 1  # the events after the space came back are there
    episodes = [line for line in stderr.splitlines() if line.startswith("tidemark-capture: lost ")]
    assert len(episodes) == 1 and f"lost {lost} events" in episodes[0], stderr


def test_unknown_valve_layout_disables_only_that_part(built: Path, tmp_path: Path) -> None:
    """Contract §6 safety: a StatusWatermarkValve whose methods do not match is left untouched, with
    exactly one log line; the program runs as without the agent and exits 0."""
    facts, stderr = run_java(
        [str(built / "fake-classes"), flink_dist("1.20.5")],
        "org.apache.flink.streaming.runtime.watermarkstatus.StatusWatermarkValve",
        agent=f"dir={tmp_path}",
    )
    assert facts["fake_valve_ok"] is True
    lines = [line for line in stderr.splitlines() if line.startswith("tidemark-capture:")]
    disabled = [line for line in lines if "disabled" in line]
    assert len(disabled) == 1, stderr
    assert "StatusWatermarkValve has no inputWatermark" in disabled[0]
    assert disabled[0].endswith("valve capture disabled")
    assert records(tmp_path) == []


@pytest.mark.parametrize(("version", "java_major"), RUNTIMES)
def test_agent_on_flinks_real_valve(
    built: Path, version: str, java_major: str, tmp_path: Path
) -> None:
    """W1-W6 through Flink's own StatusWatermarkValve under the agent: one watermark /
    watermark_status record per input call (num_channels = 3, the bound input index), one
    valve_output per emission, equal to what the valve really emitted, each right after its input
    in seq order."""
    facts, stderr = run_java(
        [str(built / "test-classes"), str(JAR), flink_dist(version)],
        "tidemark.capture.ValveTest",
        agent=f"dir={tmp_path}",
        java_major=java_major,
    )
    assert facts["errors"] == 0
    assert "disabled" not in stderr, stderr
    published = [p.name for p in tmp_path.iterdir()]
    assert published and all(n.endswith(".jsonl.gz") for n in published), published  # gzip=true
    recs = sorted(records(tmp_path), key=lambda r: r["seq"])
    check_seqs(recs)
    assert {task_key(r) for r in recs} == {("job", "vertex", 1, 0)}
    assert all(r["input_index"] == 1 for r in recs)
    inputs = [r for r in recs if r["type"] in ("watermark", "watermark_status")]
    assert [
        {k: r[k] for k in ("type", "channel_index", "watermark_ms", "status") if k in r}
        for r in inputs
    ] == facts["inputs"]
    assert all(r["num_channels"] == 3 for r in inputs)
    outputs = [r for r in recs if r["type"] == "valve_output"]
    assert [
        {k: r[k] for k in ("kind", "watermark_ms", "status") if k in r} for r in outputs
    ] == facts["outputs"]
    # every output follows the input that caused it: its seq is after an input's
    assert recs[0]["type"] == "watermark"
    assert [o["watermark_ms"] for o in outputs if o["kind"] == "watermark"][:2] == [5, 10]
