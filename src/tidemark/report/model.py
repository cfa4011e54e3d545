"""What the report shows, as plain data: no Spark, no Plotly (docs/decisions/0008-report.md).

The Spark side (``report.queries``) aggregates the marts into these records; ``report.page``
draws them. Everything a test may want to assert on (which vertex is reddest, where the graph
puts a vertex, how Flink's UI would have labelled it) is computed here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# Flink's web UI job graph node colours (flink-runtime-web, dagre node component; U3).
DEFAULT_COLOR = "#5db1ff"
BUSY_COLOR = "#ee6464"
BACKPRESSURED_COLOR = "#888888"
DEFAULT_BORDER = "#1890ff"
BUSY_BORDER = "#ee2222"
BACKPRESSURED_BORDER = "#000000"


def ui_percent(ms_per_second: float | None) -> int | None:
    """U3: the percentage Flink's UI shows for a "...TimeMsPerSecond" value,
    ``min(Math.round(value / 10), 100)`` with JavaScript's half-up rounding; None is N/A (NaN)."""
    if ms_per_second is None or math.isnan(ms_per_second):
        return None
    return min(math.floor(ms_per_second / 10 + 0.5), 100)


def ui_label(percent: int | None) -> str:
    """U3: ``N/A`` for NaN, else ``<rounded>%``."""
    return "N/A" if percent is None else f"{percent}%"


