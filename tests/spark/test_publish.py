"""CALL tidemark_system.marts.publish: a staged table's rows become a table's in one step that no
query sees half of, the files it replaced stay for a while and then go, and nothing outside the
table's own folder is touched (docs/decisions/0015-consistent-reads.md)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

PARTITIONS = 16


def _home(spark, table: str) -> Path:
    schema, name = table.split(".")
    [location] = [
        row.info_value
        for row in spark.sql(f"describe database extended {schema}").collect()
        if row.info_name == "Location"
    ]
    return Path(location.removeprefix("file:")) / name


def _stage(spark, table: str, stage: str, version: str, select: str, partitioned=True) -> None:
    """Writes `select` as the stage table `stage` in a new folder below `table`'s home."""
    spark.sql(f"drop table if exists {stage}")
    partitions = "partitioned by (part)" if partitioned else ""
    location = _home(spark, table) / "_tidemark_versions" / version
    spark.sql(f"create table {stage} using parquet {partitions} location '{location}' as {select}")


def _publish(spark, table: str, stage: str, replace_all: bool, keep_ms: int = 600_000) -> None:
    spark.sql(
        f"call tidemark_system.marts.publish('{table}', '{stage}', {str(replace_all).lower()}, "
        f"{keep_ms})"
    )


def _rows(spark, table: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(f"select * from {table}").collect())


@pytest.fixture
def schemas(spark):
    for schema in ("publish_t", "publish_t_publishing"):
        spark.sql(f"create database if not exists {schema}")
    yield "publish_t.seconds", "publish_t_publishing.seconds"
    spark.sql("drop database publish_t cascade")
    spark.sql("drop database publish_t_publishing cascade")


def test_staged_partitions_replace_and_add_the_tables(spark, schemas) -> None:
    table, stage = schemas
    spark.sql(f"create table {table} using parquet partitioned by (part) as "
              "select id as v, cast(id % 3 as int) as part from range(6)")  # fmt: skip
    # Partition 1 gets new rows, partition 5 is new, partitions 0 and 2 are left as they are.
    _stage(spark, table, stage, "v1", "select id * 10 as v, cast(id as int) as part "
           "from range(1, 6, 4)")  # fmt: skip
    _publish(spark, table, stage, replace_all=False)
    assert _rows(spark, table) == [(0, 0), (2, 2), (3, 0), (5, 2), (10, 1), (50, 5)]
    assert not spark.catalog.tableExists(stage)

    # A full build: its partitions replace the table's (2) or are added (9), and every
    # partition it lacks goes (0, 1, 5).
    _stage(spark, table, stage, "v2", "select 7L as v, 2 as part union all select 8L, 9")
    _publish(spark, table, stage, replace_all=True)
    assert _rows(spark, table) == [(7, 2), (8, 9)]
    partitions = [r.partition for r in spark.sql(f"show partitions {table}").collect()]
    assert partitions == ["part=2", "part=9"]


def test_an_unpartitioned_table_is_pointed_at_the_stage(spark, schemas) -> None:
    table, stage = schemas
    spark.sql(f"create table {table} using parquet as select 1L as v")
    home = _home(spark, table)
    first_files = sorted(p.name for p in home.iterdir() if p.is_file())
    _stage(spark, table, stage, "v1", "select 2L as v", partitioned=False)
    _publish(spark, table, stage, replace_all=True, keep_ms=0)
    assert _rows(spark, table) == [(2,)]

    _stage(spark, table, stage, "v2", "select 3L as v", partitioned=False)
    time.sleep(0.01)
    _publish(spark, table, stage, replace_all=True, keep_ms=0)
    assert _rows(spark, table) == [(3,)]
    # The first version's files (in the home itself) and the second version's folder are gone,
    # the third version's folder stays.
    assert first_files and not any(p.is_file() for p in home.iterdir())
    assert sorted(p.name for p in (home / "_tidemark_versions").iterdir()) == ["_replaced", "v2"]


