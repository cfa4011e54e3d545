"""The main job end to end, as `make demo` and a schedule run it: ingest, dbt build, checks."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.e2e.conftest import CHANGED_VARS, DemoLake
from tests.e2e.harness import ROOT
from tests.e2e.test_watermarks import canonical
from tests.e2e.warm import WarmLake
from tests.events import timer, vertex, watermark, write_jsonl
from tidemark.ingest.schema import BRONZE_SCHEMAS
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e

BRONZE = ("timer_events", "watermark_events", "vertices", "quarantine")


def test_build_freshness_docs_then_compaction_leaves_what_spark_reads_unchanged(
    demo_lake: DemoLake,
) -> None:
    """The scheduled path after `dbt build` (freshness), the docs, and bronze maintenance."""
    lake = demo_lake.lake
    assert "ERROR=0" in demo_lake.build.stdout and "PASS=" in demo_lake.build.stdout
    warm = demo_lake.warm
    freshness = warm.dbt("source", "freshness").check()  # the scheduled path's check
    assert freshness.stdout.count(" PASS freshness of bronze.") == 4, freshness.stdout
    assert " WARN freshness" not in freshness.stdout  # the quarantine has no freshness check
    warm.dbt("docs", "generate").check()
    assert _undocumented(lake.root.parent / ".dbt" / "target") == []

    # Compacting bronze (delta-rs OPTIMIZE) rewrites its files into new ones and leaves the old
    # ones on disk until a vacuum: the folder then holds every row twice. Spark reads the Delta
    # log, so the bronze views, and with them every model, read exactly the rows they read before.
    before = _bronze_as_spark_reads_it(warm)
    assert before["timer_events"][0] > 0, before
    for table in BRONZE:
        DeltaTable(str(lake.bronze_table(table))).optimize.compact()
    doubled = [t for t in BRONZE if _rows_on_disk(lake, t) > before[t][0]]
    assert doubled, "compaction removed no file, so the test would prove nothing"
    assert _bronze_as_spark_reads_it(warm) == before


def _bronze_as_spark_reads_it(warm) -> dict[str, tuple[int, int]]:
    """Per bronze view, its row count and an order-free digest of its rows (their columns, not
    the name of the file each is in, which a compaction changes)."""
    query = " union all ".join(
        f"select '{t}' as name, count(*) as n,"
        f" sum(xxhash64({', '.join(schema.names)}) % 1000000007) as digest from bronze.{t}"
        for t, schema in BRONZE_SCHEMAS.items()
    )
    return {r["name"]: (r["n"], r["digest"]) for r in warm.sql_rows(query)}


def _rows_on_disk(lake: Lake, table: str) -> int:
    """Rows in every parquet file of the table's folder: what globbing the files would read."""
    import pyarrow.parquet as pq

    files = lake.bronze_table(table).glob("*.parquet")
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def test_data_tests_can_read_only_the_latest_hours_of_the_hourly_marts(demo_lake: DemoLake) -> None:
    """With the var `data_tests_recent_hours` (macros/get_where_subquery.sql, decision 0007) a
    generic data test of a mart partitioned by hour reads only the rows within that many hours
    of the mart's latest hour_at; of any other model, and without the var, every row. The
    counts are what each test reads, from the SQL dbt compiles for it, against the mart's rows
    counted hour by hour here."""
    warm = demo_lake.warm

    # One hour back: every var changed (data_tests_recent_hours 1 among them), as the failed
    # build of test_health runs, so one saved parse serves both (tests/e2e/warm.py); each set of
    # vars costs a parse of its own, some 10 s.
    assert CHANGED_VARS["data_tests_recent_hours"] == 1
    recent = json.dumps(CHANGED_VARS)

    latest_only = ("--vars", json.dumps({"data_tests_recent_hours": 0}))
    hour_before = ("--vars", recent)

    def tested(model: str, *vars_args: str) -> int:
        inline = "select count(*) as n from {{ get_where_subquery(ref('" + model + "')) }}"
        out = warm.dbt("compile", "--inline", inline, "--output", "json", *vars_args)
        out = out.check().stdout
        compiled = json.loads(out[out.index('{\n  "compiled"') :])["compiled"]
        return warm.sql_rows(compiled)[0]["n"]

    by_hour = {
        datetime.fromisoformat(row["hour_at"]): row["n"]
        for row in warm.sql_rows(
            "select hour_at, count(*) as n from tidemark.fct_subtask_seconds group by hour_at"
        )
    }
    latest, total = max(by_hour), sum(by_hour.values())
    assert 0 < by_hour[latest] < total, by_hour  # the demo lake spans more than one hour
    assert tested("fct_subtask_seconds", *latest_only) == by_hour[latest]
    assert tested("fct_subtask_seconds", *hour_before) == sum(  # the hour before the latest too
        n for hour, n in by_hour.items() if hour >= latest - timedelta(hours=1)
    )
    assert tested("fct_subtask_seconds") == total
    vertices = warm.sql_rows("select count(*) as n from tidemark.dim_vertices")[0]["n"]
    assert tested("dim_vertices", *latest_only) == vertices  # not partitioned by hour: every row

    wrong = warm.dbt(
        "test", "--select", "dim_vertices", "--vars", json.dumps({"data_tests_recent_hours": "2h"})
    )  # fmt: skip
    assert wrong.returncode != 0
    assert "data_tests_recent_hours must be a whole number of hours, not 2h" in wrong.stdout

    scheduled = warm.dbt(
        "test", "--select", "fct_subtask_seconds", "fct_vertex_seconds", "fct_task_watermarks",
        "dim_vertices",
        "--exclude-resource-type", "unit_test", "--vars", recent,
    ).check()  # fmt: skip
    assert "ERROR=0" in scheduled.stdout and " PASS=" in scheduled.stdout, scheduled.stdout
    # Of the singular tests, the two that compare rows of the same second take the same window;
    # the two that compare a mart with the plan's task spans read everything.
    singular = warm.target("--vars", recent) / "compiled" / "tidemark" / "tests"
    window = "hour_at >= (select max(hour_at) from tidemark.fct_subtask_seconds)"
    for name, windowed in {
        "assert_fct_subtask_seconds_add_up_to_a_second": 1,
        "assert_fct_vertex_seconds_match_subtask_seconds": 2,
        "assert_fct_subtask_seconds_has_every_second": 0,
    }.items():
        compiled = (singular / "dbt" / f"{name}.sql").read_text()
        assert compiled.count(window) == windowed, compiled


