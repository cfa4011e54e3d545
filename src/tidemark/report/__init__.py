"""``tidemark report``: one self-contained HTML page of a job, drawn from the marts.

``queries`` aggregates the marts on Spark, ``model`` holds the plain data and the rules the page
follows (Flink's UI colours and labels, the graph's layout), ``page`` draws it with Plotly.
"""

from __future__ import annotations

from pathlib import Path

from tidemark.report.queries import ReportError, Window

__all__ = ["ReportError", "Window", "write_report"]


def write_report(spark, out: Path, window: Window, gauge_window_s: int = 60) -> Path:
    """Write the report of ``window`` to ``out`` (folders created); returns the path written."""
    from tidemark.report.page import render
    from tidemark.report.queries import load

    data = load(spark, window, gauge_window_s)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(render(data), encoding="utf-8")
    partial.replace(out)  # a reader never sees half a page
    return out
