"""The incremental state follows the marts' retention (issue 64; docs/decisions/0019-retention.md).

A run resumes each task from the checkpoints of `models/intermediate/state/`, and the plan of the
gauge models lists every task they hold. The ones partitioned by second
(`int_timer_seconds_checkpointed`, `int_backpressure_samples_counted`) go with bronze's days
(:mod:`.marts`); the two keyed by task go task by task here: once the task marts hold none of a
task's rows (its last `ts_ms` is before their cutoff), its summary (`int_timer_tasks_checkpointed`)
and its valve states (`int_valve_states_checkpointed`) go too, so that the plan, the marts and the
data tests that compare them agree, and the state holds what the retention holds, not every task
ever seen.

First of all, `maintain` records its cutoffs in `tidemark_intermediate.retention_cutoffs` (the
latest of each ever applied: what was expired stays expired), which the gauge plan carries to
the data tests (`task_marts_cutoff_ms`): they compare the marts with the plan from there on, so a
task that ran across the cutoff is whole from it, and a maintenance that stopped half-way still
leaves every test passing.

Through SQL only, as :mod:`.marts`, so that it runs on the process's own Spark session or
through a Thrift server. Both tables are partitioned by `job_id`: a job with an expired task is
rewritten with the tasks it keeps, written to new folders and published as the builds publish
them (decision 0015: the job's partition re-pointed in one metastore step, so that a kill leaves
it as it was, decision 0023), a job whose every task expired is dropped.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from tidemark.maintain.marts import Sql, tables_in
from tidemark.maintain.retention import Cutoffs

RECORD = "retention_cutoffs"
RECORD_COLUMNS = (
    ("bronze_cutoff_ms", "bronze_ms"),
    ("task_marts_cutoff_ms", "task_marts_ms"),
    ("vertex_marts_cutoff_ms", "vertex_marts_ms"),
)
# The checkpoints keyed by task, and the column holding the task's time in each row: the task's
# last ts_ms is the largest of them.
BY_TASK = (
    ("int_timer_tasks_checkpointed", "horizon_ms"),
    ("int_valve_states_checkpointed", "effective_ms"),
)
TASK = ("job_id", "vertex_id", "subtask_index", "attempt")


@dataclass
class StateReport:
    expired: dict[str, int] = field(default_factory=dict)  # table -> tasks dropped

    def describe(self) -> str:
        counts = [f"{n} from {table.rsplit('.', 1)[-1]}" for table, n in self.expired.items()]
        return f"state: tasks past the task marts' retention dropped: {', '.join(counts) or 'none'}"


def record_cutoffs(sql: Sql, cutoffs: Cutoffs, newest_ms: int, schema: str = "tidemark") -> None:
    """Write the cutoffs to the record, each the latest of this one and the one recorded."""
    table = f"{schema}_intermediate.{RECORD}"
    if not sql(f"show databases like '{schema}_intermediate'"):  # no build ran yet
        sql(f"create database {schema}_intermediate")
    columns = ", ".join(f"{name} bigint" for name, _ in RECORD_COLUMNS)
    sql(
        f"create table if not exists {table} ({columns}, newest_event_ms bigint, "
        "maintained_at timestamp) using parquet"
    )
    [recorded] = sql(f"select {', '.join(f'max({n})' for n, _ in RECORD_COLUMNS)} from {table}")
    values = [
        max(getattr(cutoffs, attribute), before or 0)
        for (_, attribute), before in zip(RECORD_COLUMNS, recorded, strict=True)
    ]
    # The values are literals: an overwrite may not read the table it writes (not partitioned).
    sql(
        f"insert overwrite table {table} select {', '.join(map(str, values))}, {newest_ms}, "
        "current_timestamp()"
    )


def expire_state(sql: Sql, cutoffs: Cutoffs, keep_ms: int, schema: str = "tidemark") -> StateReport:
    """Drop the tasks whose last ts_ms is before the task marts' cutoff from the checkpoints
    keyed by task; the files a rewritten job replaced stay on disk ``keep_ms``."""
    report = StateReport()
    database = f"{schema}_intermediate"
    present = set(tables_in(sql, database))
    for name, time_column in BY_TASK:
        table = f"{database}.{name}"
        if name not in present or "job_id" not in _partition_columns(sql, table):
            continue  # not built yet, or built by a release before (the next build partitions it)
        report.expired[table] = _expire_tasks(
            sql, table, time_column, cutoffs.task_marts_ms, keep_ms
        )
    return report


def _expire_tasks(sql: Sql, table: str, time_column: str, cutoff_ms: int, keep_ms: int) -> int:
    task = ", ".join(TASK)
    tasks = (
        f"select {task}, max({time_column}) >= {cutoff_ms} as is_kept from {table} group by {task}"
    )
    jobs = sql(
        f"select job_id, count_if(is_kept), count_if(not is_kept) from ({tasks}) "
        "group by job_id having count_if(not is_kept) > 0"
    )
    if not jobs:
        return 0
    if any(kept for _, kept, _ in jobs):
        # The jobs with tasks to keep, rewritten with them: every partition written has rows,
        # and only those are replaced.
        joined = " and ".join(f"state.{c} <=> kept.{c}" for c in TASK)
        _publish_partitions(
            sql,
            table,
            f"select state.* from {table} as state "
            f"left semi join ({tasks}) as kept on {joined} and kept.is_kept "
            f"where state.job_id in ({', '.join(_literal(job) for job, kept, _ in jobs if kept)})",
            keep_ms,
        )
    gone = [job for job, kept, _ in jobs if not kept]
    if gone:
        specs = ", ".join(f"partition (job_id = {_literal(job)})" for job in gone)
        sql(f"alter table {table} drop if exists {specs}")
    return sum(expired for _, _, expired in jobs)


def _publish_partitions(sql: Sql, table: str, select: str, keep_ms: int) -> None:
    """The partitions (by `job_id`) of ``select``'s rows replace ``table``'s, as
    macros/tidemark_publish.sql replaces a build's: written to a stage table in
    `<schema>_publishing` whose folder lies below the table's own, then published by
    `CALL tidemark_system.marts.publish` in one metastore step. Nothing is deleted in place:
    Spark's dynamic partition overwrite deletes a partition's folder before it moves the new one
    in, and a kill between the two lost the partition."""
    database, name = table.split(".")
    stage = f"{database}_publishing.{name}"
    described = dict(row[:2] for row in sql(f"describe database extended {database}"))
    home = f"{described['Location'].rstrip('/')}/{name}"
    version = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f") + "-maintain"
    if not sql(f"show databases like '{database}_publishing'"):
        sql(f"create database {database}_publishing")
    sql(f"call tidemark_system.marts.discard('{table}', '{stage}')")
    sql(
        f"create table {stage} using parquet partitioned by (job_id) "
        f"location '{home}/_tidemark_versions/{version}' "
        f"as select * from ({select}) distribute by job_id"
    )
    sql(f"call tidemark_system.marts.publish('{table}', '{stage}', false, {keep_ms})")


def _partition_columns(sql: Sql, table: str) -> list[str]:
    """The partition columns `describe table` lists after its "# Partition Information" row."""
    rows = [row[0] for row in sql(f"describe table {table}")]
    if "# Partition Information" not in rows:
        return []
    found = rows[rows.index("# Partition Information") + 1 :]
    return [name for name in found if name and not name.startswith("#")]


def _literal(text: str) -> str:
    """A Spark SQL string literal of ``text``."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
