"""The report's HTML: Plotly figures of a ``ReportData``, in one self-contained file.

Plotly.js is inlined once (no network needed to open the file); each figure is a JSON spec drawn
by ``Plotly.newPlot``. When every figure has drawn, the page sets ``data-rendered="ok"`` on
``<body>``; a script error sets ``data-errors``. The browser test reads both.
"""

from __future__ import annotations

import datetime as dt
import html
import json

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from tidemark.report.model import EXACT, GAUGE_VIEW, SAMPLED_VIEW, ReportData, layout, ui_label

HEAT_COLORS = {
    "busy": [[0, "#f7fbff"], [1, "#ee2222"]],
    "backpressured": [[0, "#f7fbff"], [1, "#222222"]],
    "idle": [[0, "#f7fbff"], [1, "#1890ff"]],
}
LINE_COLORS = {
    EXACT: "#ee2222",
    GAUGE_VIEW: "#1890ff",
    SAMPLED_VIEW: "#7a7a7a",
}
NODE_W, NODE_H, GAP_X, GAP_Y = 2.6, 1.4, 1.4, 0.6


def _time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _dates(values: list[int]) -> list[str]:
    return [dt.datetime.fromtimestamp(v / 1000, dt.UTC).isoformat() for v in values]


def graph_figure(data: ReportData) -> go.Figure:
    """The job graph left to right, nodes coloured as Flink's UI colours them (U3)."""
    places = layout(data.vertices)
    centers = {
        vid: (col * (NODE_W + GAP_X), -row * (NODE_H + GAP_Y)) for vid, (col, row) in places.items()
    }
    fig = go.Figure()
    for v in data.vertices:
        x, y = centers[v.vertex_id]
        for upstream in v.upstream:
            if upstream in centers:
                ux, uy = centers[upstream]
                fig.add_annotation(
                    x=x - NODE_W / 2, y=y, ax=ux + NODE_W / 2, ay=uy,
                    xref="x", yref="y", axref="x", ayref="y",
                    showarrow=True, arrowhead=2, arrowwidth=1.5, arrowcolor="#666", text="",
                )  # fmt: skip
        background, border = v.colors
        fig.add_shape(
            type="rect", x0=x - NODE_W / 2, x1=x + NODE_W / 2, y0=y - NODE_H / 2,
            y1=y + NODE_H / 2, fillcolor=background, line={"color": border, "width": 2},
        )  # fmt: skip
        name = v.name if len(v.name) <= 40 else v.name[:39] + "…"
        fig.add_annotation(
            x=x, y=y, showarrow=False, font={"color": "white", "size": 12},
            text=(
                f"<b>{html.escape(name)}</b><br>Parallelism: {v.parallelism}"
                f"<br>Backpressured (max): {ui_label(v.backpressured_pct)}"
                f"<br>Busy (max): {ui_label(v.busy_pct)}"
            ),
        )  # fmt: skip
    xs = [c[0] for c in centers.values()]
    ys = [c[1] for c in centers.values()]
    # An invisible trace per node carries the hover text (shapes have none).
    fig.add_trace(
        go.Scatter(
            x=xs, y=ys, mode="markers", marker={"size": 40, "opacity": 0},
            hovertext=[
                f"{v.name}<br>id {v.vertex_id}<br>peak busy {_ms(v.peak_busy_ms)}"
                f"<br>peak back pressure {_ms(v.peak_backpressured_ms)}"
                for v in data.vertices
            ],
            hoverinfo="text", showlegend=False,
        )
    )  # fmt: skip
    fig.update_xaxes(visible=False, range=[min(xs) - NODE_W, max(xs) + NODE_W])
    fig.update_yaxes(visible=False, range=[min(ys) - NODE_H, max(ys) + NODE_H])
    rows = 1 + max((row for _, row in places.values()), default=0)
    fig.update_layout(
        height=140 + 130 * rows, margin={"l": 10, "r": 10, "t": 10, "b": 10},
        plot_bgcolor="white",
    )  # fmt: skip
    return fig


def _ms(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.0f} ms/s"


