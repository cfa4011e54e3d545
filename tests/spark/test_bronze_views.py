"""Spark reads bronze as the current Delta snapshot, through the Delta log, never by globbing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.events import timer, vertex, watermark, write_jsonl
from tidemark.ingest.landing import ingest
from tidemark.lake import Lake
from tidemark.spark.bronze import register_bronze, snapshot_files
from tidemark.spark.session import SparkSetupError, spark_session
from tidemark.sql import run_sql

pytestmark = pytest.mark.spark


def _land_in_many_commits(tmp_path: Path, lake: Lake, files: int = 6) -> None:
    for n in range(files):
        path = write_jsonl(
            tmp_path / f"part-{n}.jsonl",
            [timer(n * 10 + i, subtask_index=n) for i in range(5)] + [watermark(n * 10 + 7)],
        )
        ingest([path], lake)


def _timer_rows(spark) -> list[tuple]:
    frame = spark.sql(
        "select job_id, vertex_id, subtask_index, attempt, seq, ts_ms, timer, action"
        " from bronze.timer_events"
    )
    return sorted(tuple(r) for r in frame.collect())


def test_views_expose_each_bronze_table_by_name(spark, tmp_path: Path, lake: Lake) -> None:
    ingest([write_jsonl(tmp_path / "a.jsonl", [vertex(), timer(0), b"oops"])], lake)
    register_bronze(spark, lake)
    tables = {r.tableName for r in spark.sql("show tables in bronze").collect()}
    assert {"timer_events", "watermark_events", "vertices", "quarantine", "ingest_log"} <= tables
    assert spark.sql("select count(*) from bronze.quarantine").first()[0] == 1
    assert spark.sql("select parallelism from bronze.vertices").first()[0] == 2


def test_a_lake_without_tables_gives_empty_typed_views(spark, lake: Lake) -> None:
    register_bronze(spark, lake)
    frame = spark.sql("select * from bronze.watermark_events")
    assert frame.count() == 0
    assert dict(frame.dtypes)["watermark_ms"] == "bigint"


def test_compaction_leaves_removed_files_on_disk_and_spark_ignores_them(
    spark, tmp_path: Path, lake: Lake
) -> None:
    _land_in_many_commits(tmp_path, lake)
    register_bronze(spark, lake)
    before = _timer_rows(spark)
    path = str(lake.bronze_table("timer_events"))
    files_before = snapshot_files(path)
    assert len(files_before) == 6

    DeltaTable(path).optimize.compact()
    files_after = snapshot_files(path)
    assert len(files_after) == 1
    on_disk = list(Path(path).glob("*.parquet"))
    assert len(on_disk) == 7  # the six removed files are still there until vacuum

    register_bronze(spark, lake)
    assert _timer_rows(spark) == before
    globbed = spark.read.parquet(f"{path}/*.parquet").count()
    assert globbed == 2 * len(before)  # what a folder glob would have read


def test_files_views_bound_each_data_file_the_views_read(spark, tmp_path: Path, lake: Lake) -> None:
    """bronze.<table>_files holds, per data file of the snapshot, the ingest_id and ts_ms range
    of the rows the view reads from it (the column data_file); after a compaction, the new file."""
    _land_in_many_commits(tmp_path, lake)

    def bounds(table: str) -> tuple[list[tuple], list[tuple]]:
        seen = spark.sql(
            f"select data_file, min(ingest_id), max(ingest_id), min(ts_ms), max(ts_ms)"
            f" from bronze.{table} group by data_file"
        ).collect()
        listed = spark.sql(
            f"select data_file, min_ingest_id, max_ingest_id, min_ts_ms, max_ts_ms"
            f" from bronze.{table}_files"
        ).collect()
        return sorted(map(tuple, seen)), sorted(map(tuple, listed))

    register_bronze(spark, lake)
    for table in ("timer_events", "watermark_events"):
        seen, listed = bounds(table)
        assert len(listed) == 6 and seen == listed, (seen, listed)
    assert spark.sql("select count(*) from bronze.capture_gaps_files").first()[0] == 0

    DeltaTable(str(lake.bronze_table("timer_events"))).optimize.compact()
    register_bronze(spark, lake)
    seen, listed = bounds("timer_events")
    assert len(listed) == 1 and seen == listed, (seen, listed)
    first, last = listed[0][1], listed[0][2]
    assert last > first  # one file now holds several commits


def _scan_of(spark, sql: str) -> str:
    plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    (scan,) = [line for line in plan.splitlines() if "FileScan" in line]
    return scan


def test_a_query_without_data_file_reads_no_file_metadata(
    spark, tmp_path: Path, lake: Lake
) -> None:
    """A view that names _metadata makes Spark's scans produce all of its fields (the parquet
    row index too) unless the query reads one of them; the views read at most the file name."""
    _land_in_many_commits(tmp_path, lake)
    register_bronze(spark, lake)

    scan = _scan_of(spark, "select job_id, max(ts_ms) from bronze.timer_events group by job_id")
    assert "file_name" in scan and "row_index" not in scan and "file_size" not in scan, scan

    (one_file,) = spark.sql("select min(data_file) from bronze.timer_events_files").first()
    filtered = f"select count(*) from bronze.timer_events where data_file = '{one_file}'"
    assert "row_index" not in _scan_of(spark, filtered)
    assert spark.sql(filtered).first()[0] == 5  # the other files' rows are not read
    assert spark.sql("select count(*) from bronze.timer_events").first()[0] == 30


def test_a_partitioned_bronze_table_is_refused(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from tidemark.spark.bronze import BronzeReadError

    path = str(tmp_path / "timer_events")
    write_deltalake(path, pa.table({"job_id": ["j"], "seq": [1]}), partition_by=["job_id"])
    with pytest.raises(BronzeReadError, match="is partitioned; tidemark's bronze tables never are"):
        snapshot_files(path)


def test_views_follow_new_commits_when_registered_again(spark, tmp_path: Path, lake: Lake) -> None:
    ingest([write_jsonl(tmp_path / "a.jsonl", [timer(0)])], lake)
    register_bronze(spark, lake)
    assert len(_timer_rows(spark)) == 1
    ingest([write_jsonl(tmp_path / "b.jsonl", [timer(1)])], lake)
    assert len(_timer_rows(spark)) == 1  # a view is a snapshot
    register_bronze(spark, lake)
    assert len(_timer_rows(spark)) == 2


def test_a_second_lake_in_one_process_is_refused(spark, lake: Lake) -> None:
    with pytest.raises(SparkSetupError, match="one process, one TIDEMARK_LAKE"):
        spark_session(lake)


@pytest.mark.parametrize("fmt", ["table", "csv", "jsonl"])
def test_sql_output_formats(spark, fmt: str) -> None:
    out = io.StringIO()
    count = run_sql(
        spark,
        "select 1 as n, 'a,b' as s, cast(null as string) as z, array('x') as xs,"
        " timestamp'2024-01-01 00:00:00' as at",
        fmt,
        out,
    )
    assert count == 1
    text = out.getvalue()
    expected = {
        "table": '| 1 | a,b | NULL | ["x"] | 2024-01-01T00:00:00 |',
        "csv": 'n,s,z,xs,at\n1,"a,b",,"[""x""]",2024-01-01T00:00:00\n',
        "jsonl": '{"n": 1, "s": "a,b", "z": null, "xs": ["x"], "at": "2024-01-01T00:00:00"}\n',
    }[fmt]
    assert expected in text
