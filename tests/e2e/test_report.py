"""`tidemark report` on the demo lake's backpressure job: the data behind the charts tells the
generator's truth, and the page draws in a real browser (Chromium) without a script error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.browser import show
from tests.e2e.conftest import DemoLake
from tests.e2e.harness import tidemark
from tests.e2e.test_gauges_backpressure import classify
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e


def _summary(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="tidemark-summary">(.*?)</script>', page)
    assert found, "the page carries no summary"
    return json.loads(found.group(1))


def test_report_shows_the_throttled_sink_red_and_draws_in_a_browser(
    demo_lake: DemoLake, tmp_path: Path
) -> None:
    manifest = demo_lake.manifests["backpressure"]
    truth = manifest["truth"]
    out = tmp_path / "out" / "report.html"
    result = demo_lake.warm.tidemark("report", "--job", manifest["job_id"], "--out", str(out))
    result.check()
    assert f"report written to {out}" in result.stdout, result.stderr
    page = out.read_text(encoding="utf-8")
    assert len(page) < 8_000_000, "the page should stay a few MB"
    # Self-contained: nothing loaded from elsewhere.
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)

    summary = _summary(page)
    names = {v["vertex_id"]: v["name"] for v in summary["vertices"]}
    assert names == {v["vertex_id"]: v["vertex_name"] for v in manifest["vertices"]}
    assert summary["reddest_vertex_id"] == truth["throttled_vertex_id"]
    by_id = {v["vertex_id"]: v for v in summary["vertices"]}
    assert by_id[truth["throttled_vertex_id"]]["backpressured_pct"] == 0
    # The vertices upstream of the sink are back-pressured exactly in the throttle windows.
    windows = truth["throttle_windows"]
    upstream = [v for v in names if v != truth["throttled_vertex_id"]]
    for vertex_id in upstream:
        points = summary["backpressure_ratio"][vertex_id]
        kinds = {"throttled": [], "free": [], "edge": []}
        for second_ms, ratio in points:
            kinds[classify(second_ms, windows)].append(ratio)
        assert kinds["throttled"] and min(kinds["throttled"]) > 0.5, names[vertex_id]
        assert kinds["free"] and max(kinds["free"]) <= 0.1, names[vertex_id]
    bottlenecks = {i["bottleneck_vertex_id"] for i in summary["incidents"]}
    assert bottlenecks == {truth["throttled_vertex_id"]}

    shown = show(out, tmp_path / "report.png")
    assert shown.errors is None, shown.errors
    assert shown.console == [], shown.console
    assert shown.rendered == "ok"
    assert "Backpressured (max)" in shown.dom and names[truth["throttled_vertex_id"]] in shown.dom
    assert (tmp_path / "report.png").stat().st_size > 50_000


def test_report_errors_are_one_line_and_write_nothing(
    demo_lake: DemoLake, lake: Lake, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    # A new user's first try, before `dbt build`: a real `tidemark report` process, which says
    # so without starting Spark (that would make the lake's metastore).
    unbuilt = tidemark("report", "--out", str(out), lake=lake)
    assert unbuilt.returncode == 1
    assert unbuilt.stderr.strip().splitlines()[-1] == (
        "tidemark report: error: the marts are not built (fct_subtask_seconds, fct_vertex_seconds,"
        " fct_backpressure_incidents, fct_bottlenecks, fct_vertex_watermark_seconds,"
        " fct_subtask_flink_gauges, dim_vertices missing in schema tidemark): run `dbt build` first"
    )
    assert not lake.metastore.exists()
    warm = demo_lake.warm
    unknown = warm.tidemark("report", "--job", "nope", "--out", str(out))
    assert unknown.returncode == 1
    assert "job 'nope' is not in the marts; jobs there: " in unknown.stderr
    backwards = warm.tidemark("report", "--from", "2024-01-01T00:01:00", "--to", "60000",
                              "--out", str(out))  # fmt: skip
    assert backwards.returncode == 1 and "--to must be after --from" in backwards.stderr
    garbled = warm.tidemark("report", "--from", "yesterday", "--out", str(out))
    assert garbled.returncode == 1 and "not a time: 'yesterday'" in garbled.stderr
    assert not out.exists()
