"""`tidemark serve` with real clients: PyHive, concurrent connections and dbt --target thrift.

The main test reads the demo lake's server (``demo_server``, tests/e2e/conftest.py), which
test_metric_views started: this file runs last in the demo group (tests/conftest.py), and that
test stops the server. The deep test serves a lake of its own."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.serve import figures_query
from tests.e2e.harness import BIN, Server, dbt, free_port, run, serving, tidemark
from tests.events import timer, write_jsonl
from tidemark.lake import Lake
from tidemark.spark.session import STORE_VIEW_PLANS
from tidemark.spark.settings import resources_folder

pytestmark = pytest.mark.e2e


def _query(port: int, sql: str) -> list[tuple]:
    from pyhive import hive

    connection = hive.connect(host="127.0.0.1", port=port, username="tester")
    try:
        cursor = connection.cursor()
        cursor.execute(sql)
        return cursor.fetchall()
    finally:
        connection.close()


@pytest.fixture
def server(tmp_path: Path, lake: Lake) -> Iterator[tuple[int, subprocess.Popen]]:
    data = tmp_path / "events"
    tidemark("generate", "--scenario", "steady", "--out", str(data), lake=lake).check()
    tidemark("ingest", str(data), lake=lake).check()
    with serving(lake) as started:
        yield started.port, started.process


def _reads_during_a_build(port: int, marts: tuple[str, ...], lake: Lake) -> None:
    """A dbt run of ``marts`` through the server publishes into the tables an earlier build
    created while two BI clients read them: every answer is a mart's figures before the run or
    after it, and none fails (contract §7, decision 0015). Rebuilt from the same plan, their
    figures stay; bench/serve.py and the deep test_cli.py land new events each cycle."""
    before = {m: _query(port, figures_query(m))[0] for m in marts}
    polls: list[tuple[str, tuple | str]] = []
    stop = threading.Event()

    def poll() -> None:
        from pyhive import hive

        cursor = hive.connect(host="127.0.0.1", port=port, username="bi").cursor()
        while not stop.is_set():
            for mart in marts:
                try:
                    cursor.execute(figures_query(mart))
                    polls.append((mart, tuple(cursor.fetchall()[0])))
                except Exception as exc:  # noqa: BLE001 - every failure is counted
                    polls.append((mart, f"error: {exc}"))
                time.sleep(0.2)  # bench/serve.py polls without pause; here the build needs a core

    clients = [threading.Thread(target=poll) for _ in range(2)]
    for client in clients:
        client.start()
    try:
        dbt(
            "run", "--target", "thrift", "--select", *marts, lake=lake,
            TIDEMARK_THRIFT_PORT=str(port),
        ).check()  # fmt: skip
    finally:
        stop.set()
        for client in clients:
            client.join()
    after = {m: _query(port, figures_query(m))[0] for m in marts}
    assert after == before
    assert len(polls) > 10
    wrong = [(m, a) for m, a in polls if a not in (before[m], after[m])]
    assert not wrong, wrong[:5]


def _dbt_runs_recorded(port: int, lake: Lake) -> tuple[int, int]:
    """The `dbt run`s recorded ok in tidemark.run_log, as a BI tool and `tidemark status` read
    them."""
    ok = "row_kind = 'cycle' and recorded_by = 'dbt run' and outcome = 'ok'"
    [(in_sql,)] = _query(port, f"select count(*) from tidemark.run_log where {ok}")
    status = tidemark("status", "--format", "jsonl", "--cycles", "1000", lake=lake).check()
    records = [json.loads(line) for line in status.stdout.splitlines()]
    shown = [r for r in records if r["section"] == "cycles"]
    return in_sql, sum((r["recorded_by"], r["outcome"]) == ("dbt run", "ok") for r in shown)


def test_bi_clients_dbt_and_shutdown(demo_server: Server, tmp_path: Path) -> None:
    """The demo lake's server (after test_metric_views' reads): BI sessions of their own,
    cron's `dbt run --target thrift` through it with BI clients reading, a bronze commit seen
    without a restart, and SIGTERM."""
    port, process, lake = demo_server.port, demo_server.process, demo_server.lake
    [(events,)] = _query(port, "select count(*) from bronze.timer_events")
    assert events > 1000
    # a BI tool's temporary views are kept as SQL, read again at each query, so they follow every
    # publish (tidemark's own session keeps view plans: tests/spark/test_view_plans.py)
    assert _query(port, f"set {STORE_VIEW_PLANS}") == [(STORE_VIEW_PLANS, "false")]

    with ThreadPoolExecutor(max_workers=4) as pool:
        counts = list(
            pool.map(
                lambda n: _query(port, f"select count(*) + {n} from bronze.timer_events")[0][0],
                range(8),
            )
        )
    assert counts == [events + n for n in range(8)]
    # Each client session had a resource folder of its own, made as it opened and deleted as it
    # closed: with one for all, a close deleted it under another's open, which then failed
    # ("Couldn't create directory"). The server's own session keeps one; an earlier server's
    # empty folder went at the start (tests/e2e/conftest.py, demo_server).
    left = sorted(folder.name for folder in resources_folder(lake).iterdir())
    assert len(left) == 2 and "earlier-with-a-file" in left and "earlier-server" not in left

    more = write_jsonl(tmp_path / "more.jsonl", [timer(i, job_id="late-job") for i in range(3)])
    tidemark("ingest", str(more), lake=lake).check()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        [(now,)] = _query(port, "select count(*) from bronze.timer_events")
        if now == events + 3:
            break
        time.sleep(1)
    assert now == events + 3, "the server never saw the new bronze commit"

    # dbt --target thrift, as cron runs it: a table mart (the gauge and valve marts through the
    # server add a minute of queries: the deep test below; every model runs on the demo lake).
    # Before the publish, the table mart was missing between dbt's drop and create.
    runs_before = _dbt_runs_recorded(port, lake)
    _reads_during_a_build(port, ("dim_vertices",), lake)
    # tidemark's own health with cron's builds over the server: the run's on-run-end hook
    # recorded it, and `tidemark status` reads it while the server holds the lake.
    assert _dbt_runs_recorded(port, lake) == tuple(n + 1 for n in runs_before)

    process.terminate()
    assert process.wait(timeout=60) == 0
    assert "stopping" in (process.stdout.read() if process.stdout else "")


@pytest.mark.deep
def test_gauge_and_valve_marts_through_the_server(server, lake: Lake) -> None:
    """The gauge and valve marts and all they need through the server: staging views, the
    incremental macros, the checkpoints, the valve UDTF the server registered; then a second run
    publishes into an incremental mart and a table mart while BI clients read them. Before the
    publish, the incremental mart's files were deleted under queries."""
    port, _ = server
    build = dbt(
        "run", "--target", "thrift", "--select", "+fct_subtask_seconds", "+fct_valve_emissions",
        "dim_vertices", lake=lake, TIDEMARK_THRIFT_PORT=str(port),
    ).check()  # fmt: skip
    assert "ERROR=0" in build.stdout
    for mart in (row[1] for row in _query(port, "show tables in tidemark")):
        _query(port, f"select * from tidemark.{mart} limit 5")  # every mart answers a BI tool
    assert _query(port, "select count(*) > 0 from tidemark.fct_valve_emissions") == [(True,)]
    _reads_during_a_build(port, ("fct_subtask_seconds", "dim_vertices"), lake)


