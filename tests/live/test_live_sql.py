"""tidemark against a Flink SQL job: the second job shape of the live tests (issue 45).

The live session (tests/live/conftest.py) also runs tests/live/job/LiveSqlJob.java, a windowed
aggregation over ``datagen`` written in Flink SQL (Java Table API, local MiniCluster), on the
releases of ``SQL_VERSIONS`` (by default the session's), at the same time as the DataStream
job, captured into the same lake and built by the same ``dbt build``. The same
conformance holds it to what Flink published: no mismatch in the conformance marts, and every
REST reading of the three task gauges and of ``currentInputWatermark`` equals a row.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from tests.live.conftest import GAUGE_MART, SQL_VERSIONS, LiveSession, VersionRun
from tests.live.matching import gauge_timelines, input_watermark_timelines, match
from tests.live.test_live_flink import CONFORMANCE_MARTS, LAG_MS, _bronze, _mart

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
    rows = _mart(live, mart, sql_run.job_id)
    assert rows, f"{mart} has no rows for Flink {sql_run.version}'s SQL job"
    mismatched = [r for r in rows if r.get("is_match") is False]
    assert not mismatched, f"{len(mismatched)} of {len(rows)} rows mismatch, e.g. {mismatched[:3]}"
    counts = {k: v for r in rows for k, v in r.items() if "mismatch" in k and v}
    assert not counts, f"{mart} counts mismatches: {counts}"


def test_sql_job_compares_rounds_and_valve_outputs(
    live: LiveSession, sql_run: VersionRun, figures: dict
) -> None:
    rounds = _mart(live, "fct_gauge_conformance", sql_run.job_id)
    valves = _mart(live, "fct_valve_conformance", sql_run.job_id)
    compared_rounds = sum(1 for r in rounds if r.get("is_match") is not None)
    compared_outputs = sum(1 for r in valves if r.get("is_match") is not None)
    figures[_key(sql_run)].update(
        gauge_values_compared=compared_rounds,
        gauge_values_matched=sum(1 for r in rounds if r.get("is_match") is True),
        valve_outputs_compared=compared_outputs,
        valve_outputs_matched=sum(1 for r in valves if r.get("is_match") is True),
    )
    assert compared_rounds >= MIN_ROUNDS_COMPARED, compared_rounds
    assert compared_outputs >= MIN_VALVE_OUTPUTS_COMPARED, compared_outputs


def test_sql_job_rest_gauges_equal_flink_gauges_mart(
    live: LiveSession, sql_run: VersionRun, figures: dict
) -> None:
    readings = sql_run.rest["gauges"]
    assert len(readings) >= MIN_REST_GAUGE_READINGS, len(readings)
    started: dict[tuple[str, int, int], int] = {}
    ended: dict[tuple[str, int, int], int] = {}
    for event in _bronze(live, "timer_events"):
        if event["job_id"] == sql_run.job_id:
            task = (event["vertex_id"], event["subtask_index"], event["attempt"])
            started[task] = min(started.get(task, event["ts_ms"]), event["ts_ms"])
            ended[task] = max(ended.get(task, event["ts_ms"]), event["ts_ms"])
    rows = _mart(live, GAUGE_MART, sql_run.job_id)
    captured = [r for r in rows if r["round_source"] == "captured"]
    straddles: list = []
    matched, missed = match(readings, gauge_timelines(captured, started, ended), LAG_MS, straddles)
    figures[_key(sql_run)].update(
        rest_gauge_readings=len(matched) + len(missed) + len(straddles),
        rest_gauge_readings_equal=len(matched),
        rest_gauge_readings_straddling=len(straddles),
    )
    assert not missed, f"{len(missed)} of {len(readings)} REST readings match no round:\n" + (
        "\n".join(str(m) for m in missed[:10])
    )
    assert len(straddles) <= max(2, len(readings) // 50), straddles
    shown = {(r["vertex_id"], r["subtask_index"], s.round_index) for r, s in matched}
    assert sum(1 for *_, k in shown if k >= 0) >= MIN_ROUNDS_COMPARED // 2, len(shown)


def test_sql_job_rest_watermarks_are_in_task_watermarks(
    live: LiveSession, sql_run: VersionRun, figures: dict
) -> None:
    readings = sql_run.rest["watermarks"]
    timelines = input_watermark_timelines(
        _mart(live, "fct_task_watermarks", sql_run.job_id),
        _mart(live, "fct_valve_emissions", sql_run.job_id),
    )
    matched, missed = match(readings, timelines, LAG_MS)
    figures[_key(sql_run)].update(
        rest_watermark_readings=len(matched) + len(missed),
        rest_watermark_readings_equal=len(matched),
    )
    assert len(matched) >= MIN_REST_WATERMARK_READINGS, len(matched)
    assert not missed, f"{len(missed)} REST watermarks are not in fct_task_watermarks:\n" + (
        "\n".join(str(m) for m in missed[:10])
    )


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