def heatmap_figure(data: ReportData, vertex_id: str) -> go.Figure:
    maps = [h for h in data.heatmaps if h.vertex_id == vertex_id]
    fig = make_subplots(
        rows=len(maps), cols=1, shared_xaxes=True, vertical_spacing=0.06,
        subplot_titles=[f"{h.gauge} (ms per second)" for h in maps],
    )  # fmt: skip
    for i, h in enumerate(maps, start=1):
        fig.add_trace(
            go.Heatmap(
                z=h.values, x=_dates(h.bucket_starts_ms), y=h.row_labels, zmin=0, zmax=1000,
                colorscale=HEAT_COLORS[h.gauge], showscale=i == 1,
                hovertemplate="subtask %{y}<br>%{x}<br>%{z} ms/s<extra>" + h.gauge + "</extra>",
            ),
            row=i, col=1,
        )  # fmt: skip
        fig.update_yaxes(title_text="subtask", type="category", row=i, col=1)
    rows = max((len(h.row_labels) for h in maps), default=1)
    fig.update_layout(height=120 + len(maps) * min(60 + 14 * rows, 320), margin={"t": 40, "b": 30})
    return fig


def incidents_figure(data: ReportData) -> go.Figure:
    fig = go.Figure()
    for incident in data.incidents:
        bottleneck = data.name(incident.bottleneck_vertex_id)
        if incident.bottleneck_subtask is not None:
            bottleneck += f" (subtask {incident.bottleneck_subtask})"
        fig.add_trace(
            go.Bar(
                y=[data.name(incident.vertex_id)],
                x=[incident.end_ms - incident.start_ms],
                base=[_dates([incident.start_ms])[0]],
                orientation="h", marker={"color": "#888888"}, showlegend=False,
                text=[f"bottleneck: {bottleneck}"], textposition="inside",
                insidetextanchor="start", textfont={"color": "white"},
                hovertext=(
                    f"{_time(incident.start_ms)}"
                    f" for {(incident.end_ms - incident.start_ms) // 1000} s"
                    f"<br>peak {incident.peak_ratio:.2f}, mean {incident.mean_ratio:.2f}"
                    f"<br>bottleneck: {bottleneck} [{incident.confidence}]"
                    f"<br>{incident.evidence}"
                ),
                hoverinfo="text",
            )
        )  # fmt: skip
    fig.update_xaxes(type="date", range=_dates([data.from_ms, data.to_ms]))
    fig.update_layout(
        height=160 + 40 * len({i.vertex_id for i in data.incidents}), barmode="overlay",
        margin={"t": 20, "b": 30},
    )  # fmt: skip
    return fig


def watermark_figure(data: ReportData) -> go.Figure:
    fig = go.Figure()
    for series in data.watermark_lag:
        fig.add_trace(
            go.Scatter(
                x=_dates(series.x_ms), y=series.y, mode="lines", name=data.name(series.vertex_id)
            )
        )
    for marks, color, label in (
        (data.idle_stretches, "rgba(24,144,255,0.12)", "idle"),
        (data.stalled_stretches, "rgba(238,34,34,0.12)", "stalled"),
    ):
        for vertex_id, spans in marks.items():
            for start, end in spans:
                fig.add_vrect(
                    x0=_dates([start])[0], x1=_dates([end])[0], fillcolor=color, line_width=0,
                    annotation_text=f"{label}: {data.name(vertex_id)}",
                    annotation_position="top left", annotation_font_size=9,
                )  # fmt: skip
    fig.update_yaxes(title_text="lag (s)", rangemode="tozero")
    fig.update_layout(height=360, margin={"t": 20, "b": 30})
    return fig


def views_figure(data: ReportData, vertex_id: str) -> go.Figure:
    fig = go.Figure()
    for series in (s for s in data.views if s.vertex_id == vertex_id):
        sampled = series.name == SAMPLED_VIEW
        fig.add_trace(
            go.Scatter(
                x=_dates(series.x_ms), y=series.y, name=series.name,
                mode="markers" if sampled else "lines",
                line={"color": LINE_COLORS.get(series.name), "width": 1.5},
                marker={"color": LINE_COLORS.get(series.name), "size": 8, "symbol": "square"},
                line_shape="hv",
            )
        )  # fmt: skip
    for threshold, label in ((0.1, "ok ≤ 0.10"), (0.5, "low ≤ 0.5")):
        fig.add_hline(
            y=threshold, line_dash="dot", line_color="#999", annotation_text=label,
            annotation_font_size=9,
        )  # fmt: skip
    fig.update_yaxes(title_text="back pressure ratio", range=[0, 1.05])
    fig.update_layout(height=300, margin={"t": 20, "b": 30}, legend={"orientation": "h"})
    return fig


