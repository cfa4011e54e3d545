"""Back pressure incidents and bottlenecks against the generator's ground truth."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import DemoLake

pytestmark = pytest.mark.e2e


def test_incidents_and_bottlenecks_name_the_cause(demo_lake: DemoLake) -> None:
    pressure = demo_lake.manifests["backpressure"]
    skew = demo_lake.manifests["skew"]
    rows = demo_lake.warm.sql_rows(
        "select b.*, i.duration_s from tidemark.fct_bottlenecks b"
        " join tidemark.fct_backpressure_incidents i"
        " on b.job_id = i.job_id and b.backpressured_vertex_id = i.vertex_id"
        " and b.incident_start_ms = i.incident_start_ms"
    )

    # backpressure: the throttled sink is the bottleneck of every incident, which all lie within
    # the throttle windows (to the second) and cover them.
    truth = pressure["truth"]
    incidents = [r for r in rows if r["job_id"] == pressure["job_id"]]
    assert incidents, "no incident found in the backpressure scenario"
    assert {r["bottleneck_vertex_id"] for r in incidents} == {truth["throttled_vertex_id"]}
    assert {r["confidence"] for r in incidents} == {"high"}
    windows = [tuple(w) for w in truth["throttle_windows"]]
    for row in incidents:
        assert any(
            start - 1000 <= row["incident_start_ms"] and row["incident_end_ms"] <= end + 1000
            for start, end in windows
        ), row
    for start, end in windows:
        covered = [
            r for r in incidents if r["incident_start_ms"] < end and r["incident_end_ms"] > start
        ]
        assert max(r["duration_s"] for r in covered) >= (end - start) / 1000 - 2

    # skew: the hot map subtask back-pressures the sources; it is named with its vertex.
    hot = skew["truth"]["hot_subtask"]
    skewed = [r for r in rows if r["job_id"] == skew["job_id"]]
    assert skewed, "no incident found in the skew scenario"
    named = {(r["bottleneck_vertex_id"], r["bottleneck_subtask_index"]) for r in skewed}
    assert named == {(hot["vertex_id"], hot["subtask_index"])}
