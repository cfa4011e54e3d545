"""The Flink releases and Java runtimes the capture jar's tests run on, and what they download."""

from __future__ import annotations

import os
from pathlib import Path

CAPTURE = Path(__file__).resolve().parents[2] / "capture"

# The oldest and the newest supported release, as `make test-live` (decision 0020): between them
# both ends of every layout difference the jar handles (docs/flink-versions.md): no slot ring and
# no StartStopListener, the valve's channels in an array, Java 11 against 17 and 21.
# TIDEMARK_CAPTURE_VERSIONS (comma-separated) replaces them: `make test-live-all` runs every
# release, the 1.17 to 1.18 layout (a ring, no listener) and the build's own 1.20 included.
VERSIONS = tuple(
    v.strip()
    for v in os.environ.get("TIDEMARK_CAPTURE_VERSIONS", "1.15.4,2.3.0").split(",")
    if v.strip()
)
# Contract §6: one jar on the Java each release supports: 11 for every release, 17 and 21 from 1.20
# on (1.20.x and 2.x; 17 is also this machine's JDK, `java`). 11 and 21 are runtimes from
# PyPI (capture/java-runtime.sh).
RUNTIMES = [
    (v, j)
    for v in VERSIONS
    for j in (("17", "11", "21") if v.startswith(("1.20.", "2.")) else ("11",))
]


def downloads() -> list[list[str]]:
    """The commands that install those releases' jars and runtimes from PyPI into .cache/ (each
    does nothing when its install is complete, and waits for one under way)."""
    majors = sorted({java for _, java in RUNTIMES} - {"17"})
    return [
        *([str(CAPTURE / "flink-jars.sh"), v] for v in VERSIONS),
        *([str(CAPTURE / "java-runtime.sh"), m] for m in majors),
    ]