def figures(data: ReportData) -> list[tuple[str, str, go.Figure]]:
    """(section title, explanation, figure) in page order."""
    found = [
        (
            "Job graph",
            "Coloured as Flink's web UI colours it (U3): toward red by busy, toward grey by back"
            " pressure. Backpressured (max) and Busy (max) are the max over subtasks (U1) of each"
            " subtask's mean over this range, rounded as the UI rounds them.",
            graph_figure(data),
        ),
        (
            "Back pressure incidents",
            "Each bar is an incident of a vertex at level high (fct_backpressure_incidents); hover"
            " for the bottleneck named by fct_bottlenecks and its evidence.",
            incidents_figure(data),
        ),
        (
            "Watermark lag",
            "Max over subtasks of processing time minus the vertex's watermark (s); shaded where"
            " the vertex was idle (blue) or a subtask's watermark stalled (red).",
            watermark_figure(data),
        ),
    ]
    for v in data.vertices:
        found.append(
            (
                f"{v.name}: subtasks × time",
                "Mean ms per second in each cell; with many subtasks a row is the max over a group"
                " of them, so a hot subtask stays visible.",
                heatmap_figure(data, v.vertex_id),
            )
        )
        found.append(
            (
                f"{v.name}: what averaging hid",
                f"Exact back pressure per second (max over subtasks) against what Flink's own UI"
                f" showed: its gauge averages over {data.gauge_window_s} s and updates every 5 s"
                " (1.13+); Flink 1.12 sampled 100 stack samples once a minute (B1-B4).",
                views_figure(data, v.vertex_id),
            )
        )
    return found


def render(data: ReportData) -> str:
    """The whole page."""
    parts = []
    calls = []
    for i, (title, text, fig) in enumerate(figures(data)):
        parts.append(
            f"<section><h2>{html.escape(title)}</h2><p>{html.escape(text)}</p>"
            f'<div id="fig{i}" class="figure"></div></section>'
        )
        spec = fig.to_json()
        calls.append(f'draw("fig{i}", {spec});')
    summary = _summary(data)
    other = (
        f"<p class=note>Other jobs in the lake: {html.escape(', '.join(data.other_jobs))}"
        " (choose one with --job).</p>"
        if data.other_jobs
        else ""
    )
    return _TEMPLATE.format(
        title=html.escape(f"tidemark report: job {data.job_id}"),
        job=html.escape(data.job_id),
        range=f"{_time(data.from_ms)} to {_time(data.to_ms)}",
        summary=summary,
        other=other,
        sections="\n".join(parts),
        plotly=get_plotlyjs(),
        calls="\n".join(calls),
        summary_json=json.dumps(data.summary()).replace("</", "<\\/"),
        count=len(calls),
    )


def _summary(data: ReportData) -> str:
    reddest = data.reddest()
    lines = [
        f"<li>{len(data.vertices)} vertices; the busiest node: <b>{html.escape(reddest.name)}</b>"
        f" (busy {ui_label(reddest.busy_pct)}, back-pressured"
        f" {ui_label(reddest.backpressured_pct)}).</li>"
    ]
    named = [i for i in data.incidents if i.bottleneck_vertex_id]
    lines.append(
        f"<li>{len(data.incidents)} back pressure incident(s)"
        + (
            "; bottleneck(s): "
            + ", ".join(sorted({html.escape(data.name(i.bottleneck_vertex_id)) for i in named}))
            if named
            else ""
        )
        + ".</li>"
    )
    return "<ul>" + "".join(lines) + "</ul>"


_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; }}
h1 {{ font-size: 1.4em; margin-bottom: 0.2em; }} h2 {{ font-size: 1.1em; margin: 1.4em 0 0.2em; }}
p {{ margin: 0.2em 0 0.4em; color: #555; max-width: 70em; }} .note {{ color: #a05a00; }}
</style>
<script>
var pageErrors = [];
function noteError(message) {{
  pageErrors.push(String(message));
  if (document.body) document.body.dataset.errors = pageErrors.join("\\n");
}}
window.onerror = noteError;
var consoleError = console.error;
console.error = function () {{
  noteError([].join.call(arguments, " "));
  consoleError.apply(console, arguments);
}};
</script>
<script>{plotly}</script>
</head><body data-rendered="0">
<h1>{title}</h1>
<p>{range}. Built from tidemark's marts: exact per-second figures, not Flink's averages.</p>
{summary}
{other}
{sections}
<script type="application/json" id="tidemark-summary">{summary_json}</script>
<script>
var drawn = 0;
function draw(id, spec) {{
  Plotly.newPlot(id, spec.data, spec.layout, {{displaylogo: false, responsive: true}})
    .then(function () {{
      drawn += 1;
      document.body.dataset.rendered = drawn === {count} ? "ok" : String(drawn);
    }})
    .catch(function (e) {{ noteError("plot " + id + ": " + e); }});
}}
{calls}
</script>
<script>if (pageErrors.length) document.body.dataset.errors = pageErrors.join("\\n");</script>
</body></html>
"""
