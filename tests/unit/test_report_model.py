"""The report's pure rules: Flink's UI labels and colours (U1-U3), the graph's layout, buckets."""

from __future__ import annotations

import math

import pytest

from tidemark.report.model import (
    BACKPRESSURED_COLOR,
    BUSY_COLOR,
    DEFAULT_BORDER,
    DEFAULT_COLOR,
    ReportData,
    Vertex,
    blend,
    bucket_ms,
    layout,
    node_colors,
    redness,
    stretches,
    ui_label,
    ui_percent,
)


@pytest.mark.parametrize(
    ("ms", "percent"),
    [(0, 0), (4.9, 0), (5, 1), (25, 3), (15, 2), (994.9, 99), (995, 100), (1500, 100)],
)
def test_u3_percent_rounds_halves_up_like_javascript(ms: float, percent: int) -> None:
    # Python's round() would give 0 for 5 and 2 for 25 (halves to even).
    assert ui_percent(ms) == percent


def test_u3_nan_and_null_are_na() -> None:
    assert ui_percent(None) is None and ui_percent(math.nan) is None
    assert ui_label(None) == "N/A" and ui_label(7) == "7%"


def test_u3_blend_is_flinks_per_channel_rounding() -> None:
    assert blend("#000000", "#ffffff", 0.5) == "#808080"  # 127.5 rounds up
    assert blend(DEFAULT_COLOR, BUSY_COLOR, 0) == DEFAULT_COLOR
    assert blend(DEFAULT_COLOR, BUSY_COLOR, 1) == BUSY_COLOR


def test_u3_node_colour_blends_busy_then_back_pressure_and_skips_zero_and_nan() -> None:
    assert node_colors(None, None) == (DEFAULT_COLOR, DEFAULT_BORDER)
    assert node_colors(0, 0) == (DEFAULT_COLOR, DEFAULT_BORDER)
    assert node_colors(100, 0)[0] == BUSY_COLOR
    assert node_colors(0, 100)[0] == BACKPRESSURED_COLOR
    # busy first, then toward grey: 50 % busy and 50 % back-pressured
    assert node_colors(50, 50)[0] == blend(blend(DEFAULT_COLOR, BUSY_COLOR, 0.5), "#888888", 0.5)


def test_the_busiest_unpressured_vertex_is_the_reddest() -> None:
    data = ReportData(
        "j",
        0,
        1000,
        [
            Vertex("s", "Source", 2, (), busy_ms=300, backpressured_ms=600),
            Vertex("m", "Map", 4, ("s",), busy_ms=200, backpressured_ms=700),
            Vertex("k", "Sink", 2, ("m",), busy_ms=950, backpressured_ms=0),
            Vertex("l", "Legacy", 1, (), busy_ms=None, backpressured_ms=0),
        ],
    )
    assert data.reddest().vertex_id == "k"
    assert redness(BUSY_COLOR) > redness(DEFAULT_COLOR)
    assert data.name("m") == "Map" and data.name("unknown") == "unknown"
    assert data.name(None) == "none named"


def test_layout_is_left_to_right_by_longest_path_from_a_source() -> None:
    vertices = [
        Vertex("a", "A", 1),
        Vertex("b", "B", 1, ("a",)),
        Vertex("c", "C", 1, ("a",)),
        Vertex("d", "D", 1, ("b", "a")),  # longest path a -> b -> d
        Vertex("e", "E", 1, ("missing",)),  # an edge to a vertex not in the graph is ignored
    ]
    assert layout(vertices) == {
        "a": (0, 0),
        "b": (1, 0),
        "c": (1, 1),
        "d": (2, 0),
        "e": (0, 1),
    }


def test_layout_cuts_a_cycle_instead_of_recursing_forever() -> None:
    placed = layout([Vertex("a", "A", 1, ("b",)), Vertex("b", "B", 1, ("a",))])
    assert set(placed) == {"a", "b"}