@pytest.mark.deep
def test_a_model_rebuilt_alone_from_a_partial_plan_fails_saying_what_to_rebuild(
    tmp_path: Path,
) -> None:
    """Contract §5: after an incremental run the plans replay only part of the tasks, so a model
    rebuilt from scratch on its own would lose the others' rows; it fails instead, naming the
    models to rebuild together. `dbt show` runs the full-refresh query without writing it.

    A lake of its own and two builds: about 2 minutes on two cores, which `make test` (10
    minutes) has no room for; `make test-deep` and CI run it."""
    start_ms = 1_704_070_760_000
    events = [
        e
        for seq in range(1, 41)
        for e in (
            timer(2 * seq, ts_ms=start_ms + 500 * seq, action=("end", "start")[seq % 2]),
            watermark(
                2 * seq + 1,
                ts_ms=start_ms + 500 * seq,
                watermark_ms=start_ms + 400 * seq,
                num_channels=1,
            ),
        )
    ]
    lake = Lake.from_env(tmp_path / "lake")
    models = ["--select", "int_timer_events_landed+", "int_valve_tasks_planned+"]
    models += ["--exclude", "path:models/marts/analysis", "path:models/marts/conformance"]
    models += ["path:models/marts/metrics"]  # the metric views join dim_vertices, not selected
    with WarmLake(lake) as warm:
        for k, batch in enumerate((events[:40], events[40:])):  # the second resumes the task
            warm.tidemark("ingest", str(write_jsonl(tmp_path / f"batch-{k}.jsonl", batch))).check()
            run = warm.dbt("run", *models).check()
            assert "vouches for nothing" not in run.stdout, run.stdout  # every table is there
        for model, rebuild in (
            ("fct_subtask_seconds", "int_timer_events_landed+"),
            ("fct_subtask_flink_gauges", "int_timer_events_landed+"),
            ("fct_valve_emissions", "int_valve_tasks_planned+"),
        ):
            result = warm.dbt("show", "--full-refresh", "--select", model)
            assert result.returncode != 0, result.stdout
            assert f"{model} is being rebuilt, but this run" in result.stdout, result.stdout
            assert f"dbt build --full-refresh --select {rebuild}" in result.stdout

        # A mart dropped by hand (or one a release adds): the checkpoints that vouched for it are
        # dropped before the run (tidemark_migrate_lake), both plans replay every task, and the
        # marts come back whole.
        def rows_of(mart: str) -> list[str]:
            rows = warm.sql_rows(f"select * from tidemark.{mart}")
            return sorted(json.dumps(row, sort_keys=True) for row in rows)

        kept = {mart: rows_of(mart) for mart in ("fct_vertex_seconds", "fct_task_watermarks")}
        for mart in kept:
            warm.sql_rows(f"drop table tidemark.{mart}")
        rerun = warm.dbt("run", *models).check()
        for checkpoint, mart in (
            ("int_timer_tasks_checkpointed", "fct_vertex_seconds"),
            ("int_valve_states_checkpointed", "fct_task_watermarks"),
        ):
            assert f"{mart} is missing, so " in rerun.stdout, rerun.stdout
            assert f"{checkpoint} vouches for nothing" in rerun.stdout
        for mart, rows in kept.items():
            assert rows and rows_of(mart) == rows, mart


