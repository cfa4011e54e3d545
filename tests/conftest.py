"""Shared fixtures: one Spark session for the whole run, and a fresh lake per test.

`make test` runs the suite on two pytest-xdist workers (`-n 2`). The files whose tests share an
expensive session fixture or a build folder form one group that runs on one worker
(`GROUPS`): the demo lake's readers, dbt's unit and bronze tests on a lake without events, the
Spark session's users, the generator's tests (its scenarios generated once), and the Flink tests
(the capture jar's and the live job's, which build into capture/build/). Every other test is
scheduled on its own. The groups are given by file, because xdist's scheduler sees node ids
only; a check at collection fails the run when a test uses a shared fixture outside its group's
files.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidemark.lake import Lake
from tidemark.spark.settings import JVM_OPTIONS

# Every JVM of the suite (Spark in this process, in the warm workers and in each tidemark and dbt
# command) lives for seconds to a few minutes, over small data, and the suite is CPU-bound on two
# cores: C1 alone compiles, which costs a third less CPU than C1 and C2 together (the demo lake's
# `dbt build`: 76.9 against 116.1 CPU-seconds). The product keeps C2, which pays for itself in
# long-lived processes (decision 0012). C1 alone reserves only 48 MB for compiled code, which
# Spark's generated code fills: Java then stops compiling ("CodeCache is full. Compiler has been
# disabled") and runs the rest interpreted, and a build died that way. So the reserve is Java's
# usual 240 MB.
os.environ.setdefault(
    "TIDEMARK_JAVA_OPTIONS",
    f"{JVM_OPTIONS} -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m",
)

# Every Spark JVM of the suite maps in one archive of Spark's classes (tidemark.spark.jvm_archive):
# a start takes about 10 s instead of 18 on two cores, and the suite starts about a dozen. It is
# .cache/jvm/spark-KEY.jsa, KEY naming this Java, the pinned PySpark and the procedures' sources,
# the file `make demo` writes (the Makefile's JVM_ARCHIVE names it alike). Java's compiler and
# collector options do not matter to it (Java maps an archive written under others). When it is
# missing, it is written in the background while the first tests run (JVMs that start before it
# is whole start without it; FIRST below runs the tests that start none first). A run of only
# pure tests (PURE, `make test-unit`) writes none; TIDEMARK_JVM_ARCHIVE=off or a path of your
# own overrides.
ROOT = Path(__file__).resolve().parents[1]


def archive_for_this_machine() -> str:
    """The archive's path for this Java and PySpark; "off" without Java (the tests that need
    Spark then fail with tidemark's own message, which says what to install)."""
    from importlib.metadata import version

    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    except OSError:
        return "off"
    # As the Makefile's `{ java -version 2>&1; grep '^pyspark==' constraints.txt; cat ...java; }`:
    # the procedures' jar is on the driver's class path, which an archive must match.
    key = f"{java.stdout}{java.stderr}pyspark=={version('pyspark')}\n"
    sources = sorted(
        (ROOT / "src" / "tidemark" / "spark" / "java" / "tidemark" / "spark").glob("*.java")
    )
    key += "".join(source.read_text() for source in sources)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return str(ROOT / ".cache" / "jvm" / f"spark-{digest}.jsa")


if "TIDEMARK_JVM_ARCHIVE" not in os.environ:
    os.environ["TIDEMARK_JVM_ARCHIVE"] = archive_for_this_machine()
_preparing: list[subprocess.Popen] = []

# Test files that start no JVM and run no dbt: a run of only these prepares nothing.
PURE = ("tests/unit/", "tests/live/test_matching.py")


def _named(config: pytest.Config) -> list[Path]:
    return [Path(arg.split("::")[0]).resolve() for arg in config.args]


def _only_pure(config: pytest.Config) -> bool:
    pure = [(ROOT / path).resolve() for path in PURE]
    return all(any(path.is_relative_to(p) for p in pure) for path in _named(config))


def _runs_capture_tests(config: pytest.Config) -> bool:
    capture = ROOT / "tests" / "capture"
    return any(capture.is_relative_to(p) or p.is_relative_to(capture) for p in _named(config))


