"""The one Spark session factory, used by the CLI, dbt's ``session`` target, tests and server.

It starts Spark in local mode (unless ``TIDEMARK_SPARK_MASTER`` says otherwise) with everything
under ``TIDEMARK_LAKE``: the warehouse, the Hive metastore (embedded Derby) and the bronze tables,
which are exposed as views in the ``bronze`` database (Spark's global temporary database, renamed),
and it registers tidemark's Python UDFs. See docs/decisions/0002-one-spark-session-factory.md.

On a cluster (any master but ``local``/``local[...]``) it also ships the ``udfs`` package the
driver imports to the executors, zipped, as a Python file of the session: executors run the
driver's very code and need none of tidemark installed (docs/decisions/0010-spark-cluster.md).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import udfs
from tidemark.lake import Lake
from tidemark.spark.bronze import register_bronze
from tidemark.spark.procedures import CATALOG, CATALOG_CLASS, procedures_jar
from tidemark.spark.settings import DELTA_MODES as DELTA_MODES
from tidemark.spark.settings import (
    RESOURCES_DIR,
    SparkSetupError,
    archive_options,
    delta_mode,
    jvm_options,
    resources_folder,
)
from udfs.spark import register_udfs

LAKE_CONF = "spark.tidemark.lake"
DRIVER_CLASS_PATH = "spark.driver.extraClassPath"
STORE_VIEW_PLANS = "spark.sql.legacy.storeAnalyzedPlanForView"
_LOG4J = Path(__file__).with_name("log4j2.properties")


def check_java() -> str:
    """The ``java`` command to run, or a clear error when Java 17+ is missing."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    hint = (
        "tidemark runs Spark 4, which needs Java 17 or newer: install it "
        "(Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
    )
    if not java or not Path(java).exists():
        raise SparkSetupError(f"Java was not found. {hint}")
    try:
        shown = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        ).stderr
    except OSError as exc:
        raise SparkSetupError(f"{java} could not be run ({exc}). {hint}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if not match:
        raise SparkSetupError(f"{java} did not report a version. {hint}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8" style
        major = int(match.group(2))
    if major < 17:
        raise SparkSetupError(f"{java} is Java {major}. {hint}")
    return java


def spark_default(name: str) -> str:
    """Setting ``name`` of Spark's own ``spark-defaults.conf``, which a session setting of that
    key would otherwise replace ("" when it has none)."""
    folder = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None
    )
    defaults = Path(folder) / "spark-defaults.conf" if folder else None
    if defaults is None or not defaults.is_file():
        return ""
    for line in defaults.read_text().splitlines():
        key, _, value = line.strip().partition(" ")
        if key == name:
            return value.strip()
    return ""


def with_jar(class_path: str, jar: Path) -> str:
    """``class_path`` (a driver class path, entries separated by ``:``) with ``jar`` added."""
    return os.pathsep.join([*(e for e in class_path.split(os.pathsep) if e.strip()), str(jar)])


def is_local_master(master: str) -> bool:
    """Whether ``master`` runs the executors inside the driver's JVM (``local``, ``local[4]``, ...).

    ``local-cluster[...]`` is not local: its executors are processes of their own.
    """
    return master == "local" or master.startswith("local[")


def spark_conf(lake: Lake) -> dict[str, str]:
    """The Spark settings for ``lake`` (static ones included, so they apply at start-up).

    Settings of the cluster itself (executor memory and cores, queues, jars, ...) are not here:
    they go in ``$SPARK_CONF_DIR/spark-defaults.conf``, which Spark reads at start-up too.
    """
    java_options = (
        f"-Dderby.system.home={lake.logs} -Dlog4j2.configurationFile=file:{_LOG4J} {jvm_options()} "
        f"{archive_options(lake)}"
    ).strip()
    master = os.environ.get("TIDEMARK_SPARK_MASTER", "local[*]")
    conf = {
        "spark.master": master,
        "spark.app.name": "tidemark",
        LAKE_CONF: str(lake.root),
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": lake.warehouse.as_uri(),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={lake.metastore_db};create=true"
        ),
        # Hive's session makes a folder for downloaded resources at start, by default a new
        # /tmp/<session id>_resources, and Spark never closes that session: every run left one
        # behind (SPARK-51571). One folder in the lake instead, shared and reused (the Thrift
        # server gives each client session a folder of its own inside it: tidemark.serve).
        f"spark.hadoop.{RESOURCES_DIR}": str(resources_folder(lake)),
        "spark.driver.extraJavaOptions": java_options,
        # Bronze tables appear as views in this database (see register_bronze).
        "spark.sql.globalTempDatabase": "bronze",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": os.environ.get("TIDEMARK_SHUFFLE_PARTITIONS", "8"),
        "spark.driver.memory": os.environ.get("TIDEMARK_DRIVER_MEMORY", "4g"),
        "spark.ui.enabled": "true" if os.environ.get("TIDEMARK_SPARK_UI") == "1" else "false",
        "spark.ui.showConsoleProgress": "false",
        # dbt-spark turns ANSI mode off in its sessions; the CLI and tests use the same semantics.
        "spark.sql.ansi.enabled": "false",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.pythonUDTF.arrow.enabled": "true",
        # Compiled query code is cached by its source. One dbt build runs about 135 queries of
        # several stages each, so Spark's default of 100 entries recompiled nearly every stage on
        # every run of a long-lived session (tidemark run, serve): 2,000 keep a build's classes
        # (docs/decisions/0007-warm-schedule.md).
        "spark.sql.codegen.cache.maxEntries": "2000",
        # ... but the cache is keyed by the source, and Spark names each generated class after its
        # stage's number, which adaptive execution hands out in the order stages are planned: the
        # same query compiled again under another name (21 to 49 classes a build with the same
        # SQL, 0 to 4 without the number; docs/decisions/0007-warm-schedule.md).
        "spark.sql.codegen.useIdInClassName": "false",
        # tidemark's stored procedures (CALL tidemark_system.marts.publish, ...), which the dbt
        # materializations publish marts with; their jar joins the driver's class path at the
        # start (spark_session).
        f"spark.sql.catalog.{CATALOG}": CATALOG_CLASS,
    }
    # Local mode talks to itself only; executors elsewhere must reach the driver at an address
    # of theirs: SPARK_LOCAL_IP if set, else Spark's own choice (the host name's address).
    address = os.environ.get("SPARK_LOCAL_IP") or ("127.0.0.1" if is_local_master(master) else "")
    if address:
        conf["spark.driver.host"] = address
        conf["spark.driver.bindAddress"] = address
    if delta_mode() == "native":
        conf["spark.sql.extensions"] = "io.delta.sql.DeltaSparkSessionExtension"
        conf["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    return conf


def spark_session(lake: Lake | None = None, extra_conf: dict[str, str] | None = None):
    """Start (or return) the process's Spark session for ``lake`` (default: ``TIDEMARK_LAKE``).

    A process serves one lake: asking for another one while a session runs is an error, because
    Spark's warehouse and metastore are fixed when it starts. ``extra_conf`` adds settings for
    the start (the Thrift server's, for instance); it has no effect on a running session.
    """
    lake = lake or Lake.from_env()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.conf.get(LAKE_CONF, None)
        if running != str(lake.root):
            raise SparkSetupError(
                f"this process's Spark session serves the lake {running}, not {lake.root}: "
                "one process, one TIDEMARK_LAKE"
            )
        return active

    java = check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if is_local_master(os.environ.get("TIDEMARK_SPARK_MASTER", "local[*]")):
        # This also silences Spark's "resolves to loopback" warning.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    for folder in (lake.warehouse, lake.metastore, lake.logs):
        folder.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.enableHiveSupport()
    conf = {**spark_conf(lake), **(extra_conf or {})}
    # The procedures' jar goes on the driver's own class path, not in spark.jars: Spark loads
    # spark.jars through a class loader that every Thrift (BI) session's Hive state holds as its
    # parent, and Hive closes that chain of loaders when the session ends (SessionState.close,
    # JavaUtils.closeClassLoadersTo): after a BI client disconnected, the next session that
    # loaded the catalog failed with "Cannot find catalog plugin class" (issue 64). The class
    # path's loader is where Hive stops closing. See docs/decisions/0015-consistent-reads.md.
    extra = conf.get(DRIVER_CLASS_PATH) or spark_default(DRIVER_CLASS_PATH)
    conf[DRIVER_CLASS_PATH] = with_jar(extra, procedures_jar(java))
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        if "JAVA_GATEWAY_EXITED" not in str(exc):
            raise
        raise SparkSetupError(
            "Spark's JVM exited while starting (Java printed why, above); check the JVM options "
            f"{jvm_options()!r} (TIDEMARK_JAVA_OPTIONS) and TIDEMARK_DRIVER_MEMORY"
        ) from exc
    spark.sparkContext.setLogLevel(os.environ.get("TIDEMARK_SPARK_LOG_LEVEL", "WARN"))
    # In this session only (new sessions start from Spark's configuration): a temporary view
    # keeps its analysed plan instead of its SQL text analysed again wherever it is read. dbt's
    # unit tests (macros/materializations/unit.sql) and dbt-spark's incremental models make a
    # temporary view of a model and then read it, so Spark analysed each such model twice
    # (docs/decisions/0014-what-make-test-runs.md). The Thrift server, whose BI tools share this
    # session, sets it back (serve.py): their temporary views read the marts as they are.
    spark.conf.set(STORE_VIEW_PLANS, "true")
    # PySpark logs every failed statement's whole JVM plan and stack as JSON before raising it;
    # the exception itself (what dbt and the CLI show) says what went wrong.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    if delta_mode() == "native":
        _check_native_delta(spark)
    _check_metastore(spark, lake)
    if not is_local_master(spark.sparkContext.master):
        ship_udfs(spark)
    register_udfs(spark)
    register_bronze(spark, lake)
    return spark


def ship_udfs(spark) -> Path | None:
    """Zip the ``udfs`` package this process imports and add it to ``spark``'s Python files.

    Every Python UDF and UDTF registered afterwards carries the zip: Spark copies it to each
    executor and puts it first on its Python workers' path, so they import the driver's very
    ``udfs`` whatever their own Python has installed (nothing of tidemark is needed there). The zip
    lives in a temporary folder for the life of the process. Returns its path, or None when
    ``udfs`` is itself imported from an archive (``spark-submit --py-files``), which Spark ships
    already.
    """
    package = Path(udfs.__file__).parent
    if not package.is_dir():
        return None
    folder = Path(tempfile.mkdtemp(prefix="tidemark-udfs-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    archive = folder / "udfs.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for source in sorted(package.rglob("*.py")):
            zipped.write(source, Path("udfs") / source.relative_to(package))
    spark.sparkContext.addPyFile(str(archive))
    return archive


def _check_metastore(spark, lake: Lake) -> None:
    try:
        spark.sql("show databases").collect()
    except Exception as exc:
        text = str(exc)
        if "Derby" in text or "metastore" in text.lower() or "SessionHiveMetaStoreClient" in text:
            spark.stop()
            raise SparkSetupError(
                f"the lake's metastore ({lake.metastore}) is in use by another process, such as "
                "`tidemark serve` or another dbt run: stop it, or run dbt against the server "
                "with `dbt build --target thrift`"
            ) from exc
        raise


def _check_native_delta(spark) -> None:
    try:
        spark._jvm.java.lang.Class.forName("io.delta.sql.DeltaSparkSessionExtension")
    except Exception as exc:
        spark.stop()
        raise SparkSetupError(
            "TIDEMARK_DELTA=native needs Delta's Spark jars (Delta 4.4.x for Spark 4.2, Scala "
            "2.13) on the classpath, e.g. spark.jars.packages=io.delta:delta-spark_4.2_2.13:4.4.1 "
            "on a cluster that can reach Maven; unset TIDEMARK_DELTA to read bronze through "
            "delta-rs"
        ) from exc
