"""Spark settings read from the environment (``TIDEMARK_DELTA``, ``TIDEMARK_JAVA_OPTIONS``) and
the set-up error, which the session factory and the bronze views both need.

The imports go one way: :mod:`tidemark.spark.session` imports :mod:`tidemark.spark.bronze`, and
both import this module, which imports neither.
"""

from __future__ import annotations

import os
from pathlib import Path

from tidemark.lake import Lake

DELTA_MODES = ("deltars", "native")
JVM_ARCHIVE = "TIDEMARK_JVM_ARCHIVE"
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
