"""The generator's `backpressure` scenario through ingest and dbt: the gauge marts tell the story.

The sink vertex is throttled in known windows (manifest.json `truth.throttle_windows`); its
upstream vertex (the map) must be at back pressure level `high` (B6, B7: level of the max over
subtasks) exactly while the sink is throttled and `ok` otherwise. The generator starts and ends
the map's back pressure within about 0.5 s of a window's edges, so the second on each side of an
edge may be either.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import DemoLake
from tests.e2e.warm import WarmLake

pytestmark = pytest.mark.e2e

EDGE_MS = 1_000


@pytest.fixture(scope="module")
def backpressure_lake(demo_lake: DemoLake) -> tuple[WarmLake, dict]:
    return demo_lake.warm, demo_lake.manifests["backpressure"]


def classify(second_ms: int, windows: list[list[int]]) -> str:
    """`throttled`, `free` or `edge` (within EDGE_MS of a window's start or end)."""
    end_ms = second_ms + 1_000
    for start, stop in windows:
        if start + EDGE_MS <= second_ms and end_ms <= stop - EDGE_MS:
            return "throttled"
        if second_ms < stop + EDGE_MS and end_ms > start - EDGE_MS:
            return "edge"
    return "free"


def test_upstream_vertex_is_high_exactly_while_the_consumer_is_throttled(
    backpressure_lake: tuple[WarmLake, dict],
) -> None:
    warm, manifest = backpressure_lake
    truth = manifest["truth"]
    sink = truth["throttled_vertex_id"]
    (upstream,) = next(v for v in manifest["vertices"] if v["vertex_id"] == sink)[
        "upstream_vertex_ids"
    ]
    rows = warm.sql_rows(
        "select second_start_ms, backpressure_level, subtask_count, is_complete "
        "from tidemark.fct_vertex_seconds "
        f"where job_id = '{manifest['job_id']}' and vertex_id = '{upstream}' "
        "order by second_start_ms"
    )
    parallelism = next(v for v in manifest["vertices"] if v["vertex_id"] == upstream)["parallelism"]
    complete = [r for r in rows if r["is_complete"]]
    assert len(complete) >= (manifest["epoch_end_ms"] - manifest["epoch_start_ms"]) // 1000 - 2
    assert all(r["subtask_count"] == parallelism for r in complete)

    windows = truth["throttle_windows"]
    wrong = [
        (r["second_start_ms"], kind, r["backpressure_level"])
        for r in complete
        if (kind := classify(r["second_start_ms"], windows)) != "edge"
        and r["backpressure_level"] != ("high" if kind == "throttled" else "ok")
    ]
    assert not wrong, f"{len(wrong)} seconds with the wrong level, e.g. {wrong[:10]}"
    throttled = sum(classify(r["second_start_ms"], windows) == "throttled" for r in complete)
    assert throttled >= sum(stop - start for start, stop in windows) // 1000 - 4


def test_accumulated_gauges_equal_the_seconds_before_the_round(
    backpressure_lake: tuple[WarmLake, dict],
) -> None:
    """T9/M6: at each task's last round, the accumulated counts are all its time before it."""
    warm, manifest = backpressure_lake
    (row,) = warm.sql_rows(
        "with last_rounds as (select job_id, vertex_id, subtask_index, attempt, "
        "max(update_ms) as update_ms from tidemark.fct_subtask_flink_gauges group by all), "
        "published as (select gauges.* from tidemark.fct_subtask_flink_gauges as gauges "
        "join last_rounds using (job_id, vertex_id, subtask_index, attempt, update_ms)), "
        "measured as (select seconds.job_id, seconds.vertex_id, seconds.subtask_index, "
        "seconds.attempt, sum(seconds.idle_ms) as idle_ms, "
        "sum(seconds.backpressured_ms) as backpressured_ms "
        "from tidemark.fct_subtask_seconds as seconds join last_rounds "
        "on seconds.job_id = last_rounds.job_id and seconds.vertex_id = last_rounds.vertex_id "
        "and seconds.subtask_index = last_rounds.subtask_index "
        "and seconds.attempt = last_rounds.attempt "
        "and seconds.second_start_ms < last_rounds.update_ms group by all) "
        "select count(*) as tasks, "
        "sum(cast(published.accumulated_idle_time_ms != measured.idle_ms as int)) as idle_off, "
        "sum(cast(published.accumulated_back_pressured_time_ms != measured.backpressured_ms "
        "as int)) as back_pressure_off, "
        "sum(cast(published.accumulated_back_pressured_time_ms > 0 as int)) as back_pressured "
        "from published join measured using (job_id, vertex_id, subtask_index, attempt) "
        f"where job_id = '{manifest['job_id']}'"
    )
    assert row["tasks"] == len(manifest["tasks"])
    assert row["idle_off"] == 0 and row["back_pressure_off"] == 0
    assert row["back_pressured"] > 0