def pytest_configure(config: pytest.Config) -> None:
    """On the controller (or a run without workers), unless it runs only pure tests: start
    writing the JVM archive if it is missing, dbt's parse of the project
    (tests/e2e/harness.py: ``saved_parse``) and, for the capture tests, installing the Flink
    releases and Java runtimes they run on (the first run of a clone downloads about 640 MB from
    PyPI: the first capture test waited about 40 s for it otherwise), all in the background
    while the workers collect."""
    if hasattr(config, "workerinput") or _only_pure(config):
        return
    python = Path(sys.executable)
    parse = [python, "-m", "tests.e2e.harness"]
    _preparing.append(subprocess.Popen(parse, cwd=ROOT, start_new_session=True))
    if _runs_capture_tests(config):
        from tests.capture.releases import downloads

        script = "; ".join(shlex.join(command) + " >/dev/null" for command in downloads())
        (ROOT / ".cache").mkdir(exist_ok=True)
        with open(ROOT / ".cache" / "downloads.log", "w") as log:
            _preparing.append(
                subprocess.Popen(["bash", "-c", script], stderr=log, start_new_session=True)
            )
    archive = Path(os.environ["TIDEMARK_JVM_ARCHIVE"])
    if archive.name == "off" or archive.exists():
        return
    archive.parent.mkdir(parents=True, exist_ok=True)
    for partial in archive.parent.glob(f".{archive.name}.*.partial"):  # of a run cut short
        partial.unlink()
    with open(f"{archive}.log", "w") as log:
        _preparing.append(
            subprocess.Popen(
                [str(python.with_name("tidemark")), "jvm-archive", "--out", archive],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "TIDEMARK_LAKE": str(archive.parent / "lake")},
                start_new_session=True,
            )
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    """A run shorter than the preparations stops them (the archive's JVM included) before they
    write: the next run starts them again."""
    for process in _preparing:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(60)


GROUPS = {
    "flink": ("tests/capture/", "tests/live/"),
    "demo": tuple(
        f"tests/e2e/test_{name}.py"
        for name in (
            "analysis",
            "gauges_backpressure",
            "gauges_reference",
            "pipeline",
            "report",
            "watermarks",
            "health",
            # Last: their Thrift server stops the lake's warm worker (Derby admits one process),
            # and test_serve stops the server.
            "metric_views",
            "serve",
        )
    ),
    # dbt's unit tests and a bad-bronze test on one lake without events, one warm worker.
    "scratch": ("tests/e2e/test_dbt_tests.py",),
    "spark": ("tests/spark/",),
    "generate": ("tests/unit/test_generate.py",),
}
# The session fixture each group exists for (the Flink group shares build folders instead).
SHARED_FIXTURES = {"demo_lake": "demo", "spark": "spark", "live": "flink", "runs": "generate"}


def group_of(nodeid: str) -> str | None:
    for group, prefixes in GROUPS.items():
        if nodeid.startswith(prefixes):
            return group
    return None


# The order units of work are handed out in: the longest first, each starting its one warm JVM
# at once (`make demo` wrote the JVM archive they map): the demo group (one worker, some 400 s),
# then dbt's unit tests' lake (the other worker, some 200 s); then the generator's group, the
# pure tests and the Flink group, the Spark group and the command-line tests, then the rest, in
# collection order, to whichever worker is free. xdist's own order (most tests first) put the
# generator's group before the demo group on one worker, which then finished a minute after
# the other.
FIRST = (*GROUPS["demo"], *GROUPS["scratch"], *GROUPS["generate"], *PURE, *GROUPS["flink"],
         *GROUPS["spark"], "tests/e2e/test_cli.py")  # fmt: skip


def _rank(item: pytest.Item) -> int:
    return next((i for i, prefix in enumerate(FIRST) if item.nodeid.startswith(prefix)), len(FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: collection order within a rank
    strays = [
        f"{item.nodeid} uses {fixture}: add its file to GROUPS[{group!r}] in tests/conftest.py"
        for item in items
        for fixture, group in SHARED_FIXTURES.items()
        if fixture in getattr(item, "fixturenames", ()) and group_of(item.nodeid) != group
    ]
    if strays:
        raise pytest.UsageError("\n".join(strays))


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Each group of GROUPS is one unit of work; every other test is a unit of its own. Units
    are handed out in collection order (FIRST), not xdist's most-tests-first."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid) or nodeid

    return GroupScheduling(config, log)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    """A lake of the test's own: bronze, quarantine and logs under the test's temp dir."""
    return Lake.from_env(tmp_path / "lake")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The suite's one Spark session (UTC, few shuffle partitions, UI off).

    Its warehouse and metastore sit in a lake of the session's own; tests that need bronze views
    of their own lake call ``tidemark.spark.bronze.register_bronze(spark, lake)``.
    """
    os.environ.setdefault("TIDEMARK_SHUFFLE_PARTITIONS", "2")
    os.environ.setdefault("TIDEMARK_DRIVER_MEMORY", "2g")
    from tidemark.spark.session import spark_session

    session = spark_session(Lake.from_env(tmp_path_factory.mktemp("suite") / "lake"))
    yield session
    session.stop()
