"""The live test job: build it per Flink version, run it in a local MiniCluster, poll its REST API.

The job (tests/live/job/LiveJob.java, or the SQL job LiveSqlJob.java: ``shape="sql"``, which
PyFlink submits from live_sql_job.py on 1.19 and newer: :func:`sql_api`) is
compiled with ``javac`` against the jars that ``capture/flink-jars.sh VERSION`` installs from
PyPI, once per version and source content, into ``capture/build/live-job-VERSION/`` (or
``live-sql-job-VERSION/``). It runs with plain ``java -cp`` on the Java the release
supports (:func:`java_major`) and serves Flink's REST API on 127.0.0.1. With a capture
directory, tidemark's capture is attached exactly as contract §6 says: the jar on the classpath
with ``metrics.reporter.tidemark.*`` in the configuration (the job sets those from
``--capture-dir``), and ``-javaagent:tidemark-capture.jar=dir=DIR`` on the ``java`` command.

While the job runs, :class:`RestPoller` reads, about every second, Flink's own figures for every
vertex and subtask: ``idleTimeMsPerSecond``, ``backPressuredTimeMsPerSecond`` and
``busyTimeMsPerSecond`` (the per-subtask metrics endpoint), ``currentInputWatermark`` (the
vertex watermarks endpoint) and the subtask's current attempt (the vertex details).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "capture" / "build"
CAPTURE_JAR = BUILD / "tidemark-capture.jar"
# The job shapes: the DataStream job (LiveJob.java) and the Flink SQL job (LiveSqlJob.java).
SHAPES = {"datastream": "LiveJob", "sql": "LiveSqlJob"}
# The SQL job through PyFlink: its Table API submits the same SQL, SLOW_SUM from LiveSqlJob.java.
PYFLINK_JOB = Path(__file__).resolve().parent / "job" / "live_sql_job.py"
# The SQL job's statements, which both submit.
SQL_STATEMENTS = Path(__file__).resolve().parent / "job" / "live_sql_job.sql"
# The first release whose PyFlink has a Python 3.11 wheel.
PYFLINK_SINCE = (1, 19)
GAUGES = ("idleTimeMsPerSecond", "backPressuredTimeMsPerSecond", "busyTimeMsPerSecond")
# How often Flink's MetricFetcher may refresh what REST serves (metrics.fetcher.update-interval,
# rule V5). The live job sets it lower than Flink's default 10 s so that each REST reading pins
# down the round it shows more tightly; the matching in the tests allows for it exactly.
FETCHER_INTERVAL_MS = 1000
_LOG4J = """\
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss,SSS}} %-5p [%t] %c{{1}} - %m%n
"""


class LiveSetupError(Exception):
    """Java, javac, Flink's jars or the capture jar cannot be had: the live tests cannot run."""


def _tool(name: str) -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise LiveSetupError(
            f"{name} not found: the live Flink tests need a JDK 17"
            " (apt-get install openjdk-17-jdk-headless)"
        )
    return found


def java_major(version: str) -> str:
    """The Java a release runs on here: 11 for the 1.x line (1.15 to 1.17 support no newer), 17 for
    2.x (this machine's JDK)."""
    return "11" if version.startswith("1.") else "17"