def test_stretches_join_consecutive_flagged_buckets() -> None:
    points = [(0, True), (10, True), (20, False), (30, True), (50, True), (40, True)]
    assert stretches(points, 10) == [(0, 20), (30, 60)]
    assert stretches([], 10) == []


@pytest.mark.parametrize(
    ("span_ms", "most", "width"),
    [(150_000, 240, 1000), (3_600_000, 240, 15_000), (3_601_000, 240, 16_000), (500, 10, 1000)],
)
def test_buckets_are_whole_seconds_and_at_most_asked(span_ms: int, most: int, width: int) -> None:
    assert bucket_ms(0, span_ms, most) == width
    assert math.ceil(span_ms / width) <= most


def test_the_largest_page_the_queries_can_produce_stays_a_few_mb() -> None:
    """The Spark side caps every figure (report.queries: MAX_ROWS subtask rows, MAX_BUCKETS time
    columns, MAX_POINTS line points), so a 1,000-subtask job over an hour draws no more than
    this: five vertices at every cap."""
    from tidemark.report.model import EXACT, GAUGE_VIEW, SAMPLED_VIEW, Heatmap, Incident, Series
    from tidemark.report.page import render
    from tidemark.report.queries import MAX_BUCKETS, MAX_POINTS, MAX_ROWS

    hour = 3_600_000
    ids = [f"{i:032x}" for i in range(5)]
    vertices = [
        Vertex(vid, f"Vertex {i}", 1000, tuple(ids[:i][-1:]), busy_ms=500.0, backpressured_ms=400.0)
        for i, vid in enumerate(ids)
    ]
    buckets = list(range(0, hour, hour // MAX_BUCKETS))
    points = list(range(0, hour, hour // MAX_POINTS))
    data = ReportData("j", 0, hour, vertices)
    for v in vertices:
        data.heatmaps += [
            Heatmap(
                v.vertex_id,
                gauge,
                buckets,
                [f"{r * 10}-{r * 10 + 9}" for r in range(MAX_ROWS)],
                [[round(997.3 * ((r + b) % 7) / 7) for b in buckets] for r in range(MAX_ROWS)],
            )
            for gauge in ("busy", "backpressured", "idle")
        ]
        data.views += [
            Series(v.vertex_id, name, points, [((p // 1000) % 997) / 1000 for p in points])
            for name in (EXACT, GAUGE_VIEW, SAMPLED_VIEW)
        ]
        data.watermark_lag.append(Series(v.vertex_id, "lag", points, [1.5] * len(points)))
        data.incidents.append(Incident(v.vertex_id, 0, 60_000, 0.9, 0.7, ids[-1], 3, "high", ""))
    page = render(data)
    assert len(page.encode()) < 10_000_000, len(page.encode())  # 7.3 MB, 4.8 of them Plotly.js


class _Catalog:
    def databaseExists(self, name: str) -> bool:  # noqa: N802 (PySpark's name)
        return name == "tidemark"


class _Spark:
    """The two calls ``load`` makes before it reads a mart: the schema, then its tables."""

    catalog = _Catalog()

    def __init__(self, tables: list[str]) -> None:
        self.tables = tables

    def sql(self, statement: str):
        assert statement == "show tables in tidemark", statement
        rows = [type("Row", (), {"tableName": name}) for name in self.tables]
        return type("Frame", (), {"collect": lambda _: rows})()


def test_a_lake_with_some_marts_missing_names_them_before_reading_any() -> None:
    """The check behind `tidemark report` on a lake Spark has run on (a lake it never ran on is
    refused before Spark starts: tests/e2e/test_report.py)."""
    from tidemark.report.queries import NEEDED, ReportError, Window, load

    built = ["fct_subtask_seconds", "dim_vertices", "fct_valve_emissions"]
    with pytest.raises(ReportError) as caught:
        load(_Spark(built), Window(None, None, None))
    missing = [name for name in NEEDED if name not in built]
    assert len(missing) == len(NEEDED) - 2
    assert str(caught.value) == (
        f"the marts are not built ({', '.join(missing)} missing in schema tidemark):"
        " run `dbt build` first"
    )