def test_a_closed_bi_session_leaves_the_procedures_loadable(lake: Lake) -> None:
    """Issue 64: a BI session that closes before the process first calls its procedures (a
    dashboard polling a new lake, or a restarted service) closed the class loader that held
    them: every later build failed with "Cannot find catalog plugin class for catalog
    'tidemark_system'". Hive's SessionState.close closes its conf's class loaders up to the one
    that loaded Hive, and the Thrift sessions' chain passed through Spark's loader of spark.jars,
    where the procedures were; they now load from the driver's class path. The failed query is
    one line of the log; an open statement writes no operation log into the lake (a file per
    statement, which the soak saw grow by 18 a cycle). The path a user
    takes, `tidemark run --serve` with clients polling from the first second, is the soak's
    (bench/soak.py, make test-deep)."""
    done = run(
        [str(BIN / "python"), "-m", "tests.e2e.bi_session_closed", str(free_port())],
        lake,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if ": " in line]
    assert lines == [
        "BI query: failed",
        "files in the lake's logs: ['derby.log']",
        "driver thread: ok",
        "new thread: ok",
        "new session: ok",
    ], done.stdout + done.stderr[-3000:]
    # The failed BI query is one log line, its error class and first characters; the server's
    # three stacks and Hive's "Unable to access pipeout files" at the session's close are gone.
    said = [line for line in done.stderr.splitlines() if line.strip()]
    [failed] = [line for line in said if "BI query failed" in line]
    assert failed.endswith(
        "WARN bi: BI query failed (TABLE_OR_VIEW_NOT_FOUND): "
        "select count(*) from tidemark.fct_subtask_seconds"
    ), failed
    assert not [line for line in said if "pipeout" in line or line.startswith("\tat ")], said


def test_port_taken_and_open_address_are_refused(lake: Lake) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = tidemark("serve", "--port", str(port), lake=lake)
    assert result.returncode == 1
    assert "cannot listen on 127.0.0.1" in result.stderr and "--port" in result.stderr

    result = tidemark("serve", "--host", "0.0.0.0", "--port", str(free_port()), lake=lake)
    assert result.returncode == 1
    assert "refusing to listen on 0.0.0.0 without authentication" in result.stderr
