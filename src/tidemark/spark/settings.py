"""Spark settings read from the environment (``TIDEMARK_DELTA``, ``TIDEMARK_JAVA_OPTIONS``) and
the set-up error, which the session factory and the bronze views both need.

The imports go one way: :mod:`tidemark.spark.session` imports :mod:`tidemark.spark.bronze`, and
both import this module, which imports neither.
"""

from __future__ import annotations

import os

DELTA_MODES = ("deltars", "native")
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
