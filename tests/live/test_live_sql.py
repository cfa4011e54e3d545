"""tidemark against a Flink SQL job: the second job shape of the live tests (issue 45).

The live session (tests/live/conftest.py) also runs a windowed aggregation over ``datagen``
written in Flink SQL, on the releases of ``SQL_VERSIONS`` (by default the session's), at the same
time as the DataStream job: submitted by PyFlink's Table API (tests/live/job/live_sql_job.py, in
an environment of its own) where PyFlink has a Python 3.11 wheel (1.19 on), by the Java Table
API (tests/live/job/LiveSqlJob.java) before; either way to a local MiniCluster. It is captured
into the same lake and built by the same ``dbt build``. The same conformance holds it to what
Flink published: no mismatch in the conformance marts, and every REST reading of the three task
gauges and of ``currentInputWatermark`` equals a row.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from tests.live.conftest import CONFORMANCE_MARTS, SQL_VERSIONS, LiveSession, VersionRun
from tests.live.flink_job import sql_api
from tests.live.test_live_flink import (
    _mart,
    assert_compared,
    assert_no_mismatch,
    check_rest_watermarks,
    match_rest_gauges,
)

pytestmark = [pytest.mark.live, pytest.mark.e2e]

# A 40 s job of three tasks of parallelism 2 (source, aggregation, sink chained after it).
MIN_ROUNDS_COMPARED = 20
MIN_VALVE_OUTPUTS_COMPARED = 20
MIN_REST_GAUGE_READINGS = 40
MIN_REST_WATERMARK_READINGS = 20


@pytest.fixture(params=SQL_VERSIONS, ids=[f"flink-{v}-sql" for v in SQL_VERSIONS])
def sql_run(request: pytest.FixtureRequest, live: LiveSession) -> VersionRun:
    return live.sql_runs[request.param]


def _key(run: VersionRun) -> str:
    return f"sql-{run.version}"


@pytest.mark.parametrize("mart", CONFORMANCE_MARTS)
def test_sql_job_conformance_mart_shows_no_mismatch(
    live: LiveSession, sql_run: VersionRun, mart: str
) -> None:
    assert_no_mismatch(live, sql_run, mart)


def test_sql_job_compares_rounds_and_valve_outputs(
    live: LiveSession, sql_run: VersionRun, figures: dict
) -> None:
    assert_compared(
        live, sql_run, figures[_key(sql_run)], MIN_ROUNDS_COMPARED, MIN_VALVE_OUTPUTS_COMPARED
    )


def test_sql_job_rest_gauges_equal_flink_gauges_mart(
    live: LiveSession, sql_run: VersionRun, figures: dict
) -> None:
    assert len(sql_run.rest["gauges"]) >= MIN_REST_GAUGE_READINGS, len(sql_run.rest["gauges"])
    _, _, matched = match_rest_gauges(live, sql_run, figures[_key(sql_run)])
    shown = {(r["vertex_id"], r["subtask_index"], s.round_index) for r, s in matched}
    assert sum(1 for *_, k in shown if k >= 0) >= MIN_ROUNDS_COMPARED // 2, len(shown)


def test_sql_job_rest_watermarks_are_in_task_watermarks(
    live: LiveSession, sql_run: VersionRun, figures: dict
) -> None:
    check_rest_watermarks(live, sql_run, figures[_key(sql_run)], MIN_REST_WATERMARK_READINGS)


def test_sql_job_ran_through_its_releases_table_api(sql_run: VersionRun) -> None:
    """PyFlink's Table API from 1.19 on, the Java Table API before: the job says which ran it."""
    assert sql_run.run.result["api"] == sql_api(sql_run.version), sql_run.run.result


def test_sql_job_graph_is_source_then_window_aggregation(sql_run: VersionRun) -> None:
    """Two vertices: the datagen source (with the watermark assigner chained) and, after the
    hash shuffle, the window aggregation (with the sink chained)."""
    names = sorted(info["name"] for info in sql_run.rest["vertices"].values())
    assert len(names) == 2, names
    assert any("clicks" in n for n in names), names
    assert any("Window" in n or "window" in n for n in names), names


def test_sql_job_sources_are_back_pressured_and_the_aggregation_idle(
    live: LiveSession, sql_run: VersionRun
) -> None:
    """The job does what it is built to do: SLOW_SUM makes the aggregation slower than the
    sources in alternate 3 s windows (they are back-pressured then) and faster in the others
    (it idles). Measured on 1.15.4 and 2.3.0: 7 to 15 s of hard back pressure per source subtask,
    about 20 s idle per aggregation subtask, over a 50 to 60 s job."""
    totals: dict[tuple[str, int], Counter] = defaultdict(Counter)
    for row in _mart(live, "fct_subtask_seconds", sql_run.job_id):
        name = sql_run.rest["vertices"][row["vertex_id"]]["name"]
        kind = "source" if "clicks" in name and "Window" not in name else "aggregation"
        for column in ("idle_ms", "soft_backpressured_ms", "hard_backpressured_ms"):
            totals[(kind, row["subtask_index"])][column] += row[column]
    assert {k for k, _ in totals} == {"source", "aggregation"}, dict(totals)
    for (kind, subtask), seen in totals.items():
        if kind == "source":
            pressed = seen["soft_backpressured_ms"] + seen["hard_backpressured_ms"]
            assert pressed >= 1000, (subtask, dict(seen))
        else:
            assert seen["idle_ms"] >= 1000, (subtask, dict(seen))
