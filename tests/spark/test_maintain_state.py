"""`tidemark maintain`'s state part, through SQL on a Spark session (issue 64; decision 0019): the
tasks the task marts no longer hold leave the checkpoints keyed by task, job by job, and the
cutoffs are recorded for the builds, never moving back."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidemark.maintain.retention import DAY_MS, Cutoffs
from tidemark.maintain.state import expire_state, record_cutoffs

pytestmark = pytest.mark.spark

SCHEMA = "state_t"
CUTOFF = 10 * DAY_MS
OLD, NEW = CUTOFF - 1, CUTOFF  # a task's last ts_ms just before the cutoff, and at it
KEEP_MS = 600_000


def _cutoffs(task_marts_ms: int = CUTOFF) -> Cutoffs:
    return Cutoffs(CUTOFF + DAY_MS, CUTOFF + DAY_MS // 2, task_marts_ms, task_marts_ms - DAY_MS)


@pytest.fixture
def sql(spark):
    spark.sql(f"create database if not exists {SCHEMA}_intermediate")
    yield lambda statement: [tuple(row) for row in spark.sql(statement).collect()]
    for database in (f"{SCHEMA}_intermediate", f"{SCHEMA}_intermediate_publishing"):
        spark.sql(f"drop database if exists {database} cascade")


def _location(sql, table: str, partition: str) -> Path:
    """The folder of one partition (the partition's own Location, before the table's)."""
    rows = sql(f"describe formatted {table} partition ({partition})")
    start = [row[0] for row in rows].index("# Detailed Partition Information")
    location = next(row[1] for row in rows[start:] if row[0] == "Location")
    return Path(location.removeprefix("file:"))


def _tasks(sql, table: str) -> list[tuple]:
    return sorted(sql(f"select distinct job_id, vertex_id, attempt from {table}"))


def test_tasks_the_task_marts_no_longer_hold_leave_the_checkpoints(sql) -> None:
    tasks = f"{SCHEMA}_intermediate.int_timer_tasks_checkpointed"
    valves = f"{SCHEMA}_intermediate.int_valve_states_checkpointed"
    # Job a keeps one task of two, job b none (its partition goes), job c all.
    sql(
        f"create table {tasks} using parquet partitioned by (job_id) as select * from values "
        f"('v', 0, 0, {OLD}, 'a'), ('v', 0, 1, {NEW}, 'a'), ('v', 0, 0, {OLD}, 'b'), "
        f"('v', 0, 0, {NEW}, 'c') as t(vertex_id, subtask_index, attempt, horizon_ms, job_id)"
    )
    # A task's time is its newest checkpoint's: (a, v, 1) has an old one and a new one.
    sql(
        f"create table {valves} using parquet partitioned by (job_id) as select * from values "
        f"('v', 0, 0, {OLD}, 'a'), ('v', 0, 1, {OLD}, 'a'), ('v', 0, 1, {NEW}, 'a'), "
        f"('v', 0, 0, {OLD}, 'b') as t(vertex_id, subtask_index, attempt, effective_ms, job_id)"
    )

    kept_before = _location(sql, tasks, "job_id = 'a'")
    report = expire_state(sql, _cutoffs(), KEEP_MS, SCHEMA)
    assert report.expired == {tasks: 2, valves: 2}
    assert report.describe() == (
        "state: tasks past the task marts' retention dropped: 2 from int_timer_tasks_checkpointed, "
        "2 from int_valve_states_checkpointed"
    )
    assert _tasks(sql, tasks) == [("a", "v", 1), ("c", "v", 0)]
    assert sorted(r[0] for r in sql(f"show partitions {tasks}")) == ["job_id=a", "job_id=c"]
    assert sorted(sql(f"select job_id, attempt, effective_ms from {valves}")) == [
        ("a", 1, OLD),
        ("a", 1, NEW),
    ]
    assert sql(f"show partitions {valves}") == [("job_id=a",)]
    # Job a's rewrite was published, not overwritten in place (decision 0023): its partition
    # points at new files below the table's folder, and the old ones stay for KEEP_MS, so a kill
    # at any moment leaves one whole version of the job's rows.
    kept_after = _location(sql, tasks, "job_id = 'a'")
    assert "_tidemark_versions" in kept_after.parts and kept_after != kept_before
    assert any(kept_after.glob("*.parquet")) and any(kept_before.glob("*.parquet"))
    # Again: nothing more to drop, nothing rewritten.
    assert expire_state(sql, _cutoffs(), KEEP_MS, SCHEMA).expired == {tasks: 0, valves: 0}


def test_a_checkpoint_an_earlier_release_made_waits_for_the_next_build(sql) -> None:
    """Not partitioned by job (before issue 64): left as it is; the next build rebuilds it
    partitioned, and its plan leaves out the tasks before the recorded cutoff meanwhile."""
    tasks = f"{SCHEMA}_intermediate.int_timer_tasks_checkpointed"
    sql(f"create table {tasks} using parquet as select 'a' as job_id, {OLD} as horizon_ms")
    assert expire_state(sql, _cutoffs(), KEEP_MS, SCHEMA).expired == {}
    assert sql(f"select job_id from {tasks}") == [("a",)]


def test_the_cutoffs_recorded_are_the_latest_ever_applied(sql) -> None:
    record = f"{SCHEMA}_intermediate.retention_cutoffs"
    record_cutoffs(sql, _cutoffs(), CUTOFF + DAY_MS + 5, SCHEMA)
    # A later maintenance with a longer retention cannot bring expired days back.
    record_cutoffs(sql, _cutoffs(CUTOFF - 3 * DAY_MS), CUTOFF + DAY_MS + 9, SCHEMA)
    [row] = sql(
        "select bronze_cutoff_ms, task_marts_cutoff_ms, vertex_marts_cutoff_ms, newest_event_ms "
        f"from {record}"
    )
    assert row == (CUTOFF + DAY_MS // 2, CUTOFF, CUTOFF - DAY_MS, CUTOFF + DAY_MS + 9)
