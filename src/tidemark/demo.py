"""What ``make demo`` prints after ``dbt build``: the lake's tables and a few rows of each mart."""

from __future__ import annotations

import sys
from pathlib import Path

from tidemark.lake import Lake
from tidemark.spark.session import spark_session
from tidemark.sql import run_sql

# Names as Flink shows them: every showcase joins dim_vertices (ids only where a vertex has none).
_NAME = "coalesce({alias}.vertex_name, {column})"
_NAMES = (
    "left join tidemark.dim_vertices {alias}"
    " on {alias}.job_id = {table}.job_id and {alias}.vertex_id = {column}"
)

# Marts shown first when they exist, with the query that makes each one tell its story.
SHOWCASE = {
    "fct_vertex_seconds": (
        "select from_unixtime(s.second_start_ms div 1000) as second_utc, "
        f"{_NAME.format(alias='d', column='s.vertex_id')} as vertex, s.backpressure_level, "
        "s.max_backpressured_ms, s.max_busy_ms from tidemark.fct_vertex_seconds s "
        f"{_NAMES.format(alias='d', table='s', column='s.vertex_id')} "
        "where s.backpressure_level = 'high' order by s.second_start_ms, vertex limit 8"
    ),
    "fct_bottlenecks": (
        f"select {_NAME.format(alias='p', column='b.backpressured_vertex_id')} as backpressured, "
        f"{_NAME.format(alias='n', column='b.bottleneck_vertex_id')} as bottleneck, "
        "b.bottleneck_subtask_index as subtask, "
        "from_unixtime(i.incident_start_ms div 1000) as incident_start_utc, i.duration_s, "
        "i.peak_backpressure_ratio, b.confidence "
        "from tidemark.fct_bottlenecks b join tidemark.fct_backpressure_incidents i "
        "on b.job_id = i.job_id and b.backpressured_vertex_id = i.vertex_id "
        "and b.incident_start_ms = i.incident_start_ms "
        f"{_NAMES.format(alias='p', table='b', column='b.backpressured_vertex_id')} "
        f"{_NAMES.format(alias='n', table='b', column='b.bottleneck_vertex_id')} "
        "order by i.incident_start_ms limit 8"
    ),
    "fct_watermark_seconds": (
        f"select {_NAME.format(alias='d', column='w.vertex_id')} as vertex, w.subtask_index, "
        "max(w.watermark_lag_ms) as max_lag_ms, round(avg(w.watermark_lag_ms)) as avg_lag_ms, "
        "sum(cast(w.is_stalled as int)) as stalled_s from tidemark.fct_watermark_seconds w "
        f"{_NAMES.format(alias='d', table='w', column='w.vertex_id')} "
        "group by all order by vertex, w.subtask_index"
    ),
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    report = Path(args[args.index("--report") + 1]) if "--report" in args else None
    lake = Lake.from_env()
    spark = spark_session(lake)
    print(f"\nlake: {lake.root}\n\nbronze tables (Delta, current snapshot):")
    run_sql(
        spark,
        " union all ".join(
            f"select '{name}' as bronze_table, count(*) as row_count from bronze.{name}"
            for name in ("timer_events", "watermark_events", "vertices", "quarantine")
        ),
    )
    marts = []
    if spark.catalog.databaseExists("tidemark"):
        marts = sorted(r.tableName for r in spark.sql("show tables in tidemark").collect())
    print(f"\nmarts in schema tidemark: {', '.join(marts) or '(none yet)'}")
    for name, query in SHOWCASE.items():
        if name in marts:
            print(f"\n{name}:")
            run_sql(spark, query)
    if report is not None and "dim_vertices" in marts:
        from tidemark.report import Window, write_report

        written = write_report(spark, report, Window())
        print(f"\nthe report of the latest job: {written.resolve()}")
        print("open it in a browser; `tidemark report --help` draws any job and time range")
    return 0


if __name__ == "__main__":
    sys.exit(main())