def test_replaced_folders_stay_for_keep_ms_then_go_with_their_empty_parents(spark, schemas) -> None:
    table, stage = schemas
    spark.sql(f"create table {table} using parquet partitioned by (part) as "
              "select id as v, cast(id as int) as part from range(2)")  # fmt: skip
    home = _home(spark, table)
    _stage(spark, table, stage, "v1", "select 5L as v, 0 as part")
    _publish(spark, table, stage, replace_all=False, keep_ms=3_600_000)
    assert (home / "part=0").is_dir()  # replaced an hour ago at the earliest: kept

    _stage(spark, table, stage, "v2", "select 6L as v, 0 as part")
    time.sleep(0.01)
    _publish(spark, table, stage, replace_all=False, keep_ms=0)
    assert not (home / "part=0").exists() and (home / "part=1").is_dir()
    # v1's only partition was replaced by v2's: its folder went with its markers (_SUCCESS).
    versions = home / "_tidemark_versions"
    assert sorted(p.name for p in versions.iterdir()) == ["_replaced", "v2"]
    assert _rows(spark, table) == [(1, 1), (6, 0)]


def test_nothing_outside_the_tables_home_is_deleted(spark, schemas, tmp_path: Path) -> None:
    table, stage = schemas
    elsewhere = tmp_path / "elsewhere"
    spark.sql(f"create table {table} using parquet partitioned by (part) "
              f"location '{elsewhere}' as select 1L as v, 0 as part")  # fmt: skip
    _stage(spark, table, stage, "v1", "select 2L as v, 0 as part")
    _publish(spark, table, stage, replace_all=False)
    time.sleep(0.01)
    _stage(spark, table, stage, "v2", "select 3L as v, 0 as part")
    _publish(spark, table, stage, replace_all=False, keep_ms=0)
    assert _rows(spark, table) == [(3, 0)]
    assert (elsewhere / "part=0").is_dir()  # the table's first location was not its home


def test_a_stage_of_other_columns_is_refused_and_the_table_left_as_it_was(spark, schemas) -> None:
    table, stage = schemas
    spark.sql(f"create table {table} using parquet partitioned by (part) as "
              "select 1L as v, 0 as part")  # fmt: skip
    _stage(spark, table, stage, "v1", "select 'x' as v, 0 as part")
    with pytest.raises(Exception, match="does not have the columns of"):
        _publish(spark, table, stage, replace_all=False)
    assert _rows(spark, table) == [(1, 0)]


def test_a_query_sees_every_partition_before_or_every_one_after(spark, schemas) -> None:
    """Readers list the partitions while publishes swap all of them: every answer is one
    version's, never a mix (each version's rows have their own value in every partition)."""
    table, stage = schemas

    def version(n: int) -> str:
        return f"select {n}L as v, cast(id as int) as part from range({PARTITIONS})"

    spark.sql(f"create table {table} using parquet partitioned by (part) as {version(0)}")
    answers: list[tuple] = []
    errors: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                answers.append(tuple(spark.sql(
                    f"select count(*), min(v), max(v) from {table}"
                ).collect()[0]))  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - any failure is what the test counts
                errors.append(str(exc).splitlines()[0])

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for n in range(1, 4):
            _stage(spark, table, stage, f"v{n}", version(n))
            _publish(spark, table, stage, replace_all=False)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert not errors
    assert answers and all(a[0] == PARTITIONS and a[1] == a[2] for a in answers), set(answers)