@pytest.mark.deep
def test_a_gauge_mart_from_before_the_release_columns_gains_them(tmp_path: Path) -> None:
    """Issue 66 (CHANGELOG, Migration): a fct_subtask_flink_gauges built before it had
    `flink_release` and `flink_release_source` gains them in the next run (its pre-hook,
    tidemark_add_columns),
    NULL in the rows it kept; the rows the run writes say the rules they followed, `assumed`
    with no vertex record. A vertex record that names the release then replays the whole job:
    every row says `1.15.4` and `captured` (one 5 s slot, T5), as a full refresh writes them.

    A lake of its own and four builds: about 3 minutes on two cores (`make test-deep`, CI)."""
    start_ms = 1_704_070_800_000
    events = [
        timer(seq, ts_ms=start_ms + 2_000 * seq, action=("end", "start")[seq % 2])
        for seq in range(1, 61)
    ]
    lake = Lake.from_env(tmp_path / "lake")
    models = ["--select", "int_timer_events_landed+", "--exclude", "test_type:unit"]
    models += ["path:models/marts/analysis", "path:models/marts/conformance"]
    models += ["path:models/marts/metrics"]
    mart = "tidemark.fct_subtask_flink_gauges"

    def releases() -> list[tuple]:
        rows = warm.sql_rows(
            f"select flink_release, flink_release_source, count(*) as n from {mart}"
            " group by 1, 2 order by 1 nulls first"
        )
        return [(r["flink_release"], r["flink_release_source"], r["n"] > 0) for r in rows]

    with WarmLake(lake) as warm:
        batches = (events[:30], events[30:45], [*events[45:], vertex(flink_version="1.15.4")])
        for k, batch in enumerate(batches):
            warm.tidemark("ingest", str(write_jsonl(tmp_path / f"batch-{k}.jsonl", batch))).check()
            if k == 1:  # the mart as a release before issue 66 left it
                columns = [
                    c["col_name"]
                    for c in warm.sql_rows(f"describe {mart}")
                    if c["col_name"] not in ("flink_release", "flink_release_source")
                    and c["col_name"]
                    and not c["col_name"].startswith("#")
                ]
                old = ", ".join(dict.fromkeys(columns))
                warm.sql_rows(
                    f"create table {mart}_old using parquet"
                    f" partitioned by (job_id, hour_at, minute_slice) as select {old} from {mart}"
                )
                warm.sql_rows(f"drop table {mart}")
                warm.sql_rows(f"alter table {mart}_old rename to {mart}")
            run = warm.dbt("run", *models).check()
            assert "vouches for nothing" not in run.stdout, run.stdout
            if k == 0:
                assert releases() == [("2.3", "assumed", True)]
            if k == 1:
                assert releases() == [(None, None, True), ("2.3", "assumed", True)]
        assert releases() == [("1.15.4", "captured", True)]
        incremental = warm.sql_rows(f"select * from {mart}")
        warm.dbt("run", "--full-refresh", *models).check()
        assert canonical(incremental) == canonical(warm.sql_rows(f"select * from {mart}"))


