"""A Spark standalone cluster on this machine: one master and workers, from PySpark's own jars.

:class:`StandaloneCluster` starts ``org.apache.spark.deploy.master.Master`` and
``org.apache.spark.deploy.worker.Worker`` with ``$SPARK_HOME/bin/spark-class`` (``SPARK_HOME`` is
the installed ``pyspark`` package), bound to 127.0.0.1 on free ports, waits until every worker has
registered with the master, and stops them all when it is closed. The workers run in a folder of
their own with ``PYTHONPATH`` removed from their environment, so their executors see nothing of
the repository by accident.

:func:`bare_python` makes the interpreter the executors run: a virtual environment that sees the
test venv's installed libraries (pyspark, pandas, pyarrow, numpy) but not its editable install of
tidemark, so ``import udfs`` succeeds on an executor only if the session shipped the package.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pyspark

from tests.ports import free_port

SPARK_HOME = Path(pyspark.__file__).parent
HOST = "127.0.0.1"


class ClusterStartError(RuntimeError):
    """The cluster did not come up; the message carries the end of each process's log."""


def bare_python(folder: Path) -> Path:
    """A Python 3.11 in ``folder`` with the current venv's libraries but not its ``.pth`` files.

    A path listed in a ``.pth`` file is added to ``sys.path`` as it is: the ``.pth`` files in it
    are not read. So the editable install's ``_tidemark.pth`` (which puts the repository, hence
    ``udfs`` and ``tidemark``, on the path) has no effect here.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "libraries-only.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


class StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each, under ``folder``."""

    def __init__(self, folder: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.folder = folder
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://{HOST}:{self.port}"
        self.processes: list[tuple[str, subprocess.Popen, Path]] = []

    def worker_dirs(self) -> list[Path]:
        return [self.folder / f"worker-{n}" / "work" for n in range(self.workers)]

    def state(self) -> dict:
        """The master's own view of the cluster (its web UI's JSON)."""
        with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=5) as answer:
            return json.load(answer)

    def __enter__(self) -> StandaloneCluster:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        self._spawn(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", HOST, "--port", str(self.port), "--webui-port", str(self.ui_port),
        )  # fmt: skip
        for n, work in enumerate(self.worker_dirs()):
            work.mkdir(parents=True)
            self._spawn(
                f"worker-{n}", "org.apache.spark.deploy.worker.Worker", self.url,
                "--host", HOST, "--webui-port", str(free_port()), "--cores", str(self.cores),
                "--memory", self.memory, "--work-dir", str(work),
            )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for name, process, _ in self.processes:
                if process.poll() is not None:
                    self._fail(f"{name} exited with {process.returncode}")
            try:
                if self.state().get("aliveworkers") == self.workers:
                    return
            except OSError:
                pass  # the master's web UI is not up yet
            time.sleep(1)
        self._fail(f"{self.workers} workers did not register with {self.url} within 120 s")

    def _spawn(self, name: str, main_class: str, *args: str) -> None:
        cwd = self.folder / name
        cwd.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update({"SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": HOST})
        env.pop("SPARK_CONF_DIR", None)
        log = self.folder / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), main_class, *args],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, stopped as a whole
            )
        self.processes.append((name, process, log))

    def _fail(self, reason: str) -> None:
        logs = "\n".join(
            f"--- {name} ({log}):\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            for name, _, log in self.processes
        )
        raise ClusterStartError(f"Spark standalone cluster: {reason}\n{logs}")

    def close(self) -> None:
        """Stop the workers, then the master: SIGTERM to each group, SIGKILL after 20 s."""
        for _, process, _ in reversed(self.processes):
            _signal_group(process, signal.SIGTERM)
        for _, process, _ in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout=20)
        self.processes.clear()


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    """Signal the process group ``process`` leads (its executors and their Python workers too)."""
    with contextlib.suppress(ProcessLookupError):  # the whole group has exited
        os.killpg(process.pid, signum)
