"""A lake run past every retention, as a deployment runs for months (issue 64): each build's data
tests pass after `tidemark maintain` expired bronze, the task marts and the vertex marts (kept for
different numbers of days), and the incremental state holds only the tasks the task marts still
hold (docs/decisions/0019-retention.md).

Before: the plan of the gauge models kept every task ever seen, so once maintain had expired a
day from the task marts, `assert_fct_subtask_seconds_has_every_second` failed for that day's
tasks and dbt skipped everything downstream; the vertex marts, kept longer, disagreed with the
subtask seconds they are built from; and the state grew with every attempt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import tidemark
from tests.e2e.warm import WarmLake
from tests.events import timer, vertex, watermark, write_jsonl
from tidemark.lake import Lake
from tidemark.maintain.retention import DAY_MS

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
RETENTION = ["--keep-bronze-days", "2", "--keep-task-marts-days", "3",
             "--keep-vertex-marts-days", "4"]  # fmt: skip
# The incremental marts and the state with the data tests between them (dbt builds the tests
# whose every parent it builds); unit tests are CI's.
SELECT = ["--select", "+int_timer_tasks_checkpointed", "+int_valve_states_checkpointed",
          "--exclude", "metricflow_time_spine", "--exclude-resource-type", "unit_test"]  # fmt: skip


def _task(vertex_id: str, subtask: int, attempt: int, at: int, seconds: int) -> list[dict]:
    """A task idle 400 ms of each of ``seconds`` seconds from ``at``, with its watermarks."""
    found, seq = [], 0
    task = {"vertex_id": vertex_id, "subtask_index": subtask, "attempt": attempt}
    for second in range(seconds):
        start = at + second * 1000
        found.append(timer(seq, **task, ts_ms=start, action="start"))
        found.append(timer(seq + 1, **task, ts_ms=start + 400, action="end"))
        found.append(watermark(seq + 2, **task, ts_ms=start + 500, watermark_ms=start))
        seq += 3
    return found


def _day(day: int) -> list[dict]:
    """Day ``day`` of a job restarted every day (attempt ``day``): its two tasks, at 01:00."""
    at = T0 + day * DAY_MS + 3_600_000
    return _task("src", 0, day, at, 4) + _task("map", 0, day, at, 4)


# A task that runs across midnight into day 2: across bronze's cutoff, then the task marts'.
MIDNIGHT = _task("map", 1, 0, T0 + 2 * DAY_MS - 2_000, 5)


def _graph() -> list[dict]:
    return [vertex(vertex_id="src", parallelism=1),
            vertex(vertex_id="map", parallelism=2, upstream_vertex_ids=["src"])]  # fmt: skip


def _built(warm: WarmLake, *args: str) -> None:
    """A dbt build with its data tests, every one of which must pass."""
    done = warm.dbt("build", *args)
    failed = [line for line in done.stdout.splitlines() if re.search(r"\b(FAIL|ERROR)\b", line)]
    assert done.returncode == 0 and "SKIP=0" in done.stdout, "\n".join(failed) or done.stdout
    assert re.search(r" START test ", done.stdout), done.stdout  # the data tests ran


def _tasks(warm: WarmLake, table: str) -> set[tuple]:
    rows = warm.sql_rows(
        f"select distinct vertex_id, subtask_index, attempt from tidemark_intermediate.{table}"
    )
    return {(r["vertex_id"], r["subtask_index"], r["attempt"]) for r in rows}


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[WarmLake]:
    with WarmLake(Lake.from_env(tmp_path / "lake")) as warm:
        yield warm


def test_builds_pass_their_data_tests_past_every_retention(warm: WarmLake, tmp_path: Path) -> None:
    """Three builds, each followed by maintenance: days 0 to 3 at once, then day 4, then day 5.
    The second build is the first after the task marts lost a day (it failed before), the third
    runs past all three retentions, with a task whose seconds the task marts keep only in part."""
    days = [write_jsonl(tmp_path / "graph.jsonl", _graph())]
    days += [write_jsonl(tmp_path / f"day{d}.jsonl", _day(d) + (MIDNIGHT if d == 1 else []))
             for d in range(6)]  # fmt: skip
    for landed in (days[:5], days[5:6], days[6:7]):
        warm.tidemark("ingest", *map(str, landed)).check()
        _built(warm, *SELECT)
        done = warm.tidemark("maintain", *RETENTION).check()
    # The last maintenance dropped day 2's tasks and the midnight task from the state.
    dropped = "3 from int_timer_tasks_checkpointed, 3 from int_valve_states_checkpointed"
    assert f"tasks past the task marts' retention dropped: {dropped}" in done.stdout, done.stdout

    # Day 5 is the newest: bronze keeps days 4 and 5, the task marts 3 to 5, the vertex marts
    # 2 to 5, and the state what the task marts keep: the midnight task went with its seconds.
    [cutoffs] = warm.sql_rows("select * from tidemark_intermediate.retention_cutoffs")
    assert [cutoffs[f"{part}_cutoff_ms"] for part in ("bronze", "task_marts", "vertex_marts")] == [
        T0 + day * DAY_MS for day in (4, 3, 2)
    ]
    kept = {(v, 0, d) for v in ("src", "map") for d in (3, 4, 5)}
    assert _tasks(warm, "int_timer_tasks_checkpointed") == kept
    assert _tasks(warm, "int_valve_states_checkpointed") == kept
    assert _tasks(warm, "int_timer_seconds_checkpointed") == {t for t in kept if t[2] >= 4}
    [first] = warm.sql_rows(
        "select min(second_start_ms) as subtask, (select min(second_start_ms) from "
        "tidemark.fct_vertex_seconds) as vertex from tidemark.fct_subtask_seconds"
    )
    assert [first["subtask"], first["vertex"]] == [T0 + 3 * DAY_MS + 3_600_000, T0 + 2 * DAY_MS]


# The generator's events of a day and the marts compared with a full refresh, with their time.
SHIFTED = re.compile(r'"(ts_ms|watermark_ms)":(\d+)|"attempt":(\d+)')
COMPARED = {"fct_subtask_seconds": "second_start_ms", "fct_subtask_flink_gauges": "update_ms",
            "fct_vertex_seconds": "second_start_ms", "fct_valve_emissions": "ts_ms",
            "fct_watermark_seconds": "second_start_ms"}  # fmt: skip


def _shifted(lines: list[str], day: int) -> str:
    """The events moved ``day`` days on, as attempt ``day`` (a restart a day)."""

    def moved(match: re.Match) -> str:
        if match.group(3) is not None:
            return f'"attempt":{day}'
        return f'"{match.group(1)}":{int(match.group(2)) + day * DAY_MS}'

    return "".join(SHIFTED.sub(moved, line) for line in lines)


def _rows(warm: WarmLake, table: str, column: str, from_ms: int) -> list[tuple]:
    rows = warm.sql_rows(f"select * from tidemark.{table} where {column} >= {from_ms}")
    rounded = (tuple(round(v, 6) if isinstance(v, float) else v for v in r.values()) for r in rows)
    return sorted(rounded, key=repr)


@pytest.mark.deep
def test_a_week_of_daily_restarts_builds_whole_and_keeps_the_state_flat(
    warm: WarmLake, tmp_path: Path
) -> None:
    """The issue's lake: seven days of the generator's `skew` job (its first 30 s, a new attempt
    each day), a whole `dbt build` and maintenance after each day. Every build passes, the
    state's rows are the same every day once the task marts' three days are full, and a full
    refresh afterwards passes its data tests and gives the incremental marts' rows for the days
    bronze keeps (contract §5)."""
    generated = tmp_path / "generated"
    tidemark("generate", "--scenario", "skew", "--seed", "1", "--out", str(generated),
             lake=warm.lake).check()  # fmt: skip
    [events] = generated.glob("events-*.jsonl")
    first = min(json.loads(line)["ts_ms"] for line in events.open())
    lines = [line for line in events.open() if json.loads(line)["ts_ms"] < first + 30_000]
    feed = [generated / "graph.jsonl"]
    state_rows = []
    for day in range(7):
        feed.append(tmp_path / f"day{day}.jsonl")
        feed[-1].write_text(_shifted(lines, day))
        warm.tidemark("ingest", *map(str, feed)).check()  # the graph lands once
        _built(warm, "--exclude-resource-type", "unit_test")
        warm.tidemark("maintain", *RETENTION).check()
        state_rows.append(
            [warm.sql_rows(f"select count(*) as n from tidemark_intermediate.{t}")[0]["n"]
             for t in ("int_timer_tasks_checkpointed", "int_timer_seconds_checkpointed",
                       "int_valve_states_checkpointed", "int_backpressure_samples_counted")]
        )  # fmt: skip
    assert all(rows == state_rows[2] for rows in state_rows[2:]), state_rows

    [cutoffs] = warm.sql_rows("select * from tidemark_intermediate.retention_cutoffs")
    bronze_from = cutoffs["bronze_cutoff_ms"]
    incremental = {t: _rows(warm, t, c, bronze_from) for t, c in COMPARED.items()}
    _built(warm, "--full-refresh", "--exclude-resource-type", "unit_test")
    for table, column in COMPARED.items():
        assert incremental[table], table
        assert _rows(warm, table, column, bronze_from) == incremental[table], table
