"""What the session factory and the bronze views both need: ``TIDEMARK_DELTA`` and the set-up error.

The imports go one way: :mod:`tidemark.spark.session` imports :mod:`tidemark.spark.bronze`, and
both import this module, which imports neither.
"""

from __future__ import annotations

import os

DELTA_MODES = ("deltars", "native")


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
