"""The Spark side of ``tidemark report``: the marts, aggregated on Spark to what the page draws.

Every query groups before it collects, so the driver receives at most a few hundred thousand
numbers whatever the job's size (at most ``MAX_ROWS`` subtask rows and ``MAX_BUCKETS`` time
buckets per heat map, ``MAX_POINTS`` points per line).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tidemark.report.model import (
    EXACT,
    GAUGE_VIEW,
    SAMPLED_VIEW,
    Heatmap,
    Incident,
    ReportData,
    Series,
    Vertex,
    bucket_ms,
    stretches,
)

SCHEMA = "tidemark"
MAX_ROWS = 100
MAX_BUCKETS = 240
MAX_POINTS = 1200
GAUGES = {"busy": "busy_ms", "backpressured": "backpressured_ms", "idle": "idle_ms"}
NEEDED = (
    "fct_subtask_seconds",
    "fct_vertex_seconds",
    "fct_backpressure_incidents",
    "fct_bottlenecks",
    "fct_vertex_watermark_seconds",
    "fct_subtask_flink_gauges",
    "dim_vertices",
)
SAMPLED = "fct_vertex_sampled_backpressure"


class ReportError(Exception):
    """The report cannot be made from this lake as asked (nothing built, unknown job, ...)."""


@dataclass(frozen=True)
class Window:
    job_id: str | None = None
    from_ms: int | None = None
    to_ms: int | None = None


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _rows(spark, query: str) -> list[dict]:
    return [row.asDict() for row in spark.sql(query).collect()]


def _by_vertex(rows: list[dict]) -> dict[str, list[dict]]:
    """Rows grouped by ``vertex_id``, in their order."""
    grouped: dict[str, list[dict]] = {}
    for row in rows:
        grouped.setdefault(row["vertex_id"], []).append(row)
    return grouped


def _tables(spark) -> set[str]:
    if not spark.catalog.databaseExists(SCHEMA):
        return set()
    return {row.tableName for row in spark.sql(f"show tables in {SCHEMA}").collect()}


def not_built(missing: Sequence[str] = NEEDED) -> ReportError:
    """The error of a lake without the marts ``missing`` (all of them by default)."""
    return ReportError(
        f"the marts are not built ({', '.join(missing)} missing in schema {SCHEMA}):"
        " run `dbt build` first"
    )


def load(spark, window: Window, gauge_window_s: int = 60) -> ReportData:
    """The report's data for one job and time range, read from the marts."""
    tables = _tables(spark)
    missing = [t for t in NEEDED if t not in tables]
    if missing:
        raise not_built(missing)
    jobs = _rows(
        spark,
        f"select job_id, min(second_start_ms) as first_ms, max(second_start_ms) + 1000 as end_ms"
        f" from {SCHEMA}.fct_vertex_seconds group by job_id order by end_ms desc, job_id",
    )
    if not jobs:
        raise ReportError("the marts hold no job yet: ingest events, then run `dbt build`")
    if window.job_id is None:
        job = jobs[0]  # the most recent
    else:
        matching = [j for j in jobs if j["job_id"] == window.job_id]
        if not matching:
            known = ", ".join(j["job_id"] for j in jobs[:10])
            raise ReportError(f"job {window.job_id!r} is not in the marts; jobs there: {known}")
        job = matching[0]
    from_ms = job["first_ms"] if window.from_ms is None else window.from_ms
    to_ms = job["end_ms"] if window.to_ms is None else window.to_ms
    if to_ms <= from_ms:
        raise ReportError(f"--to must be after --from (got {from_ms} .. {to_ms})")
    scope = _Scope(job["job_id"], from_ms, to_ms)
    vertices = _vertices(spark, scope)
    if not vertices:
        raise ReportError(
            f"job {scope.job_id} has no second between {from_ms} and {to_ms}: widen --from/--to"
        )
    data = ReportData(
        job_id=scope.job_id,
        from_ms=from_ms,
        to_ms=to_ms,
        vertices=vertices,
        gauge_window_s=gauge_window_s,
        other_jobs=[j["job_id"] for j in jobs if j["job_id"] != scope.job_id],
    )
    data.heatmaps = _heatmaps(spark, scope, vertices)
    data.incidents = _incidents(spark, scope)
    _watermarks(spark, scope, data)
    data.views = _views(spark, scope, SAMPLED in tables)
    return data


@dataclass(frozen=True)
class _Scope:
    job_id: str
    from_ms: int
    to_ms: int

    def where(self, time_column: str, alias: str = "") -> str:
        prefix = f"{alias}." if alias else ""
        return (
            f"{prefix}job_id = {_quote(self.job_id)}"
            f" and {prefix}{time_column} >= {self.from_ms} and {prefix}{time_column} < {self.to_ms}"
        )


