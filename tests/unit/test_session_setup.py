"""Spark set-up: failures reach the user as one clear sentence, and what the session factory sets
and ships to a cluster is right (no Spark is started here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tidemark.lake import Lake
from tidemark.spark import session
from tidemark.spark.session import SparkSetupError, check_java, delta_mode, spark_conf


def test_missing_java_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    with pytest.raises(SparkSetupError, match="Java 17 or newer"):
        check_java()


def test_old_java_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "jdk" / "bin" / "java"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    with pytest.raises(SparkSetupError, match="is Java 11"):
        check_java()


def test_java_on_this_machine_is_17_or_newer() -> None:
    assert Path(check_java()).name == "java"


def test_the_procedures_jar_joins_the_drivers_class_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's spark.driver.extraClassPath replaces spark-defaults.conf's: tidemark's jar is
    added to it (the class path, not spark.jars, which a closing BI session closes: issue 64)."""
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert session.spark_default(session.DRIVER_CLASS_PATH) == ""
    (tmp_path / "spark-defaults.conf").write_text(
        "spark.executor.memory 1g\nspark.driver.extraClassPath  /opt/a.jar:/opt/b.jar\n"
    )
    assert session.spark_default(session.DRIVER_CLASS_PATH) == "/opt/a.jar:/opt/b.jar"
    jar = tmp_path / "p.jar"
    assert session.with_jar("/opt/a.jar:/opt/b.jar", jar) == f"/opt/a.jar:/opt/b.jar:{jar}"
    assert session.with_jar("", jar) == str(jar)


def test_the_procedures_jar_is_named_after_its_sources_and_pyspark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tidemark.spark import procedures

    monkeypatch.setenv("TIDEMARK_CACHE", str(tmp_path / "cache"))
    shipped = procedures.jar_path()
    assert shipped.parent == tmp_path / "cache" and shipped.suffix == ".jar"
    sources = tmp_path / "java"
    (sources / "tidemark").mkdir(parents=True)
    (sources / "tidemark" / "A.java").write_text("class A {}")
    monkeypatch.setattr(procedures, "SOURCES", sources)
    first = procedures.jar_path()
    (sources / "tidemark" / "A.java").write_text("class A { int a; }")
    assert first != procedures.jar_path() != shipped


def test_unknown_delta_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDEMARK_DELTA", "parquet")
    with pytest.raises(SparkSetupError, match="TIDEMARK_DELTA='parquet' is not known"):
        delta_mode()


def test_everything_lives_under_the_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIDEMARK_DELTA", raising=False)
    lake = Lake.from_env(tmp_path / "lake")
    conf = spark_conf(lake)
    assert conf["spark.sql.warehouse.dir"] == (tmp_path / "lake" / "warehouse").as_uri()
    assert (
        str(tmp_path / "lake" / "metastore") in conf["spark.hadoop.javax.jdo.option.ConnectionURL"]
    )
    assert conf["spark.sql.globalTempDatabase"] == "bronze"
    assert "spark.sql.extensions" not in conf


def test_native_delta_mode_configures_delta_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDEMARK_DELTA", "native")
    conf = spark_conf(Lake.from_env(tmp_path))
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.catalog.spark_catalog"].endswith("DeltaCatalog")


def test_empty_lake_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDEMARK_LAKE", " ")
    with pytest.raises(ValueError, match="TIDEMARK_LAKE is set but empty"):
        Lake.from_env()


