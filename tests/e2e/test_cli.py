"""The tidemark command as a user runs it: exit codes, one-line errors, kill -9 and re-run."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from tests.e2e.harness import (
    BIN,
    ROOT,
    ThriftReader,
    TidemarkRun,
    environment,
    free_port,
    tidemark,
    warehouse_rows,
)
from tests.events import timer, watermark, write_jsonl
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e


def _content(lake: Lake, table: str) -> pa.Table:
    """The table's rows without the columns of the ingest run, sorted by every column."""
    found = DeltaTable(str(lake.bronze_table(table))).to_pyarrow_dataset().to_table()
    keep = [c for c in found.column_names if c not in ("ingest_id", "ingested_at")]
    return found.select(keep).sort_by([(c, "ascending") for c in keep]).combine_chunks()


def test_ingest_prints_counts_and_fails_only_for_unreadable_input(
    tmp_path: Path, lake: Lake
) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", [timer(0), timer(0), b"{nope"])
    result = tidemark("ingest", str(good), lake=lake).check()
    assert "3 lines read, 1 accepted, 1 duplicate, 1 quarantined" in result.stdout

    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"a": 1}\n' * 1000)[:-30])
    other = write_jsonl(tmp_path / "other.jsonl", [timer(5)])
    result = tidemark("ingest", str(broken), str(other), str(tmp_path / "missing"), lake=lake)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert any("missing: no such file or folder" in e for e in errors)
    assert any("broken.jsonl.gz" in e and "gzip" in e for e in errors)
    assert "1 accepted" in result.stdout  # the readable file still landed


@pytest.mark.deep
def test_kill_9_mid_ingest_then_rerun_converges(tmp_path: Path) -> None:
    """Deep (a minute on two cores): tests/unit/test_ingest.py crashes ingest between any two
    commits in-process in `make test`; this kills the real command."""
    path = tmp_path / "big.jsonl"
    with path.open("w") as handle:
        for i in range(1_400_000):
            record = timer(i, subtask_index=i % 4) if i % 5 else watermark(i, channel_index=i % 2)
            handle.write(json.dumps(record) + "\n")
    killed = Lake.from_env(tmp_path / "killed")
    process = subprocess.Popen(
        [str(BIN / "tidemark"), "ingest", str(path)],
        cwd=ROOT,
        env=environment(killed),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log = killed.bronze_table("timer_events") / "_delta_log"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list(log.glob("*.json"))) < 2:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert len(list(log.glob("*.json"))) >= 2, "ingest never committed a block"
    logged = killed.bronze_table("ingest_log")
    assert DeltaTable(str(logged)).to_pyarrow_dataset().count_rows() == 0, "finished before kill"

    rerun = tidemark("ingest", str(path), lake=killed).check()
    assert "1400000 accepted, 0 duplicate, 0 quarantined" in rerun.stdout
    clean = Lake.from_env(tmp_path / "clean")
    tidemark("ingest", str(path), lake=clean).check()
    for table in ("timer_events", "watermark_events"):
        rerun_rows, clean_rows = _content(killed, table), _content(clean, table)
        assert rerun_rows.num_rows == clean_rows.num_rows > 0
        assert rerun_rows.equals(clean_rows), table


def test_sql_and_spark_setup_errors_are_one_line(tmp_path: Path, lake: Lake) -> None:
    """A bad query, native Delta without its jars, JVM options Java cannot start with.

    The Spark run leaves nothing in Java's temporary folder: Hive's session made a
    `<session id>_resources` folder there on every start and nothing removed it (SPARK-51571),
    one more every scheduled run."""
    scratch = tmp_path / "java-tmp"
    scratch.mkdir()
    options = f"{environment(lake)['TIDEMARK_JAVA_OPTIONS']} -Djava.io.tmpdir={scratch}"
    result = tidemark(
        "sql", "select * from bronze.no_such_table", lake=lake, TIDEMARK_JAVA_OPTIONS=options
    )
    assert result.returncode == 1
    [line] = [x for x in result.stderr.splitlines() if x.startswith("tidemark sql: error:")]
    assert "no_such_table" in line
    assert list(scratch.iterdir()) == []

    result = tidemark("sql", "select 1", lake=lake, TIDEMARK_DELTA="native")
    assert result.returncode == 1
    assert "TIDEMARK_DELTA=native needs Delta's Spark jars" in result.stderr

    # Spark starts its JVM with -XX:+IgnoreUnrecognizedVMOptions: an unknown option is ignored,
    # but options Java cannot honour stop it.
    both = "-XX:+UseSerialGC -XX:+UseG1GC"
    result = tidemark("sql", "select 1", lake=lake, TIDEMARK_JAVA_OPTIONS=both)
    assert result.returncode == 1
    assert "Multiple garbage collectors selected" in result.stdout + result.stderr  # Java's words
    [line] = [x for x in result.stderr.splitlines() if x.startswith("tidemark sql: error:")]
    assert "Spark's JVM exited while starting" in line and f"'{both}'" in line


def test_generate_refuses_an_unknown_scenario(tmp_path: Path, lake: Lake) -> None:
    result = tidemark("generate", "--scenario", "nope", "--out", str(tmp_path / "x"), lake=lake)
    assert result.returncode == 1
    assert "tidemark generate: error:" in result.stderr and "steady" in result.stderr