def _installed(script: str, argument: str, failure: str) -> Path:
    """What ``script ARGUMENT`` (an installing script of the repository) prints last: the path of
    what it installed on first use; :class:`LiveSetupError` with ``failure`` and the script's
    last error line when it cannot. The scripts install with this Python's pip (and uv beside it,
    as tidemark's environment has)."""
    done = subprocess.run(
        [str(ROOT / script), argument],
        capture_output=True,
        text=True,
        check=False,
        env=os.environ | {"PYTHON": sys.executable},
    )
    found = Path(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None
    if done.returncode != 0 or found is None or not found.exists():
        raise LiveSetupError(
            f"{failure} by {script}: " + (done.stderr.strip().splitlines() or ["no output"])[-1]
        )
    return found


def java_for(version: str) -> str:
    """The ``java`` for ``version``: the machine's for 17, else a runtime from PyPI
    (capture/java-runtime.sh)."""
    major = java_major(version)
    if major == "17":
        return _tool("java")
    return str(
        _installed(
            "capture/java-runtime.sh",
            major,
            f"a Java {major} runtime for Flink {version} could not be installed",
        )
    )


def flink_lib(version: str) -> Path:
    """The folder of Flink ``version``'s jars, installed from PyPI on first use."""
    return _installed(
        "capture/flink-jars.sh", version, f"Flink {version}'s jars could not be installed"
    )


def sql_api(version: str) -> str:
    """How the SQL job is submitted on ``version``: ``"pyflink"`` (PyFlink's Table API,
    tests/live/job/live_sql_job.py) where PyFlink has a Python 3.11 wheel (1.19 on), ``"java"``
    (the Java Table API, LiveSqlJob.java) before (decision 0020). ``TIDEMARK_LIVE_SQL_API``
    (``java`` or ``pyflink``) sets one for every release."""
    chosen = os.environ.get("TIDEMARK_LIVE_SQL_API", "")
    if chosen not in ("", "java", "pyflink"):
        raise LiveSetupError(f"TIDEMARK_LIVE_SQL_API must be java or pyflink, not {chosen!r}")
    if chosen:
        return chosen
    major, minor = (int(part) for part in version.split(".")[:2])
    return "pyflink" if (major, minor) >= PYFLINK_SINCE else "java"


def pyflink_python(version: str) -> Path:
    """The ``python`` of an environment with PyFlink ``version`` (tests/live/pyflink-venv.sh)."""
    return _installed(
        "tests/live/pyflink-venv.sh", version, f"PyFlink {version} could not be installed"
    )


def _source(shape: str) -> Path:
    return Path(__file__).resolve().parent / "job" / f"{SHAPES[shape]}.java"


def build_job(version: str, shape: str = "datastream") -> Path:
    """The classes of the job of ``shape`` for ``version`` (compiled once per version and source
    content)."""
    lib = flink_lib(version)
    source = _source(shape)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    name = "live-job" if shape == "datastream" else f"live-{shape}-job"
    target = BUILD / f"{name}-{version}"
    stamp = target / ".source-sha256"
    if stamp.exists() and stamp.read_text() == digest:
        return target
    partial = BUILD / f".{name}-{version}.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    done = subprocess.run(
        [_tool("javac"), "--release", "11", "-Xlint:-options", "-cp", f"{lib}/*",
         "-d", str(partial), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise LiveSetupError(
            f"the live {shape} job does not compile against Flink {version}:\n{done.stderr}"
        )
    (partial / ".source-sha256").write_text(digest)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def capture_jar() -> Path:
    if not CAPTURE_JAR.is_file():
        raise LiveSetupError(
            f"{CAPTURE_JAR.relative_to(ROOT)} is missing: run `make capture` first"
        )
    return CAPTURE_JAR


@dataclass
class JobRun:
    """One run of the live job: its process, folders and, once finished, its result line."""

    version: str
    work: Path
    port: int
    capture_dir: Path | None
    process: subprocess.Popen
    started_s: float
    result: dict = field(default_factory=dict)
    returncode: int | None = None

    @property
    def log(self) -> Path:
        return self.work / "flink.log"

    @property
    def stdout(self) -> Path:
        return self.work / "stdout.txt"

    def wait(self, timeout: float) -> JobRun:
        try:
            self.returncode = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"Flink {self.version}: the live job did not finish within {timeout:.0f} s "
                f"(log: {self.log})"
            ) from None
        for line in self.stdout.read_text(errors="replace").splitlines():
            if line.startswith("LIVEJOB_RESULT "):
                self.result = json.loads(line.removeprefix("LIVEJOB_RESULT "))
        return self

    def check(self) -> JobRun:
        tail = "\n".join(self.stdout.read_text(errors="replace").splitlines()[-30:])
        assert self.returncode == 0 and self.result, (
            f"Flink {self.version}: the live job failed (exit {self.returncode},"
            f" log {self.log}):\n{tail}"
        )
        return self


def start_job(
    version: str,
    work: Path,
    *,
    capture: bool = True,
    bench: bool = False,
    port: int | None = None,
    extra_args: tuple[str, ...] = (),
    shape: str = "datastream",
) -> JobRun:
    """Start the job of ``shape`` for ``version`` in the background; its folders are under
    ``work``.

    With ``capture``, the capture writes into ``work/capture``, attached as contract §6 says.
    """
    java = java_for(version)
    classes = build_job(version, shape)
    lib = flink_lib(version)
    work.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log4j = work / "log4j2.properties"
    log4j.write_text(_LOG4J.format(log=work / "flink.log"))
    classpath = [str(classes), f"{lib}/*"]
    scratch = work / "tmp"  # Flink's RPC jar, MiniCluster folders and uploads: under `work`
    scratch.mkdir(exist_ok=True)
    jvm = ["-Xmx1g", f"-Djava.io.tmpdir={scratch}", f"-Dlog4j.configurationFile={log4j}"]
    capture_dir = None
    if capture:
        jar = capture_jar()
        capture_dir = work / "capture"
        capture_dir.mkdir(exist_ok=True)
        classpath.append(str(jar))
        jvm.append(f"-javaagent:{jar}=dir={capture_dir}")
    arguments = ["--rest-port", str(port), "--fetcher-interval-ms", str(FETCHER_INTERVAL_MS)]
    if capture_dir is not None:
        arguments += ["--capture-dir", str(capture_dir)]
    if shape == "sql":
        arguments += ["--sql", str(SQL_STATEMENTS)]
    if bench:
        arguments.append("--bench")
    arguments += list(extra_args)
    env = None
    if shape == "sql" and sql_api(version) == "pyflink":
        # PyFlink's gateway starts the JVM (and in it the MiniCluster) from Flink's jars in the
        # PyFlink package, with JAVA_HOME's java and JVM_ARGS: the agent's jar is on the system
        # class path through -javaagent, as the reporter needs it.
        command = [str(pyflink_python(version)), str(PYFLINK_JOB), "--classes", str(classes)]
        env = os.environ | {
            "JAVA_HOME": str(Path(java).resolve().parents[1]),
            "JVM_ARGS": " ".join(jvm),
            "LOG4J_PROPERTIES": str(log4j),
            "FLINK_LOG_DIR": str(work),
        }
    else:
        command = [java, *jvm, "-cp", os.pathsep.join(classpath), f"tidemark.live.{SHAPES[shape]}"]
    with (work / "stdout.txt").open("wb") as out:
        process = subprocess.Popen(
            command + arguments, cwd=work, stdout=out, stderr=subprocess.STDOUT, env=env
        )
    return JobRun(version, work, port, capture_dir, process, time.monotonic())


# --- REST -------------------------------------------------------------------------------------


def _get(port: int, path: str, timeout: float = 5.0):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as response:
        return json.loads(response.read())


def _number(value: str | None) -> float | None:
    """A gauge value as REST serves it (String.valueOf, rule V6); NaN and absent become None."""
    if value is None:
        return None
    number = float(value)
    return None if number != number else number


class RestPoller:
    """Polls a running job's REST API about every ``interval_s`` in a thread of its own.

    Every reading carries ``requested_ms`` (the epoch ms just before its request was sent) and
    ``received_ms`` (just after its answer arrived): the figure it shows was fetched by Flink's
    MetricFetcher at some moment up to ``received_ms`` (rule V5).
    """

    def __init__(self, run: JobRun, interval_s: float = 1.0) -> None:
        self.run = run
        self.interval_s = interval_s
        self.job_id: str | None = None
        self.vertices: dict[str, dict] = {}
        self.inputs: dict[str, list[tuple[str, str]]] = {}
        self.gauges: list[dict] = []
        self.watermarks: list[dict] = []
        self.polls = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rest-poller", daemon=True)

    def start(self) -> RestPoller:
        self._thread.start()
        return self

    def stop(self) -> RestPoller:
        self._stop.set()
        self._thread.join()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set() and self.run.process.poll() is None:
            began = time.monotonic()
            try:
                self._poll()
            except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
                # Before the REST endpoint is up and while the job shuts down: not a reading.
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def _poll(self) -> None:
        port = self.run.port
        if self.job_id is None:
            jobs = _get(port, "/jobs").get("jobs", [])
            if not jobs:
                return
            self.job_id = jobs[0]["id"]
        job = _get(port, f"/jobs/{self.job_id}")
        if job.get("state") not in ("RUNNING", "RESTARTING", "CREATED", "INITIALIZING"):
            return
        if not self.vertices:
            # How each vertex's inputs ship records, as the job's plan names them (contract §8).
            nodes = _get(port, f"/jobs/{self.job_id}/plan")["plan"]["nodes"]
            self.inputs = {
                n["id"]: [(i["id"], i["ship_strategy"]) for i in n.get("inputs", [])] for n in nodes
            }
        for vertex in job["vertices"]:
            vid = vertex["id"]
            self.vertices[vid] = {
                "name": vertex["name"],
                "parallelism": vertex["parallelism"],
                "max_parallelism": vertex.get("maxParallelism"),
                "inputs": self.inputs.get(vid, []),
            }
            details = _get(port, f"/jobs/{self.job_id}/vertices/{vid}")
            attempts = {
                s["subtask"]: (s.get("attempt"), s.get("status")) for s in details["subtasks"]
            }
            for subtask, (attempt, status) in sorted(attempts.items()):
                if status != "RUNNING":
                    continue
                requested = time.time_ns() // 1_000_000
                metrics = _get(
                    port,
                    f"/jobs/{self.job_id}/vertices/{vid}/subtasks/{subtask}/metrics"
                    f"?get={','.join(GAUGES)}",
                )
                received = time.time_ns() // 1_000_000
                values = {m["id"]: m.get("value") for m in metrics}
                if not all(name in values for name in GAUGES):
                    continue  # the MetricFetcher has not fetched this attempt's metrics yet
                self.gauges.append(
                    {
                        "vertex_id": vid,
                        "subtask_index": subtask,
                        "attempt": attempt,
                        "requested_ms": requested,
                        "received_ms": received,
                        "idle_time_ms_per_second": _number(values["idleTimeMsPerSecond"]),
                        "back_pressured_time_ms_per_second": _number(
                            values["backPressuredTimeMsPerSecond"]
                        ),
                        "busy_time_ms_per_second": _number(values["busyTimeMsPerSecond"]),
                    }
                )
            requested = time.time_ns() // 1_000_000
            watermarks = _get(port, f"/jobs/{self.job_id}/vertices/{vid}/watermarks")
            received = time.time_ns() // 1_000_000
            for entry in watermarks:
                index, _, name = entry["id"].partition(".")
                if name != "currentInputWatermark":
                    continue
                attempt, status = attempts.get(int(index), (None, None))
                self.watermarks.append(
                    {
                        "vertex_id": vid,
                        "subtask_index": int(index),
                        "attempt": attempt,
                        "status": status,
                        "requested_ms": requested,
                        "received_ms": received,
                        "current_input_watermark": int(entry["value"]),
                    }
                )
        self.polls += 1

    def save(self, path: Path) -> Path:
        path.write_text(
            json.dumps(
                {
                    "version": self.run.version,
                    "job_id": self.job_id,
                    "fetcher_interval_ms": FETCHER_INTERVAL_MS,
                    "polls": self.polls,
                    "vertices": self.vertices,
                    "gauges": self.gauges,
                    "watermarks": self.watermarks,
                    "errors": self.errors,
                },
                indent=1,
            )
        )
        return path


def run_polled(
    version: str, work: Path, *, capture: bool = True, timeout: float = 180
) -> tuple[JobRun, dict]:
    """Run the live job to its end while polling REST; the readings go to ``work/rest.json``."""
    run = start_job(version, work, capture=capture)
    poller = RestPoller(run).start()
    try:
        run.wait(timeout)
    finally:
        poller.stop()
        poller.save(work / "rest.json")
    run.check()
    return run, json.loads((work / "rest.json").read_text())