def test_the_pure_cores_do_not_import_pyspark() -> None:
    code = (
        "import sys, tidemark.ingest.landing, tidemark.lake, udfs.valve;"
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert session.LAKE_CONF == "spark.tidemark.lake"


def test_driver_is_bound_to_loopback_only_in_local_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Local mode talks to itself; a cluster's executors must reach the driver from elsewhere."""
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    lake = Lake.from_env(tmp_path)
    monkeypatch.setenv("TIDEMARK_SPARK_MASTER", "local[2]")
    assert spark_conf(lake)["spark.driver.host"] == "127.0.0.1"
    monkeypatch.setenv("TIDEMARK_SPARK_MASTER", "yarn")
    assert "spark.driver.host" not in spark_conf(lake)  # Spark's own choice: the host's address
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.0.0.7")
    assert spark_conf(lake)["spark.driver.bindAddress"] == "10.0.0.7"
    assert session.is_local_master("local") and session.is_local_master("local[*]")
    assert not session.is_local_master("local-cluster[2,1,1024]")  # executors of their own


def test_shipped_udfs_zip_is_the_whole_package_and_imports_alone() -> None:
    """The zip a cluster's executors get holds every module of ``udfs`` and imports on a Python
    that has nothing else: no site-packages, so no editable install of tidemark either."""
    import zipfile

    import udfs

    class Context:
        def addPyFile(self, path: str) -> None:
            self.added = path

    class Session:
        sparkContext = Context()

    archive = session.ship_udfs(Session())
    assert archive is not None and Session.sparkContext.added == str(archive)
    package = Path(udfs.__file__).parent
    assert sorted(zipfile.ZipFile(archive).namelist()) == sorted(
        f"udfs/{p.relative_to(package)}" for p in package.rglob("*.py")
    )
    code = (
        f"import sys; sys.path.insert(0, {str(archive)!r}); import udfs.spark, udfs.task_feed;"
        "print(udfs.spark.__file__)"
    )
    shown = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == str(archive / "udfs" / "spark.py")


def test_jvm_options_default_to_the_parallel_collector_and_can_be_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIDEMARK_JAVA_OPTIONS", raising=False)
    monkeypatch.setenv("TIDEMARK_JVM_ARCHIVE", "off")
    options = spark_conf(Lake.from_env(tmp_path))["spark.driver.extraJavaOptions"].split()
    assert options[-1] == "-XX:+UseParallelGC"
    assert any(o.startswith("-Dderby.system.home=") for o in options)

    monkeypatch.setenv("TIDEMARK_JAVA_OPTIONS", " -XX:+UseG1GC -Xss4m ")
    options = spark_conf(Lake.from_env(tmp_path))["spark.driver.extraJavaOptions"].split()
    assert options[-2:] == ["-XX:+UseG1GC", "-Xss4m"] and "-XX:+UseParallelGC" not in options

    monkeypatch.setenv("TIDEMARK_JAVA_OPTIONS", "")
    options = spark_conf(Lake.from_env(tmp_path))["spark.driver.extraJavaOptions"].split()
    assert not any(o.startswith("-XX:") for o in options)


def test_the_class_archive_is_mapped_in_only_when_there_is_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lake's own archive by default, TIDEMARK_JVM_ARCHIVE's file instead, none when off or
    missing (Java ignores an archive it cannot use, so a stale one costs speed, not a start)."""
    lake = Lake.from_env(tmp_path / "lake")

    def archive_options() -> list[str]:
        options = spark_conf(lake)["spark.driver.extraJavaOptions"].split()
        return [o for o in options if "SharedArchiveFile" in o or o.startswith("-Xlog:cds")]

    monkeypatch.delenv("TIDEMARK_JVM_ARCHIVE", raising=False)
    assert archive_options() == []  # not written yet
    own = lake.root / "jvm" / "spark-classes.jsa"
    own.parent.mkdir(parents=True)
    own.write_bytes(b"archive")
    assert archive_options() == [
        f"-XX:SharedArchiveFile={own}",
        "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off",
    ]

    shared = tmp_path / "machine.jsa"
    monkeypatch.setenv("TIDEMARK_JVM_ARCHIVE", str(shared))
    assert archive_options() == []
    shared.write_bytes(b"archive")
    assert archive_options()[0] == f"-XX:SharedArchiveFile={shared}"

    monkeypatch.setenv("TIDEMARK_JVM_ARCHIVE", "OFF")
    assert archive_options() == []


def test_no_archive_is_written_when_it_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tidemark.spark.jvm_archive import create

    monkeypatch.setenv("TIDEMARK_JVM_ARCHIVE", "off")
    with pytest.raises(SparkSetupError, match="TIDEMARK_JVM_ARCHIVE=off: no archive to write"):
        create(Lake.from_env(tmp_path / "lake"))


def test_generated_classes_are_named_without_their_stage_number(tmp_path: Path) -> None:
    """Spark caches compiled query code by its source; with the stage number in the class name
    (Spark's default) adaptive execution's numbering made the same query compile again on every
    build of a warm session (decision 0007)."""
    conf = spark_conf(Lake.from_env(tmp_path))
    assert conf["spark.sql.codegen.useIdInClassName"] == "false"
    assert int(conf["spark.sql.codegen.cache.maxEntries"]) >= 2000
