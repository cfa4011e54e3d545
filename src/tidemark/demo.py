"""What ``make demo`` prints after ``dbt build``: the lake's tables and a few rows of each mart."""

from __future__ import annotations

import sys

from tidemark.lake import Lake
from tidemark.spark.session import spark_session
from tidemark.sql import run_sql

# Marts shown first when they exist, with the query that makes each one tell its story.
SHOWCASE = {
    "fct_vertex_seconds": (
        "select job_id, vertex_id, second_start_ms, backpressure_level, "
        "max_backpressured_ms, max_busy_ms from tidemark.fct_vertex_seconds "
        "where backpressure_level = 'high' order by second_start_ms, vertex_id limit 8"
    ),
    "fct_bottlenecks": (
        "select b.backpressured_vertex_id, b.bottleneck_vertex_id, b.bottleneck_subtask_index, "
        "i.incident_start_ms, i.duration_s, i.peak_backpressure_ratio, b.confidence "
        "from tidemark.fct_bottlenecks b join tidemark.fct_backpressure_incidents i "
        "on b.job_id = i.job_id and b.backpressured_vertex_id = i.vertex_id "
        "and b.incident_start_ms = i.incident_start_ms order by i.incident_start_ms limit 8"
    ),
    "fct_watermark_seconds": (
        "select vertex_id, subtask_index, max(watermark_lag_ms) as max_lag_ms, "
        "avg(watermark_lag_ms) as avg_lag_ms, sum(cast(is_stalled as int)) as stalled_s "
        "from tidemark.fct_watermark_seconds group by all order by vertex_id, subtask_index"
    ),
}


def main() -> int:
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