def _vertices(spark, scope: _Scope) -> list[Vertex]:
    """U1 over the range: per vertex, the max over subtasks of each subtask's mean; NULL busy
    (M5) propagates like Flink's NaN (U2)."""
    rows = _rows(
        spark,
        f"""
        with per_subtask as (
            select vertex_id, subtask_index,
                avg(backpressured_ms) as backpressured_ms,
                case when count(busy_ms) = count(*) then avg(busy_ms) end as busy_ms
            from {SCHEMA}.fct_subtask_seconds
            where {scope.where("second_start_ms")} and is_complete
            group by vertex_id, subtask_index
        ),
        per_vertex as (
            select vertex_id,
                max(backpressured_ms) as backpressured_ms,
                case when count(busy_ms) = count(*) then max(busy_ms) end as busy_ms
            from per_subtask group by vertex_id
        ),
        peaks as (
            select vertex_id, max(max_backpressured_ms) as peak_backpressured_ms,
                max(max_busy_ms) as peak_busy_ms, max(subtask_count) as subtasks
            from {SCHEMA}.fct_vertex_seconds
            where {scope.where("second_start_ms")}
            group by vertex_id
        )
        select peaks.vertex_id, coalesce(d.vertex_name, peaks.vertex_id) as name,
            coalesce(d.parallelism, peaks.subtasks) as parallelism,
            coalesce(d.upstream_vertex_ids, array()) as upstream,
            per_vertex.busy_ms, per_vertex.backpressured_ms,
            peaks.peak_busy_ms, peaks.peak_backpressured_ms
        from peaks
        left join per_vertex on per_vertex.vertex_id = peaks.vertex_id
        left join {SCHEMA}.dim_vertices d
            on d.job_id = {_quote(scope.job_id)} and d.vertex_id = peaks.vertex_id
        order by size(coalesce(d.upstream_vertex_ids, array())), name, peaks.vertex_id
        """,
    )
    return [
        Vertex(
            vertex_id=r["vertex_id"],
            name=r["name"],
            parallelism=int(r["parallelism"] or 0),
            upstream=tuple(r["upstream"] or ()),
            busy_ms=r["busy_ms"],
            backpressured_ms=r["backpressured_ms"],
            peak_busy_ms=r["peak_busy_ms"],
            peak_backpressured_ms=r["peak_backpressured_ms"],
        )
        for r in rows
    ]


def _heatmaps(spark, scope: _Scope, vertices: list[Vertex]) -> list[Heatmap]:
    width = bucket_ms(scope.from_ms, scope.to_ms, MAX_BUCKETS)
    groups = {v.vertex_id: max(1, math.ceil(v.parallelism / MAX_ROWS)) for v in vertices}
    group_case = " ".join(
        f"when {_quote(vid)} then {size}" for vid, size in groups.items() if size > 1
    )
    group_size = f"case vertex_id {group_case} else 1 end" if group_case else "1"
    means = ", ".join(f"avg({col}) as {name}" for name, col in GAUGES.items())
    maxes = ", ".join(f"max({name}) as {name}" for name in GAUGES)
    rows = _rows(
        spark,
        f"""
        with per_subtask as (
            select vertex_id, subtask_index,
                {scope.from_ms} + floor((second_start_ms - {scope.from_ms}) / {width}) * {width}
                    as bucket_ms,
                {means}
            from {SCHEMA}.fct_subtask_seconds
            where {scope.where("second_start_ms")}
            group by 1, 2, 3
        )
        select vertex_id, cast(floor(subtask_index / {group_size}) as int) as row_index,
            cast(bucket_ms as bigint) as bucket_ms, {maxes}
        from per_subtask group by 1, 2, 3
        """,
    )
    buckets = list(range(scope.from_ms, scope.to_ms, width))
    position = {b: i for i, b in enumerate(buckets)}
    by_vertex = _by_vertex(rows)
    found: list[Heatmap] = []
    for v in vertices:
        size = groups[v.vertex_id]
        mine = by_vertex.get(v.vertex_id, [])
        count = max([r["row_index"] for r in mine], default=-1) + 1
        labels = [
            str(i) if size == 1 else f"{i * size}-{min((i + 1) * size, v.parallelism) - 1}"
            for i in range(count)
        ]
        for gauge in GAUGES:
            grid: list[list[float | None]] = [[None] * len(buckets) for _ in range(count)]
            for r in mine:
                value = r[gauge]
                grid[r["row_index"]][position[r["bucket_ms"]]] = (
                    None if value is None else round(value)
                )
            found.append(Heatmap(v.vertex_id, gauge, buckets, labels, grid))
    return found