@pytest.mark.deep
def test_an_incremental_run_reads_no_partition_before_what_it_replaces(tmp_path: Path) -> None:
    """An incremental run reads the recent partitions of the tables it rewrites and reads, not
    their whole history (decisions 0004 and 0005). After a first build of a task's first 11.5
    minutes, every file of the first ten-minute slice is overwritten with bytes that are not
    parquet, so any read of that slice fails; the run after the next 70 s of events succeeds and
    writes the new seconds. The marts rebuilt whole on every run (analysis, conformance) are
    left out: they read every partition by design.

    A lake of its own and two builds: about 2 minutes on two cores (`make test-deep`, CI)."""
    start_ms = 1_704_067_200_000  # 2024-01-01 00:00 UTC: the first slice is minutes 0 to 9
    events = [
        e
        for step in range(1, 376)  # an event pair every 2 s for 12.5 minutes
        for e in (
            timer(2 * step, ts_ms=start_ms + 2000 * step, action=("end", "start")[step % 2]),
            watermark(
                2 * step + 1,
                ts_ms=start_ms + 2000 * step,
                watermark_ms=start_ms + 2000 * step - 300,
                num_channels=1,
            ),
        )
    ]
    first, second = events[: 2 * 345], events[2 * 345 :]  # 11.5 minutes, then 70 s more
    lake = Lake.from_env(tmp_path / "lake")
    models = ["--select", "int_timer_events_landed+", "int_valve_tasks_planned+"]
    models += ["--exclude", "path:models/marts/analysis", "path:models/marts/conformance"]
    models += ["path:models/marts/metrics"]  # the metric views join dim_vertices, not selected
    # The on-run-end hook reads each mart's last 30 minutes for tidemark.run_log's freshness
    # (decision 0017), a bounded window that here covers the corrupted slice: it records nothing.
    with WarmLake(lake, env={"TIDEMARK_RUN_LOG_RECORDER": "this test"}) as warm:
        warm.tidemark("ingest", str(write_jsonl(tmp_path / "first.jsonl", first))).check()
        warm.dbt("run", *models).check()
        corrupted = [
            path
            for path in lake.warehouse.rglob("minute_slice=0/*")
            if path.is_file() and not path.name.startswith((".", "_"))
        ]
        tables = {path.parent.parent.parent.parent.name for path in corrupted}
        assert {"fct_subtask_seconds", "fct_valve_emissions", "fct_task_watermarks"} <= tables
        for path in corrupted:
            path.write_bytes(b"not parquet: an incremental run must not read this slice")
        with pytest.raises(Exception, match="FAILED_READ_FILE|not a Parquet file"):
            warm.sql_rows("select count(*) from tidemark.fct_subtask_seconds")
        warm.tidemark("ingest", str(write_jsonl(tmp_path / "second.jsonl", second))).check()
        result = warm.dbt("run", *models)
        assert result.returncode == 0, result.stdout
        newest = warm.sql_rows(
            "select max(second_start_ms) as newest from tidemark.fct_subtask_seconds"
            " where minute_slice = 10"
        )
        assert newest[0]["newest"] > start_ms + 2000 * 345  # the first batch's last event
        # The gauge plan's input, the new events summed up per task, is a table of the run
        # (int_timer_events_landed), which its search window's question and the plan both read.
        plan = lake.root.parent / ".dbt" / "target" / "compiled" / "tidemark" / "models"
        plan_sql = (plan / "intermediate" / "state" / "int_timer_tasks_planned.sql").read_text()
        assert "tidemark_intermediate.int_timer_events_landed" in plan_sql, plan_sql[:3000]
        assert "bronze.timer_events" not in plan_sql  # the events are read once, by landed