def blend(start: str, end: str, share: float) -> str:
    """Flink's UI ``blend`` for two ``#rrggbb`` colours: each channel
    ``Math.round((end - start) * share + start)``."""
    a = [int(start[i : i + 2], 16) for i in (1, 3, 5)]
    b = [int(end[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(
        f"{math.floor((y - x) * share + x + 0.5):02x}" for x, y in zip(a, b, strict=True)
    )


def node_colors(busy_pct: int | None, backpressured_pct: int | None) -> tuple[str, str]:
    """U3: background and border of a job graph node: from the default blue toward red by busy%,
    then toward grey by back pressure%; no blend for 0 or NaN (JavaScript's falsy values)."""
    background, border = DEFAULT_COLOR, DEFAULT_BORDER
    if busy_pct:
        background = blend(background, BUSY_COLOR, busy_pct / 100)
        border = blend(border, BUSY_BORDER, busy_pct / 100)
    if backpressured_pct:
        background = blend(background, BACKPRESSURED_COLOR, backpressured_pct / 100)
        border = blend(border, BACKPRESSURED_BORDER, backpressured_pct / 100)
    return background, border


def redness(color: str) -> int:
    """How far a ``#rrggbb`` colour leans to red: red minus the larger of green and blue."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return r - max(g, b)


@dataclass(frozen=True)
class Vertex:
    """One job graph vertex over the report's time range.

    ``busy_ms`` and ``backpressured_ms`` are what Flink's UI would show if its averaging window
    were the report's range: the max over subtasks (U1) of each subtask's mean milliseconds per
    second in the range. ``busy_ms`` is None where Flink says NaN (legacy sources, M5)."""

    vertex_id: str
    name: str
    parallelism: int
    upstream: tuple[str, ...] = ()
    busy_ms: float | None = None
    backpressured_ms: float | None = None
    peak_busy_ms: float | None = None
    peak_backpressured_ms: float | None = None

    @property
    def busy_pct(self) -> int | None:
        return ui_percent(self.busy_ms)

    @property
    def backpressured_pct(self) -> int | None:
        return ui_percent(self.backpressured_ms)

    @property
    def colors(self) -> tuple[str, str]:
        return node_colors(self.busy_pct, self.backpressured_pct)


def layout(vertices: Sequence[Vertex]) -> dict[str, tuple[int, int]]:
    """Left to right, like Flink's UI: column = the longest path from a source, row = order of
    appearance within the column. Edges to vertices not in the graph are ignored; a cycle (which a
    Flink job graph cannot have) is cut where it closes."""
    known = {v.vertex_id: v for v in vertices}
    column: dict[str, int] = {}

    def depth(vertex_id: str, seen: frozenset[str]) -> int:
        if vertex_id not in column:
            parents = [u for u in known[vertex_id].upstream if u in known and u not in seen]
            column[vertex_id] = max((depth(u, seen | {vertex_id}) + 1 for u in parents), default=0)
        return column[vertex_id]

    rows: dict[int, int] = {}
    placed: dict[str, tuple[int, int]] = {}
    for v in vertices:
        col = depth(v.vertex_id, frozenset())
        placed[v.vertex_id] = (col, rows.get(col, 0))
        rows[col] = rows.get(col, 0) + 1
    return placed


@dataclass(frozen=True)
class Heatmap:
    """Subtasks x time buckets of one vertex and one gauge (ms per second, mean over the bucket;
    with more subtasks than rows, each row is the max over a group of subtasks, so a hot subtask
    stays visible)."""

    vertex_id: str
    gauge: str  # busy, backpressured or idle
    bucket_starts_ms: list[int]
    row_labels: list[str]
    values: list[list[float | None]]  # [row][bucket]


@dataclass(frozen=True)
class Incident:
    vertex_id: str
    start_ms: int
    end_ms: int
    peak_ratio: float
    mean_ratio: float
    bottleneck_vertex_id: str | None
    bottleneck_subtask: int | None
    confidence: str
    evidence: str


# The names of the back pressure views (ReportData.views), one line each per vertex.
EXACT = "exact, per second"
GAUGE_VIEW = "Flink UI (1.13+ gauge)"
SAMPLED_VIEW = "Flink 1.12 (sampled)"


@dataclass(frozen=True)
class Series:
    """One line over time: x in epoch ms, y in the series' unit (None draws a gap)."""

    vertex_id: str
    name: str
    x_ms: list[int]
    y: list[float | None]


@dataclass
class ReportData:
    job_id: str
    from_ms: int
    to_ms: int
    vertices: list[Vertex]
    heatmaps: list[Heatmap] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    watermark_lag: list[Series] = field(default_factory=list)
    idle_stretches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    stalled_stretches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # per vertex: the exact per-second back pressure, Flink's 1.13+ gauge view, the <= 1.12 view
    views: list[Series] = field(default_factory=list)
    gauge_window_s: int = 60
    other_jobs: list[str] = field(default_factory=list)

    def name(self, vertex_id: str | None) -> str:
        if vertex_id is None:
            return "none named"
        for v in self.vertices:
            if v.vertex_id == vertex_id:
                return v.name
        return vertex_id

    def summary(self) -> dict:
        """What the page shows, as plain JSON (embedded in the page for scripts and tests)."""
        return {
            "job_id": self.job_id,
            "from_ms": self.from_ms,
            "to_ms": self.to_ms,
            "vertices": [
                {
                    "vertex_id": v.vertex_id,
                    "name": v.name,
                    "parallelism": v.parallelism,
                    "upstream_vertex_ids": list(v.upstream),
                    "busy_pct": v.busy_pct,
                    "backpressured_pct": v.backpressured_pct,
                    "color": v.colors[0],
                }
                for v in self.vertices
            ],
            "reddest_vertex_id": self.reddest().vertex_id,
            "backpressure_ratio": {
                s.vertex_id: [[x, y] for x, y in zip(s.x_ms, s.y, strict=True)]
                for s in self.views
                if s.name == EXACT
            },
            "incidents": [
                {
                    "vertex_id": i.vertex_id,
                    "start_ms": i.start_ms,
                    "end_ms": i.end_ms,
                    "peak_ratio": i.peak_ratio,
                    "bottleneck_vertex_id": i.bottleneck_vertex_id,
                    "bottleneck_subtask": i.bottleneck_subtask,
                }
                for i in self.incidents
            ],
        }

    def reddest(self) -> Vertex:
        """The vertex whose node Flink's UI would draw reddest (busiest, least back-pressured)."""
        return max(self.vertices, key=lambda v: redness(v.colors[0]))


def stretches(points: Iterable[tuple[int, bool]], step_ms: int) -> list[tuple[int, int]]:
    """Maximal [start, end) ranges of consecutive ``step_ms`` buckets whose flag is true."""
    found: list[tuple[int, int]] = []
    for start, flag in sorted(points):
        if not flag:
            continue
        if found and found[-1][1] == start:
            found[-1] = (found[-1][0], start + step_ms)
        else:
            found.append((start, start + step_ms))
    return found


def bucket_ms(from_ms: int, to_ms: int, max_buckets: int) -> int:
    """The width (a whole number of seconds) that splits [from, to) into at most ``max_buckets``."""
    seconds = max(1, math.ceil((to_ms - from_ms) / 1000))
    return 1000 * max(1, math.ceil(seconds / max_buckets))
