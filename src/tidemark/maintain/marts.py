"""The marts and the incremental state kept bounded: their partitions past the retention dropped
(issue 44; docs/decisions/0019-retention.md).

Through SQL only (`CALL tidemark_system.marts.expire`, one catalog call a table), so the same
statements run on the process's own Spark session or through a running Thrift server. A mart's
partitions need no compaction: each build publishes one file per partition
(macros/tidemark_publish.sql). The analysis, conformance and dimension marts are rebuilt from
these every build, so they follow them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from tidemark.maintain.retention import Cutoffs

# Per task (the largest) and per vertex (kept longer: the incidents are built from them).
TASK_MARTS = (
    "fct_subtask_seconds",
    "fct_subtask_flink_gauges",
    "fct_valve_emissions",
    "fct_task_watermarks",
    "fct_watermark_seconds",
)
VERTEX_MARTS = (
    "fct_vertex_seconds",
    "fct_vertex_watermark_seconds",
    "fct_vertex_sampled_backpressure",
)
# The incremental models' own state, per task and second: what a run resumes from lies within
# the replay lookback of the newest events, so it keeps what bronze keeps.
STATE = ("int_timer_seconds_checkpointed", "int_backpressure_samples_counted")

Sql = Callable[[str], list[tuple]]


@dataclass
class MartsReport:
    expired: dict[str, int] = field(default_factory=dict)  # table -> partitions before, after

    def describe(self) -> str:
        dropped = sum(self.expired.values())
        return f"marts: {dropped} partitions past the retention dropped"


def hour_value(ms: int) -> str:
    """The text of an `hour_at` partition value at epoch ms (Spark writes them in UTC)."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def plan(cutoffs: Cutoffs, schema: str = "tidemark") -> list[tuple[str, int]]:
    """Each table with the epoch ms its partitions are kept from."""
    return [
        *((f"{schema}.{name}", cutoffs.task_marts_ms) for name in TASK_MARTS),
        *((f"{schema}.{name}", cutoffs.vertex_marts_ms) for name in VERTEX_MARTS),
        *((f"{schema}_intermediate.{name}", cutoffs.bronze_ms) for name in STATE),
    ]


def expire_marts(sql: Sql, cutoffs: Cutoffs, keep_ms: int, schema: str = "tidemark") -> MartsReport:
    """Drop every partition of the marts and state tables before their cutoffs."""
    report = MartsReport()
    present = {
        f"{database}.{name}"
        for database in (schema, f"{schema}_intermediate")
        for name in tables_in(sql, database)
    }
    for table, keep_from in plan(cutoffs, schema):
        if table not in present:
            continue
        before = _partitions(sql, table)
        sql(
            f"call tidemark_system.marts.expire('{table}', 'hour_at', "
            f"'{hour_value(keep_from)}', {keep_ms})"
        )
        report.expired[table] = before - _partitions(sql, table)
    return report


def tables_in(sql: Sql, database: str) -> list[str]:
    """The names of the tables of ``database``, none when it does not exist."""
    if not sql(f"show databases like '{database}'"):
        return []
    return [row[1] for row in sql(f"show tables in {database}")]


def _partitions(sql: Sql, table: str) -> int:
    return len(sql(f"show partitions {table}"))