def _undocumented(target: Path) -> list[str]:
    """Models, and columns of their YAML or of the built tables, that have no description."""
    manifest = json.loads((target / "manifest.json").read_text())
    catalog = json.loads((target / "catalog.json").read_text())
    # A metric view's columns are the semantic layer's metrics and dimensions, described there.
    semantic = {m["name"] for m in manifest["metrics"].values() if m["description"].strip()}
    for model in manifest["semantic_models"].values():
        semantic |= {d["name"] for d in model["dimensions"] if (d["description"] or "").strip()}
    missing = []
    for key, node in manifest["nodes"].items():
        if node["resource_type"] != "model" or node["package_name"] != "tidemark":
            continue
        if not node["description"].strip():
            missing.append(node["name"])
        described = {n for n, c in node["columns"].items() if c["description"].strip()}
        if node["config"]["materialized"] == "metric_view":  # generated from the semantic layer
            described |= semantic
        built = set(catalog["nodes"].get(key, {}).get("columns", {}))
        columns = built | set(node["columns"])
        missing += [f"{node['name']}.{c}" for c in sorted(columns - described)]
    return missing


def test_a_full_plan_reads_the_bronze_events_once(demo_lake: DemoLake) -> None:
    """The gauge plan's input (int_timer_events_landed) and the valve plan, in a first build or
    --full-refresh, read each bronze event table once. Spark computes a CTE again wherever it
    is read: the newest commit, taken by a scalar subquery over the plan's aggregate, scanned
    all of bronze a second time."""
    warm = demo_lake.warm
    plans = {
        "int_timer_events_landed": ["timer_events", "watermark_events"],
        "int_valve_tasks_planned": ["watermark_events"],
    }
    warm.dbt("compile", "--full-refresh", "--select", *plans).check()
    compiled = demo_lake.lake.root.parent / ".dbt" / "target" / "compiled" / "tidemark"
    for model, tables in plans.items():
        sql = (compiled / "models" / "intermediate" / "state" / f"{model}.sql").read_text()
        scanned = warm.bronze_scans(sql)
        assert sorted(t for t in scanned if t.endswith("_events")) == tables, (model, scanned)


def test_a_full_refresh_replays_every_file_without_asking_the_plan(demo_lake: DemoLake) -> None:
    """A --full-refresh plans every task from its first event (tidemark_resumes), so the gauge
    replay and the valve feed read every bronze file: no question to their plan while compiling
    (decision 0022), where an incremental compile asks one."""
    warm = demo_lake.warm
    replays = ["int_timer_events_clocked", "int_valve_outputs_computed"]
    for flags, asked in ([], True), (["--full-refresh"], False):
        result = warm.dbt("--debug", "compile", *flags, "--select", *replays).check()
        for model in replays:
            assert (f"On model.tidemark.{model}:" in result.stdout) == asked, (flags, model)
    compiled = demo_lake.lake.root.parent / ".dbt" / "target" / "compiled" / "tidemark"
    sql = (compiled / "models" / "intermediate" / "int_timer_events_clocked.sql").read_text()
    assert "data_file in" not in sql, sql


def test_semantic_layer_validates_offline(demo_lake: DemoLake) -> None:
    """`mf validate-configs --skip-dw`, as the README shows it, in the lake's warm process: the
    `dbt debug` MetricFlow starts with finds Spark running (a process of its own starts Spark
    for it, about 12 s on two cores)."""
    # MetricFlow reads <project root>/target/semantic_manifest.json whatever DBT_TARGET_PATH
    # says, so this parse writes where a user's would (target/ is git-ignored).
    demo_lake.warm.dbt("parse", "--target-path", str(ROOT / "target")).check()
    result = demo_lake.warm.mf("validate-configs", "--skip-dw").check()
    assert "ERRORS: 0" in result.stdout, result.stdout
