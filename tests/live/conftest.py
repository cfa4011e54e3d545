"""The live session: the test job on two Flink releases at once, captured, ingested, built.

One session fixture does everything the live tests read, once, to stay within a few minutes on
two cores:

1. builds the job for the oldest and the newest supported release (Flink 1.15.4 and 2.3.0;
   ``TIDEMARK_LIVE_VERSIONS`` names others, as ``make test-live-all`` does two at a time) and
   starts both at the same time, each with the capture attached as contract §6 says and a
   capture folder of its own, and polls each one's REST API about every second
   (tests/live/flink_job.py);
2. while they write, runs ``tidemark ingest DIR_1 DIR_2`` into one fresh lake every
   ``ROTATION_EVERY_S`` seconds (the rotation test reads these runs), and once more at the end;
3. runs one ``dbt build`` of what the tests read (no unit tests; data tests only where all their
   parents are built); each job's release comes from its capture's vertex records (issue 66).

The tests put their counts (compared, matched, REST readings) into the session's figures, written
at the end to ``figures.json`` in the session's folder and appended, one JSON line per release,
to ``TIDEMARK_LIVE_FIGURES`` when set (``make test-live-all`` makes docs/flink-versions.md's
table from them).

Nothing is skipped: without Java, javac, Flink's jars or the capture jar the fixture fails with
one line that says what is missing.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.harness import Result, dbt, tidemark
from tests.live.flink_job import (
    JobRun,
    LiveSetupError,
    RestPoller,
    build_job,
    capture_jar,
    pyflink_python,
    sql_api,
    start_job,
)
from tidemark.lake import Lake

# The oldest and the newest release the capture supports: `make test-live`. `make test-live-all`
# runs every release of docs/flink-versions.md, two at a time, through TIDEMARK_LIVE_VERSIONS.
VERSIONS = tuple(
    v.strip()
    for v in os.environ.get("TIDEMARK_LIVE_VERSIONS", "1.15.4,2.3.0").split(",")
    if v.strip()
)
# The releases the Flink SQL job runs on, next to the DataStream job: by default the same;
# TIDEMARK_LIVE_SQL_VERSIONS names others ("" for none). Through PyFlink's Table API
# (tests/live/job/live_sql_job.py) from 1.19, the Java Table API (LiveSqlJob.java) before: sql_api.
SQL_VERSIONS = tuple(
    v.strip()
    for v in os.environ.get("TIDEMARK_LIVE_SQL_VERSIONS", ",".join(VERSIONS)).split(",")
    if v.strip()
)
ROTATION_EVERY_S = 4.0
JOB_TIMEOUT_S = 240
GAUGE_MART = "fct_subtask_flink_gauges"
CONFORMANCE_MARTS = ("fct_gauge_conformance", "fct_valve_conformance", "fct_capture_conformance")
BUILD_SELECT = [
    "--select",
    f"+{GAUGE_MART}",
    "+fct_subtask_seconds",
    "+fct_task_watermarks",
    "+fct_valve_emissions",
    *(f"+{name}" for name in CONFORMANCE_MARTS),
    "--exclude-resource-type",
    "unit_test",
    "--indirect-selection",
    "cautious",
]


@dataclass
class Ingest:
    """One ``tidemark ingest`` of the capture folders: when it ran and what it printed."""

    started_s: float
    while_running: bool
    result: Result


@dataclass
class VersionRun:
    version: str
    run: JobRun
    rest: dict

    @property
    def capture_dir(self) -> Path:
        assert self.run.capture_dir is not None
        return self.run.capture_dir

    @property
    def job_id(self) -> str:
        return self.rest["job_id"]

    def vertex_id(self, name: str) -> str:
        """The id of the vertex whose (chained) name is or contains ``name``."""
        (found,) = [v for v, info in self.rest["vertices"].items() if name in info["name"]]
        return found


@dataclass
class LiveSession:
    lake: Lake
    runs: dict[str, VersionRun]
    ingests: list[Ingest]
    build: Result
    seconds: dict[str, float] = field(default_factory=dict)
    # The SQL job's runs, by release.
    sql_runs: dict[str, VersionRun] = field(default_factory=dict)


def _require_setup() -> None:
    try:
        capture_jar()
        for version in VERSIONS:
            build_job(version)
        for version in SQL_VERSIONS:
            build_job(version, "sql")
            if sql_api(version) == "pyflink":
                pyflink_python(version)
    except LiveSetupError as exc:
        pytest.fail(f"live Flink tests cannot run: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> LiveSession:
    began = time.monotonic()
    _require_setup()
    work = tmp_path_factory.mktemp("live")
    lake = Lake.from_env(work / "lake")
    # Keys: the release for the DataStream job, "sql-" and the release for the SQL job.
    runs = {v: start_job(v, work / f"flink-{v}") for v in VERSIONS}
    runs |= {f"sql-{v}": start_job(v, work / f"flink-sql-{v}", shape="sql") for v in SQL_VERSIONS}
    pollers = {v: RestPoller(run).start() for v, run in runs.items()}
    folders = [str(run.capture_dir) for run in runs.values()]
    ingests: list[Ingest] = []

    def ingest(while_running: bool) -> None:
        started = time.monotonic()
        ingests.append(Ingest(started, while_running, tidemark("ingest", *folders, lake=lake)))

    # Rotation: ingest the folders while the capture writes into them (contract §6, output).
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while any(run.process.poll() is None for run in runs.values()) and time.monotonic() < deadline:
        started = time.monotonic()
        ingest(while_running=True)
        time.sleep(max(0.0, ROTATION_EVERY_S - (time.monotonic() - started)))
    finished: dict[str, VersionRun] = {}
    failures = []
    for key, run in runs.items():
        try:
            run.wait(max(1.0, deadline - time.monotonic()))
        finally:
            pollers[key].stop().save(run.work / "rest.json")
        try:
            run.check()
        except AssertionError as exc:
            failures.append(str(exc))
        finished[key] = VersionRun(
            run.version, run, json.loads((run.work / "rest.json").read_text())
        )
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)
    flink_s = time.monotonic() - began
    ingest(while_running=False)
    ingest_s = time.monotonic() - began - flink_s
    # Each job's release decides the TimerGauge rules its gauge marts replay
    # (docs/flink-versions.md): the capture records it, so no var names it (issue 66).
    build = dbt("build", *BUILD_SELECT, lake=lake)
    session = LiveSession(
        lake,
        {k: r for k, r in finished.items() if not k.startswith("sql-")},
        ingests,
        build,
        sql_runs={k.removeprefix("sql-"): r for k, r in finished.items() if k.startswith("sql-")},
    )
    session.seconds = {
        "flink_and_rotation": round(flink_s, 1),
        "final_ingest": round(ingest_s, 1),
        "dbt_build": round(time.monotonic() - began - flink_s - ingest_s, 1),
        "fixture": round(time.monotonic() - began, 1),
    }
    (work / "timings.json").write_text(json.dumps(session.seconds))
    print(f"\nlive session under {work}: {session.seconds}")
    return session


@pytest.fixture(scope="session")
def figures(live: LiveSession) -> dict[str, dict]:
    """Per release, what the tests compared and matched; written when the session ends."""
    found: dict[str, dict] = {v: {"version": v} for v in live.runs}
    found |= {
        f"sql-{v}": {"version": v, "shape": "sql", "api": run.run.result["api"]}
        for v, run in live.sql_runs.items()
    }  # the API the job says it ran through
    yield found
    work = next(iter(live.runs.values())).run.work.parent
    (work / "figures.json").write_text(json.dumps(found, indent=1))
    target = os.environ.get("TIDEMARK_LIVE_FIGURES")
    if target:
        with open(target, "a") as out:
            for entry in found.values():
                out.write(json.dumps({**entry, "seconds": live.seconds}) + "\n")