def test_a_procedure_that_does_not_compile_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiled with Janino in a JVM of its own (no Spark session needed): a source it cannot
    compile stops the start with the file and line, and leaves no jar behind."""
    from tidemark.spark import procedures
    from tidemark.spark.settings import SparkSetupError

    sources = tmp_path / "java" / "tidemark"
    sources.mkdir(parents=True)
    (sources / "Broken.java").write_text("package tidemark;\npublic class Broken { int x = ; }\n")
    monkeypatch.setattr(procedures, "SOURCES", tmp_path / "java")
    monkeypatch.setenv("TIDEMARK_CACHE", str(tmp_path / "cache"))
    with pytest.raises(SparkSetupError, match=r"did not compile: File '.*Broken\.java', Line 2"):
        procedures.procedures_jar()
    assert not list((tmp_path / "cache").glob("*"))


def test_each_jobs_newest_partition_is_noted_for_status(spark, schemas) -> None:
    """`tidemark status` reads a published mart's newest rows from files: the publish notes each
    job's newest partition and its folder (src/tidemark/health/marts.py reads the note)."""
    from tidemark.health.marts import published_newest

    table, stage = schemas
    spark.sql(f"create table {table} using parquet partitioned by (job_id, slice) as "
              "select 1L as v, 'a' as job_id, 3 as slice union all select 1, 'b', 1")  # fmt: skip
    home = _home(spark, table)
    assert published_newest(home) is None  # built, never published: its folder says it all

    # A late row of job a, slice 1: slice 3 stays a's newest, in the folder it was built in.
    spark.sql(f"drop table if exists {stage}")
    location = home / "_tidemark_versions" / "v1"
    spark.sql(f"create table {stage} using parquet partitioned by (job_id, slice) "
              f"location '{location}' as select 2L as v, 'a' as job_id, 1 as slice")  # fmt: skip
    _publish(spark, table, stage, replace_all=False)
    assert published_newest(home) == {"a": home / "job_id=a" / "slice=3",
                                      "b": home / "job_id=b" / "slice=1"}  # fmt: skip

    spark.sql(f"drop table if exists {stage}")
    location = home / "_tidemark_versions" / "v2"
    spark.sql(f"create table {stage} using parquet partitioned by (job_id, slice) "
              f"location '{location}' as select 3L as v, 'b' as job_id, 2 as slice")  # fmt: skip
    _publish(spark, table, stage, replace_all=False)
    assert published_newest(home)["b"] == location / "job_id=b" / "slice=2"


def test_expire_drops_the_partitions_before_a_value_and_their_files_later(spark, schemas) -> None:
    """CALL tidemark_system.marts.expire (tidemark maintain, decision 0019): the partitions before
    the cutoff go in one catalog call, their folders after keep_ms like a publish's, and a job
    whose partitions all went leaves the newest-partition note."""
    from tidemark.health.marts import published_newest

    table, stage = schemas
    spark.sql(f"create table {table} using parquet partitioned by (job_id, hour_at) as "
              "select 1L as v, 'a' as job_id, '2026-01-01 00:00:00' as hour_at union all "
              "select 2, 'a', '2026-01-02 00:00:00' union all "
              "select 3, 'b', '2026-01-01 05:00:00'")  # fmt: skip
    home = _home(spark, table)
    spark.sql(f"drop table if exists {stage}")
    spark.sql(f"create table {stage} using parquet partitioned by (job_id, hour_at) location "
              f"'{home / '_tidemark_versions' / 'v1'}' as "
              "select 4L as v, 'a' as job_id, '2026-01-02 00:00:00' as hour_at")  # fmt: skip
    _publish(spark, table, stage, replace_all=False)
    assert set(published_newest(home)) == {"a", "b"}

    spark.sql(f"call tidemark_system.marts.expire('{table}', 'hour_at', '2026-01-02 00:00:00', "
              "3600000)")  # fmt: skip
    assert _rows(spark, table) == [(4, "a", "2026-01-02 00:00:00")]
    assert set(published_newest(home)) == {"a"}  # b had nothing left
    assert (home / "job_id=b").exists()  # kept for queries still reading it...
    time.sleep(0.01)
    spark.sql(f"call tidemark_system.marts.expire('{table}', 'hour_at', '2025-01-01 00:00:00', 0)")
    assert not (home / "job_id=b").exists()  # ...then gone, and its emptied parents with it
    assert _rows(spark, table) == [(4, "a", "2026-01-02 00:00:00")]
