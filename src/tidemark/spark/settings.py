"""Spark settings read from the environment (``TIDEMARK_DELTA``, ``TIDEMARK_JAVA_OPTIONS``), the
set-up error, which the session factory and the bronze views both need, and which dbt commands
get the embedded session (the dbt plugin's rule).

The imports go one way: :mod:`tidemark.spark.session` imports :mod:`tidemark.spark.bronze`, and
both import this module, which imports neither.
"""

from __future__ import annotations

import os
from pathlib import Path

from tidemark.lake import Lake

DELTA_MODES = ("deltars", "native")
JVM_ARCHIVE = "TIDEMARK_JVM_ARCHIVE"
RESOURCES_DIR = "hive.downloaded.resources.dir"
LOCAL_SCRATCH_DIR = "hive.exec.local.scratchdir"
# Java says nothing of an archive it cannot use (another Java or class path): it falls back to
# loading the classes from the jars, which is only slower.
QUIET_ARCHIVE = "-Xlog:cds=off -Xlog:cds+dynamic=off"
JVM_OPTIONS = "-XX:+UseParallelGC"
"""The driver JVM's default options (``TIDEMARK_JAVA_OPTIONS`` replaces them): the parallel
collector, which spends less CPU than Java 17's default G1 on two cores (docs/decisions/0012)."""


class SparkSetupError(RuntimeError):
    """Spark cannot be started as asked; the message says what to do."""


def delta_mode() -> str:
    """How Spark reads bronze: ``deltars`` (default) or ``native`` (``TIDEMARK_DELTA``)."""
    mode = os.environ.get("TIDEMARK_DELTA", "deltars").strip().lower()
    if mode not in DELTA_MODES:
        raise SparkSetupError(
            f"TIDEMARK_DELTA={mode!r} is not known: use 'deltars' (default, Delta read through "
            "delta-rs) or 'native' (Delta's own Spark jars must be on the classpath)"
        )
    return mode


def jvm_options() -> str:
    """The driver JVM's options: ``TIDEMARK_JAVA_OPTIONS``, else :data:`JVM_OPTIONS`.

    In local mode the driver's JVM is the whole of Spark, executors included.
    """
    return os.environ.get("TIDEMARK_JAVA_OPTIONS", JVM_OPTIONS).strip()


def resources_folder(lake: Lake) -> Path:
    """Where Hive keeps a session's downloaded resources (``RESOURCES_DIR``: ADD JAR, ADD FILE)."""
    return lake.metastore / "downloaded-resources"


def local_scratch_folder(lake: Lake) -> Path:
    """Hive's local scratch folder (``LOCAL_SCRATCH_DIR``), made here: a Thrift session looks for
    its ``.pipeout`` files there as it closes (it writes none)."""
    folder = lake.metastore / "local-scratch"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def archive_path(lake: Lake) -> Path | None:
    """The class archive Spark's driver maps in (tidemark.spark.jvm_archive writes it):
    ``TIDEMARK_JVM_ARCHIVE``, else the lake's ``jvm/spark-classes.jsa``; None when that is
    ``off``."""
    setting = os.environ.get(JVM_ARCHIVE, "").strip()
    if setting.lower() == "off":
        return None
    return Path(setting).absolute() if setting else lake.root / "jvm" / "spark-classes.jsa"


def archive_options(lake: Lake) -> str:
    """The driver's options that map the class archive in, or "" when there is none."""
    path = archive_path(lake)
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET_ARCHIVE}"


DBT_PROJECT = "tidemark"
# dbt commands that run SQL (flags.WHICH): only these get a Spark session. Anything else, dbt's
# own `parse`, `deps`, `ls` or a tool that loads the project (MetricFlow's `mf`), does not.
DBT_SQL_COMMANDS = frozenset(
    {
        "build",
        "run",
        "test",
        "seed",
        "snapshot",
        "show",
        "compile",
        "debug",
        "run-operation",
        "freshness",
        "generate",
        "retry",
        "clone",
    }
)


def needs_embedded_spark(project_name: str, command: str | None, credentials: object) -> bool:
    """Whether this dbt invocation should get tidemark's embedded Spark session (the dbt plugin,
    ``src/dbt_tidemark.py``, asks; here because importing dbt takes seconds, and tests need not)."""
    if project_name != DBT_PROJECT or command not in DBT_SQL_COMMANDS:
        return False
    kind = getattr(credentials, "type", None)
    method = getattr(credentials, "method", None)
    return kind == "spark" and str(getattr(method, "value", method)) == "session"