def _incidents(spark, scope: _Scope) -> list[Incident]:
    rows = _rows(
        spark,
        f"""
        select i.vertex_id, i.incident_start_ms, i.incident_end_ms,
            i.peak_backpressure_ratio, i.mean_backpressure_ratio,
            b.bottleneck_vertex_id, b.bottleneck_subtask_index, b.confidence,
            b.confidence_note, b.bottleneck_busy_ratio, b.bottleneck_subtask_busy_ratio
        from {SCHEMA}.fct_backpressure_incidents i
        left join {SCHEMA}.fct_bottlenecks b
            on b.job_id = i.job_id and b.backpressured_vertex_id = i.vertex_id
            and b.incident_start_ms = i.incident_start_ms
        where i.job_id = {_quote(scope.job_id)}
            and i.incident_end_ms > {scope.from_ms} and i.incident_start_ms < {scope.to_ms}
        order by i.incident_start_ms, i.vertex_id
        """,
    )

    def evidence(r: dict) -> str:
        parts = []
        if r["bottleneck_busy_ratio"] is not None:
            parts.append(f"bottleneck busy {r['bottleneck_busy_ratio']:.0%} (max over subtasks)")
        if r["bottleneck_subtask_busy_ratio"] is not None:
            parts.append(f"hottest subtask busy {r['bottleneck_subtask_busy_ratio']:.0%}")
        if r["confidence_note"]:
            parts.append(r["confidence_note"])
        return "; ".join(parts)

    return [
        Incident(
            vertex_id=r["vertex_id"],
            start_ms=r["incident_start_ms"],
            end_ms=r["incident_end_ms"],
            peak_ratio=r["peak_backpressure_ratio"],
            mean_ratio=r["mean_backpressure_ratio"],
            bottleneck_vertex_id=r["bottleneck_vertex_id"],
            bottleneck_subtask=r["bottleneck_subtask_index"],
            confidence=r["confidence"] or "none",
            evidence=evidence(r),
        )
        for r in rows
    ]


def _watermarks(spark, scope: _Scope, data: ReportData) -> None:
    width = bucket_ms(scope.from_ms, scope.to_ms, MAX_POINTS)
    rows = _rows(
        spark,
        f"""
        select vertex_id,
            cast({scope.from_ms} + floor((second_start_ms - {scope.from_ms}) / {width}) * {width}
                as bigint) as bucket_ms,
            max(watermark_lag_ms) as lag_ms,
            bool_and(is_idle) as is_idle,
            max(num_stalled_subtasks) > 0 as is_stalled
        from {SCHEMA}.fct_vertex_watermark_seconds
        where {scope.where("second_start_ms")}
        group by 1, 2 order by 1, 2
        """,
    )
    by_vertex = _by_vertex(rows)
    for v in data.vertices:
        mine = by_vertex.get(v.vertex_id, [])
        if not mine:
            continue
        data.watermark_lag.append(
            Series(
                v.vertex_id,
                "watermark lag (s)",
                [r["bucket_ms"] for r in mine],
                [None if r["lag_ms"] is None else r["lag_ms"] / 1000 for r in mine],
            )
        )
        data.idle_stretches[v.vertex_id] = stretches(
            ((r["bucket_ms"], bool(r["is_idle"])) for r in mine), width
        )
        data.stalled_stretches[v.vertex_id] = stretches(
            ((r["bucket_ms"], bool(r["is_stalled"])) for r in mine), width
        )


def _views(spark, scope: _Scope, with_sampled: bool) -> list[Series]:
    """Per vertex: the exact per-second max over subtasks of back pressure, Flink's own gauge
    (what its 1.13+ UI showed at each round: the max over subtasks of the window average), and,
    where the mart is built, Flink 1.12's sampled ratio. All as ratios (ms / 1000)."""
    width = bucket_ms(scope.from_ms, scope.to_ms, MAX_POINTS)
    bucket = (
        f"cast({scope.from_ms} + floor(({{t}} - {scope.from_ms}) / {width}) * {width} as bigint)"
    )
    queries = {
        EXACT: f"""
            select vertex_id, {bucket.format(t="second_start_ms")} as at_ms,
                max(max_backpressured_ms) / 1000 as ratio
            from {SCHEMA}.fct_vertex_seconds where {scope.where("second_start_ms")}
            group by 1, 2""",
        GAUGE_VIEW: f"""
            select vertex_id, at_ms, max(ratio) as ratio from (
                select vertex_id, {bucket.format(t="update_ms")} as at_ms,
                    max(back_pressured_time_ms_per_second) / 1000 as ratio
                from {SCHEMA}.fct_subtask_flink_gauges where {scope.where("update_ms")}
                group by vertex_id, update_ms
            ) group by 1, 2""",
    }
    if with_sampled:
        queries[SAMPLED_VIEW] = f"""
            select vertex_id, sampling_start_ms as at_ms, backpressure_ratio as ratio
            from {SCHEMA}.{SAMPLED} where {scope.where("sampling_start_ms")}"""
    found = []
    for name, query in queries.items():
        for vertex_id, mine in _by_vertex(_rows(spark, query + " order by 1, 2")).items():
            found.append(
                Series(
                    vertex_id,
                    name,
                    [r["at_ms"] for r in mine],
                    [None if r["ratio"] is None else float(r["ratio"]) for r in mine],
                )
            )
    return found
