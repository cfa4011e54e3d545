"""The semantic layer's metrics as Spark metric views (decision 0016), on the shared demo lake.

First the generator (``tidemark_metric_view_yaml``, ``tidemark_metric_sql``) on a semantic model
of its own with a metric of every kind it translates, compiled by dbt in the lake's warm worker
and created as a real metric view; then the three views the demo lake's `dbt build` made, read
through one `tidemark serve` with PyHive and beeline and held to plain SQL over the marts.

The server (``demo_server``, tests/e2e/conftest.py) needs the lake's metastore, which Derby
gives to one process: it stops the warm worker, so this file runs last but one in the demo group
(tests/conftest.py; test_serve then stops the server) and its warm-worker tests come before its
server tests.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import DemoLake
from tests.e2e.harness import Server

pytestmark = pytest.mark.e2e

# --- the generator, on a semantic model of its own ------------------------------------------

KINDS_SCHEMA = "tidemark_test_metric_kinds"
# (k, g, x, flag, d, ms): group a has a NULL x; group b one row; no label row for group b.
KINDS_ROWS = [
    (1, "a", 1.0, True, "p", 0),
    (2, "a", 2.0, False, "p", 61_000),
    (3, "a", None, True, "q", 3_600_000),
    (4, "a", 4.0, True, "r", 3_601_000),
    (5, "b", 10.0, False, "p", 0),
]


def _measure(name: str, agg: str, expr: str | None = None, **agg_params: object) -> dict:
    return {
        "name": name,
        "agg": agg,
        "expr": expr,
        "agg_params": agg_params or None,
        "non_additive_dimension": None,
        "description": None,
    }


def _input(name: str, alias: str | None = None) -> dict:
    return {"name": name, "filter": None, "alias": alias, "offset_window": None,
            "offset_to_grain": None}  # fmt: skip


def _metric(name: str, kind: str, measures: list[str], **params: object) -> dict:
    type_params = {
        "measure": None,
        "input_measures": [{"name": m} for m in measures],
        "numerator": None,
        "denominator": None,
        "expr": None,
        "metrics": [],
        "metric_aggregation_params": None,
        **params,
    }
    return {"name": name, "type": kind, "label": None, "description": None, "filter": None,
            "type_params": type_params}  # fmt: skip


def _simple(name: str, measure: str) -> dict:
    reference = {"name": measure, "filter": None, "alias": None, "join_to_timespine": False,
                 "fill_nulls_with": None}  # fmt: skip
    return _metric(name, "simple", [measure], measure=reference)


SIMPLE_AGGS = {  # metric: (agg, expr, agg_params)
    "x_sum": ("sum", "x", {}),
    "x_min": ("min", "x", {}),
    "x_max": ("max", "x", {}),
    "x_average": ("average", "x", {}),
    "x_count": ("count", "x", {}),
    "rows": ("count", "1", {}),
    "d_count_distinct": ("count_distinct", "d", {}),
    "flag_sum_boolean": ("sum_boolean", "flag", {}),
    "x_median": ("median", "x", {}),
    "x_p90": ("percentile", "x", {"percentile": 0.9}),
    "x_p90_approx": ("percentile", "x", {"percentile": 0.9, "use_discrete_percentile": True,
                                         "use_approximate_percentile": True}),
    "x_over_100": ("sum", "case when x > 100 then 1 else 0 end", {}),
}  # fmt: skip


def _kinds_layer(extra_metrics: list[dict] = ()) -> tuple[list[dict], list[dict]]:
    """A semantic model over the kinds table with a metric of every kind, and one it joins."""
    kinds = {
        "name": "kinds",
        "original_file_path": "tests/e2e/test_metric_views.py",
        "node_relation": {"alias": "kinds"},
        "defaults": {"agg_time_dimension": "event_at"},
        "entities": [
            {"name": "kind_row", "type": "primary", "expr": "k"},
            {"name": "grp", "type": "foreign", "expr": "g"},
        ],
        "dimensions": [
            {"name": "g", "type": "categorical", "expr": None, "description": "the group"},
            {"name": "event_at", "type": "time", "expr": "timestamp_millis(ms)",
             "type_params": {"time_granularity": "second"}, "description": None},
        ],
        "measures": [
            _measure(f"m_{name}", agg, expr, **params)
            for name, (agg, expr, params) in SIMPLE_AGGS.items()
        ],
    }  # fmt: skip
    labels = {
        "name": "kind_labels",
        "node_relation": {"alias": "kind_labels"},
        "defaults": None,
        "entities": [{"name": "grp", "type": "primary", "expr": "g"}],
        "dimensions": [{"name": "label", "type": "categorical", "expr": "upper(label)",
                        "description": None}],
        "measures": [],
    }  # fmt: skip
    metrics = [_simple(name, f"m_{name}") for name in SIMPLE_AGGS]
    metrics += [
        _metric("x_mean_ratio", "ratio", ["m_x_sum", "m_x_count"],
                numerator=_input("x_sum"), denominator=_input("x_count")),
        _metric("x_over_zero", "ratio", ["m_x_sum", "m_x_over_100"],
                numerator=_input("x_sum"), denominator=_input("x_over_100")),
        _metric("x_spread", "derived", ["m_x_max", "m_x_min"], expr="top - x_min * 2",
                metrics=[_input("x_max", alias="top"), _input("x_min")]),
        _metric("x_mean_plus_one", "derived", ["m_x_sum", "m_x_count"],
                expr="x_mean_ratio + 1", metrics=[_input("x_mean_ratio")]),
        *extra_metrics,
    ]  # fmt: skip
    return [kinds, labels], metrics


def _jinja_string(value: object) -> str:
    text = json.dumps(value)
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _generate(demo_lake: DemoLake, semantic_models: list[dict], metrics: list[dict]):
    """dbt compiles a call of the generator, in the warm worker: (dbt's result, the YAML)."""
    call = (
        "{{ tidemark_metric_view_yaml('kinds', ["
        f"api.Relation.create(schema='{KINDS_SCHEMA}', identifier='kinds'), "
        f"api.Relation.create(schema='{KINDS_SCHEMA}', identifier='kind_labels')], "
        f"fromjson({_jinja_string(semantic_models)}), fromjson({_jinja_string(metrics)})) }}}}"
    )
    result = demo_lake.warm.dbt("compile", "--inline", call, "--output", "json")
    start = result.stdout.find('{\n  "compiled"')
    compiled = json.loads(result.stdout[start:])["compiled"] if start >= 0 else None
    return result, compiled


def _expected_kinds() -> dict[str, dict[str, float | int | None]]:
    """Each metric per group, computed here from KINDS_ROWS."""
    out = {}
    for group in ("a", "b"):
        rows = [row for row in KINDS_ROWS if row[1] == group]
        xs = sorted(row[2] for row in rows if row[2] is not None)

        def cont(p: float, xs: list[float] = xs) -> float:  # PERCENTILE_CONT
            at = p * (len(xs) - 1)
            low = math.floor(at)
            return xs[low] + (at - low) * (xs[min(low + 1, len(xs) - 1)] - xs[low])

        out[group] = {
            "x_sum": sum(xs), "x_min": xs[0], "x_max": xs[-1], "x_average": sum(xs) / len(xs),
            "x_count": len(xs), "rows": len(rows), "d_count_distinct": len({r[4] for r in rows}),
            "flag_sum_boolean": sum(1 for r in rows if r[3]), "x_median": cont(0.5),
            "x_p90": cont(0.9), "x_p90_approx": xs[math.ceil(0.9 * len(xs)) - 1],
            "x_over_100": 0, "x_mean_ratio": sum(xs) / len(xs), "x_over_zero": None,
            "x_spread": xs[-1] - xs[0] * 2, "x_mean_plus_one": sum(xs) / len(xs) + 1,
        }  # fmt: skip
    return out


def test_generator_translates_every_metric_kind(demo_lake: DemoLake) -> None:
    """Simple metrics over each agg, ratios (one with a zero denominator: NULL, as MetricFlow's
    NULLIF gives), derived metrics (an alias, a ratio input), a joined dimension (NULL without a
    match) and the time grains: the generated YAML is created as a real metric view and every
    measure equals the figure computed here."""
    semantic_models, metrics = _kinds_layer()
    result, body = _generate(demo_lake, semantic_models, metrics)
    assert result.returncode == 0 and body, result.stdout + result.stderr
    warm = demo_lake.warm
    values = ", ".join(
        "(" + ", ".join("null" if v is None else repr(v).lower() if isinstance(v, bool)
                        else f"'{v}'" if isinstance(v, str) else str(v) for v in row) + ")"
        for row in KINDS_ROWS
    )  # fmt: skip
    warm.sql_rows(f"create schema if not exists {KINDS_SCHEMA}")
    try:
        warm.sql_rows(
            f"create table {KINDS_SCHEMA}.kinds using parquet as select k, g, "
            f"cast(x as double) as x, flag, d, cast(ms as bigint) as ms from values {values} "
            "as t(k, g, x, flag, d, ms)"
        )
        warm.sql_rows(
            f"create table {KINDS_SCHEMA}.kind_labels using parquet as "
            "select * from values ('a', 'first') as t(g, label)"
        )
        warm.sql_rows(
            f"create view {KINDS_SCHEMA}.mv_kinds with metrics language yaml as $$\n{body}\n$$"
        )
        names = [*SIMPLE_AGGS, "x_mean_ratio", "x_over_zero", "x_spread", "x_mean_plus_one"]
        measures = ", ".join(f"measure({name}) as {name}" for name in names)
        rows = warm.sql_rows(
            f"select g, label, {measures} from {KINDS_SCHEMA}.mv_kinds group by g, label order by g"
        )
        grains = warm.sql_rows(
            f"select g, minute_at, hour_at, measure(rows) as n from {KINDS_SCHEMA}.mv_kinds "
            "group by g, minute_at, hour_at order by g, minute_at"
        )
    finally:
        warm.sql_rows(f"drop schema {KINDS_SCHEMA} cascade")
    assert [(row["g"], row["label"]) for row in rows] == [("a", "FIRST"), ("b", None)]
    expected = _expected_kinds()
    for row in rows:
        got = {name: row[name] for name in names}
        want = expected[row["g"]]
        for name in names:
            if want[name] is None or isinstance(want[name], int):
                assert got[name] == want[name], (row["g"], name, got[name], want[name])
            else:
                assert math.isclose(got[name], want[name], abs_tol=1e-9), (row["g"], name, got)
    assert [(r["g"], r["minute_at"], r["hour_at"], r["n"]) for r in grains] == [
        ("a", "1970-01-01T00:00:00", "1970-01-01T00:00:00", 1),
        ("a", "1970-01-01T00:01:00", "1970-01-01T00:00:00", 1),
        ("a", "1970-01-01T01:00:00", "1970-01-01T01:00:00", 2),
        ("b", "1970-01-01T00:00:00", "1970-01-01T00:00:00", 1),
    ]


CANNOT = {
    "cumulative": (
        _metric("running", "cumulative", ["m_x_sum"], measure={"name": "m_x_sum"}),
        "metric 'running' (cumulative) cannot be a Spark metric view measure",
    ),
    "filtered": (
        {**_simple("x_sum_of_a", "m_x_sum"), "filter": {"where_filters": [{"where_sql_template":
            "{{ Dimension('kind_row__g') }} = 'a'"}]}},
        "metric 'x_sum_of_a' (simple) cannot be a Spark metric view measure: it has a filter",
    ),
    "offset": (
        _metric("x_sum_yesterday", "derived", ["m_x_sum"], expr="x_sum",
                metrics=[{**_input("x_sum"), "offset_window": {"count": 1, "granularity": "day"}}]),
        "its input 'x_sum' has a filter or an offset",
    ),
    "exact discrete percentile": (
        _simple("x_p90_discrete", "m_x_p90_discrete"),
        "asks for an exact discrete or an approximate continuous percentile",
    ),
}  # fmt: skip


@pytest.mark.parametrize("kind", CANNOT)
def test_a_metric_the_views_cannot_express_fails_with_its_reason(
    demo_lake: DemoLake, kind: str
) -> None:
    metric, reason = CANNOT[kind]
    semantic_models, metrics = _kinds_layer([metric])
    semantic_models[0]["measures"].append(
        _measure("m_x_p90_discrete", "percentile", "x", percentile=0.9,
                 use_discrete_percentile=True)
    )  # fmt: skip
    result, body = _generate(demo_lake, semantic_models, metrics)
    assert result.returncode != 0, body  # 2: dbt stops compiling the inline node
    assert reason in result.stdout, result.stdout


def test_a_dry_run_makes_the_views_over_the_marts(demo_lake: DemoLake) -> None:
    """`dbt run --empty` (dbt's dry run) makes the metric views too: under it a ref() is an
    empty subquery, and a view reads the marts themselves, which creating it does not read. The
    views it makes stay the build's, which the tests below read through the server."""
    args = ("run", "--empty", "--select", *VIEWS)
    result = demo_lake.warm.dbt(*args)
    assert result.returncode == 0, result.stdout[-3000:]
    metrics = (
        demo_lake.warm.target(*args) / "compiled" / "tidemark" / "models" / "marts" / "metrics"
    )
    for view, spec in VIEWS.items():
        sql = (metrics / f"{view}.sql").read_text()
        assert f"from tidemark.{spec['mart']} as base" in sql, sql
        assert "_dbt_limit_subq" not in sql, sql


# --- the demo lake's views through the Thrift endpoint --------------------------------------

VIEWS = {
    "mv_subtask_seconds": {
        "mart": "fct_subtask_seconds",
        "ms": "second_start_ms",
        "measures": {
            "busy_ms": "sum(f.busy_ms)",
            "idle_ms": "sum(f.idle_ms)",
            "backpressured_ms": "sum(f.backpressured_ms)",
            "measured_ms": "1000 * count(*)",
            "busy_measured_ms": "1000 * count(f.busy_ms)",
            "busy_ratio": "sum(f.busy_ms) / (1000 * count(f.busy_ms))",
            "idle_ratio": "sum(f.idle_ms) / (1000 * count(*))",
            "backpressure_ratio": "sum(f.backpressured_ms) / (1000 * count(*))",
        },
        "finest": ("vertex_id", "subtask_index", "hour_at"),
    },
    "mv_watermark_seconds": {
        "mart": "fct_watermark_seconds",
        "ms": "second_start_ms",
        "measures": {
            "watermark_lag_ms": "avg(f.watermark_lag_ms)",
            "watermark_lag_ms_max": "max(f.watermark_lag_ms)",
        },
        "finest": ("vertex_id", "subtask_index", "hour_at"),
    },
    "mv_backpressure_incidents": {
        "mart": "fct_backpressure_incidents",
        "ms": "incident_start_ms",
        "measures": {
            "incident_count": "count(*)",
            "incident_duration_s": "sum(f.duration_s)",
            "incident_duration_s_max": "max(f.duration_s)",
            "mean_incident_duration_s": "sum(f.duration_s) / count(*)",
        },
        "finest": ("vertex_id", "hour_at"),
    },
}


def _plain(view: str, dimension: str) -> str:
    """A dimension of `view` in plain SQL over its mart `f` and dim_vertices `v`."""
    ms = f"f.{VIEWS[view]['ms']}"
    return {
        "vertex_name": "v.vertex_name",
        "minute_at": f"timestamp_millis({ms} - {ms} % 60000)",
        "hour_at": f"timestamp_millis({ms} - {ms} % 3600000)",
    }.get(dimension, f"f.{dimension}")


@pytest.fixture
def server(demo_server: Server) -> int:
    return demo_server.port


def _query(port: int, sql: str) -> tuple[list[str], list[tuple]]:
    from pyhive import hive

    connection = hive.connect(host="127.0.0.1", port=port, username="tester")
    try:
        cursor = connection.cursor()
        cursor.execute(sql)
        rows = cursor.fetchall()
        return [column[0].split(".")[-1] for column in cursor.description], rows
    finally:
        connection.close()


def test_every_metric_is_a_measure_of_its_view(server: int, demo_lake: DemoLake) -> None:
    """DESCRIBE lists each view's columns with their comments: the measures are every metric of
    the semantic layer (from the build's manifest), each in the view of its semantic model, and
    each view has the dimensions contract §7 names."""
    manifest = json.loads(
        (demo_lake.lake.root.parent / ".dbt" / "target" / "manifest.json").read_text()
    )
    metric_names = {metric["name"] for metric in manifest["metrics"].values()}
    found: dict[str, set[str]] = {}
    for view, spec in VIEWS.items():
        _, rows = _query(server, f"describe table tidemark.{view}")
        kinds = {name: (comment or "").split(":")[0] for name, _, comment in rows}
        found[view] = {name for name, kind in kinds.items() if kind == "measure"}
        assert found[view] == set(spec["measures"]), view
        dimensions = {name for name, kind in kinds.items() if kind == "dimension"}
        assert {"job_id", "vertex_id", "vertex_name", "second_at", "minute_at", "hour_at"} <= (
            dimensions
        ), view
        assert ("subtask_index" in dimensions) == ("subtask_index" in spec["finest"]), view
    assert set().union(*found.values()) == metric_names


def _compare(view_rows: list[tuple], plain_rows: list[tuple], keys: int, where: str) -> None:
    got = {row[:keys]: row[keys:] for row in view_rows}
    want = {row[:keys]: row[keys:] for row in plain_rows}
    assert len(got) == len(view_rows) and got.keys() == want.keys(), where
    for key, values in want.items():
        for value, expected in zip(got[key], values, strict=True):
            if isinstance(expected, float):
                assert isinstance(value, float) and math.isclose(
                    value, expected, rel_tol=1e-12, abs_tol=1e-9
                ), (where, key, value, expected)
            else:
                assert value == expected and type(value) is type(expected), (where, key, value)


@pytest.mark.parametrize("view", VIEWS)
def test_measures_equal_plain_sql_over_the_marts(server: int, view: str) -> None:
    """Every measure of the view through the Thrift endpoint (PyHive) equals the same figure
    from the marts in plain SQL, by vertex name, by job and minute, and at the view's finest
    grouping: integers exactly, ratios and means within 1e-9."""
    spec = VIEWS[view]
    measures = list(spec["measures"])
    for grouping in (("vertex_name",), ("job_id", "minute_at"), spec["finest"]):
        dims = ", ".join(grouping)
        _, view_rows = _query(
            server,
            f"select {dims}, {', '.join(f'measure({m})' for m in measures)} "
            f"from tidemark.{view} group by {dims}",
        )
        plain_dims = ", ".join(_plain(view, d) for d in grouping)
        _, plain_rows = _query(
            server,
            f"select {plain_dims}, {', '.join(spec['measures'][m] for m in measures)} "
            f"from tidemark.{spec['mart']} as f left join tidemark.dim_vertices as v "
            f"on f.job_id = v.job_id and f.vertex_id = v.vertex_id group by {plain_dims}",
        )
        assert view_rows, (view, grouping)
        _compare(view_rows, plain_rows, len(grouping), f"{view} by {dims}")


def _beeline() -> Path:
    import pyspark

    return Path(os.path.dirname(pyspark.__file__)) / "bin" / "beeline"


def test_beeline_reads_the_views(server: int) -> None:
    """Spark's JDBC client (beeline, PySpark's bin/) reads each view's measures by vertex name:
    the same rows as PyHive."""
    queries = {
        view: f"select vertex_name, {', '.join(f'measure({m})' for m in spec['measures'])} "
        f"from tidemark.{view} group by vertex_name order by vertex_name"
        for view, spec in VIEWS.items()
    }
    done = subprocess.run(
        [str(_beeline()), "-u", f"jdbc:hive2://127.0.0.1:{server}/tidemark", "-n", "me",
         "--outputformat=csv2", "--showHeader=true", "--silent=true",
         "-e", ";\n".join(queries.values()) + ";"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    tables = [block for block in done.stdout.split("vertex_name,")[1:]]
    assert len(tables) == len(queries), done.stdout
    for (view, sql), table in zip(queries.items(), tables, strict=True):
        rows = list(csv.reader(io.StringIO("vertex_name," + table)))[1:]
        rows = [row for row in rows if row]
        _, expected = _query(server, sql)
        assert len(rows) == len(expected), view
        for row, want in zip(rows, expected, strict=True):
            assert (None if row[0] in ("", "NULL") else row[0]) == want[0], view
            for text, value in zip(row[1:], want[1:], strict=True):
                assert (text in ("", "NULL") and value is None) or math.isclose(
                    float(text), value, rel_tol=1e-12, abs_tol=1e-9
                ), (view, row, want)