def test_generate_takes_the_job_graph(tmp_path: Path, lake: Lake) -> None:
    out = tmp_path / "x"
    result = tidemark(
        "generate", "--scenario", "steady", "--out", str(out), "--parallelism", "3,5,2",
        "--edges", "pointwise", "--file-seconds", "60", lake=lake,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert [v["parallelism"] for v in manifest["vertices"]] == [3, 5, 2]
    assert manifest["edges"] == "pointwise"
    assert len(manifest["file_spans"]["events_files"]) == 3
    for bad, message in [
        ("3,x", "--parallelism takes a number of subtasks or S,M,K"),
        ("2", "needs at least 3 subtasks"),
    ]:
        result = tidemark(
            "generate", "--scenario", "steady", "--out", str(out), "--parallelism", bad,
            lake=lake,
        )  # fmt: skip
        assert result.returncode == 1
        [line] = [x for x in result.stderr.splitlines() if x.startswith("tidemark generate:")]
        assert message in line


def _idle_seconds(first: int, last: int) -> list[dict]:
    """Task map/0 idle from .000 to .500 of each second in [first, last)."""
    events = []
    for second in range(first, last):
        at = 1_000 * second
        events.append(timer(2 * second, ts_ms=at, action="start"))
        events.append(timer(2 * second + 1, ts_ms=at + 500, action="end"))
    return events


@pytest.mark.deep
def test_run_builds_only_what_is_new_on_one_warm_session_and_stops_on_sigterm(
    tmp_path: Path, lake: Lake
) -> None:
    """`tidemark run` (issue 10): cycle 1 lands and builds (data tests too), a new file is landed
    and built by the next cycle in the same process (models only: `--tests-every 2`), a cycle
    with nothing new builds nothing, SIGTERM ends it. With `--serve` (issue 42), the mart the
    second cycle published is read through the run's own endpoint.

    Deep (two minutes on two cores): tests/unit/test_schedule.py holds the loop's timing, stop
    and exit rules and which builds run data tests, in `make test`."""
    feed = tmp_path / "feed"
    feed.mkdir()
    write_jsonl(feed / "a.jsonl", _idle_seconds(0, 10))
    port = free_port()
    run = TidemarkRun(
        lake, str(feed), "--every", "2", "--tests-every", "2",
        "--dbt", "--select +fct_subtask_seconds", "--serve", "--port", str(port),
    )  # fmt: skip
    next_cycle, seen = run.next_cycle, run.seen
    reader = ThriftReader(port)  # the run holds the lake: read through its endpoint
    with run:
        first = next_cycle()
        assert first.startswith("tidemark run: cycle 1: ok: 20 events landed"), "".join(seen)
        rows = warehouse_rows(lake, "tidemark", "fct_subtask_seconds")
        assert {r["idle_ms"] for r in rows} == {500}

        write_jsonl(feed / "b.jsonl", _idle_seconds(10, 30))
        line = next_cycle()
        while "no build" in line:  # the file may have arrived just after a cycle's ingest
            line = next_cycle()
        assert ": ok: 40 events landed" in line and ", build " in line, "".join(seen)
        later = warehouse_rows(lake, "tidemark", "fct_subtask_seconds", warm=reader)
        assert max(r["second_start_ms"] for r in later) > max(r["second_start_ms"] for r in rows)
        assert len(later) > len(rows)

        assert "ok: 0 events landed" in next_cycle() and "no build (nothing new)" in seen[-1]
        run.process.send_signal(signal.SIGTERM)
        assert run.process.wait(timeout=120) == 0


@pytest.mark.deep
def test_jvm_archive_is_written_whole_and_mapped_in(tmp_path: Path, lake: Lake) -> None:
    """`tidemark jvm-archive` writes the archive; a session maps it in: with -Xshare:on, Java
    refuses to start when it cannot (decision 0013)."""
    archive = tmp_path / "jvm" / "spark.jsa"
    written = tidemark("jvm-archive", "--out", str(archive), lake=lake).check()
    assert f"wrote {archive} (" in written.stdout
    assert archive.stat().st_size > 50e6 and list(archive.parent.iterdir()) == [archive]

    options = f"{environment(lake)['TIDEMARK_JAVA_OPTIONS']} -Xshare:on"
    mapped = tidemark(
        "sql", "select 41 + 1 as n", "--format", "csv", lake=lake,
        TIDEMARK_JVM_ARCHIVE=str(archive), TIDEMARK_JAVA_OPTIONS=options,
    ).check()  # fmt: skip
    assert mapped.stdout.splitlines()[-1] == "42"

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    refused = tidemark("jvm-archive", "--out", str(blocked / "spark.jsa"), lake=lake)
    assert refused.returncode == 1
    [line] = [x for x in refused.stderr.splitlines() if x.startswith("tidemark jvm-archive: error")]
    assert str(blocked) in line


@pytest.mark.deep
def test_run_serve_bi_reads_during_cycles_see_each_mart_before_or_after(tmp_path: Path) -> None:
    """`tidemark run --serve` (contract §7): two BI clients read ten marts without pause while
    two cycles land new events; every answer is a mart's figures before its cycle or after it,
    and none fails (decision 0015). `make bench` runs ten cycles (bench/serve.py)."""
    from bench.serve import reads_during_cycles, slices_of

    events = tmp_path / "events"
    tidemark(
        "generate", "--scenario", "backpressure", "--seed", "7", "--out", str(events),
        lake=Lake.from_env(tmp_path / "unused"),
    ).check()  # fmt: skip
    seconds, polls, errors, inconsistent = reads_during_cycles(
        tmp_path / "work", slices_of(events, tmp_path / "slices", 2)
    )
    assert len(seconds) == 2
    assert polls > 20 and not errors and not inconsistent, (errors[:3], inconsistent[:3])
