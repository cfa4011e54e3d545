"""A class-data-sharing archive of the classes Spark's driver loads: Spark starts in half the time.

Every ``dbt`` and ``tidemark`` command starts a JVM that loads some 20,000 classes (Spark, Hive's
metastore, Derby, Parquet) before it runs a query: 17 to 20 s on a two-core machine. Java 17 can
write the classes one run loaded to an archive (``-XX:ArchiveClassesAtExit``) and map them into
later runs (``-XX:SharedArchiveFile``): the same start then takes 10 s. See
docs/decisions/0013-jvm-class-archive.md.

``tidemark jvm-archive`` writes the archive for a lake (:func:`create`); every Spark session of
that lake then maps it in (``tidemark.spark.settings.archive_options``). ``TIDEMARK_JVM_ARCHIVE``
names another file (one archive can serve every lake of a machine) or ``off``. An archive made
by another Java, Spark or class path is ignored by Java itself, silently: the start is as slow as
without one, never wrong.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pyspark import SparkContext

from tidemark.lake import Lake
from tidemark.spark.session import spark_conf, spark_session
from tidemark.spark.settings import JVM_ARCHIVE, QUIET_ARCHIVE, SparkSetupError, archive_path

# What the archiving run does, so that the classes of a dbt build are loaded: the metastore,
# the bronze views through delta-rs, a partitioned Parquet table written and read back, joins,
# windows and aggregates planned, compiled and run.
WORKLOAD = (
    "show databases",
    "create database if not exists tidemark_archive",
    """create table tidemark_archive.seconds using parquet partitioned by (day) as
    select t.job_id, t.vertex_id, t.timer, cast(t.ts_ms div 1000 as bigint) as second,
           count(*) over (partition by t.vertex_id, t.subtask_index order by t.seq) as n,
           cast('2026-01-01' as date) as day
    from bronze.timer_events t left join bronze.vertices v using (job_id, vertex_id)""",
    """insert overwrite tidemark_archive.seconds partition (day)
    select id % 7 as job_id, cast(id as string), 'idle', id div 1000, count(*) over (
             partition by id % 3 order by id rows between 1 preceding and current row),
           date_add(cast('2026-01-01' as date), cast(id % 2 as int))
    from range(5000)""",
    """select job_id, day, sum(n), max(second), percentile_approx(n, 0.5)
    from tidemark_archive.seconds group by job_id, day order by 1""",
    "drop database tidemark_archive cascade",
)


def create(lake: Lake, path: Path | None = None) -> Path:
    """Write the archive for ``lake`` (or at ``path``): start Spark in a scratch lake of its own,
    run :data:`WORKLOAD`, stop, and wait for the JVM to write what it loaded.

    The JVM writes to a temporary file next to ``path``, which replaces ``path`` only when whole,
    so sessions starting meanwhile use the old archive or none. Must run in a process that has no
    Spark session yet (the archive is written when that JVM exits).
    """
    target = path or archive_path(lake)
    if target is None:
        raise SparkSetupError(f"{JVM_ARCHIVE}=off: no archive to write")
    if SparkContext._active_spark_context is not None:
        raise SparkSetupError("a JVM archive must be written by a process without a Spark session")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tidemark-jvm-archive-") as scratch:
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        partial.unlink(missing_ok=True)
        scratch_lake = Lake.from_env(Path(scratch) / "lake")
        options = spark_conf(scratch_lake)["spark.driver.extraJavaOptions"].split()
        # No archive mapped in while writing one: it would hold only what that one lacks.
        kept = [o for o in options if not o.startswith("-XX:SharedArchiveFile=")]
        dump = f"{' '.join(kept)} -XX:ArchiveClassesAtExit={partial} {QUIET_ARCHIVE}"
        try:
            spark = spark_session(scratch_lake, {"spark.driver.extraJavaOptions": dump})
            for statement in WORKLOAD:
                spark.sql(statement).collect()
            spark.stop()
        finally:
            _stop_jvm()
        if not partial.is_file() or partial.stat().st_size == 0:
            partial.unlink(missing_ok=True)
            raise SparkSetupError(
                f"Java wrote no class archive ({partial}): its -XX:ArchiveClassesAtExit needs "
                "Java 13 or newer and a JVM that exits normally"
            )
        os.replace(partial, target)
    return target


def _stop_jvm(timeout_s: float = 300) -> None:
    """End this process's Spark JVM and wait for it: it writes the archive as it exits.

    PySpark's gateway JVM exits when its standard input closes (when Python exits, usually).
    """
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if gateway is None or process is None:
        return
    gateway.shutdown()
    if process.stdin is not None:
        process.stdin.close()
    process.wait(timeout=timeout_s)
    SparkContext._gateway = None
    SparkContext._jvm = None
