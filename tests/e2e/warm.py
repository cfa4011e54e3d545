"""One warm process per shared test lake: dbt commands and SQL on one Spark session.

The demo lake's readers run about ten dbt commands and queries. As separate processes each
starts a JVM and Spark (8 to 14 CPU-seconds on the 2-core machine) before it does any work;
here they share one, the way ``tidemark run`` does (docs/decisions/0007-warm-schedule.md):
dbt's programmatic runner and ``tidemark``'s own ``main``, in a process started with the lake's
own environment, with the ``bronze.*`` views refreshed before every request. Commands and
results travel as JSON lines: requests on the worker's stdin, answers on a pipe of their own
(dbt prints on stdout).

``python -m tests.e2e.warm FD`` is the worker; :class:`WarmLake` drives it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from tests.e2e.harness import ROOT, Result, environment
from tidemark.lake import Lake


def target_path(base: Path, args: Sequence[str]) -> Path:
    """The dbt target folder of a dbt command in the worker: ``base``, the lake's, or for a
    command with ``--vars`` a folder of those vars beside it.

    dbt parses the whole project again when a command's vars differ from those of the parse it
    saved in its target folder: 5 to 8 s in the warm process, against 1 s for a parse it can
    reuse. The demo lake's readers alternate between the project's vars and a dozen commands with
    vars of their own, so each set of vars keeps a saved parse of its own."""
    if "--vars" not in args:
        return base
    given = args[list(args).index("--vars") + 1]
    return base.with_name(f"{base.name}-vars-{hashlib.sha256(given.encode()).hexdigest()[:12]}")


class WarmLake:
    """A worker process serving one lake; use as a context manager."""

    def __init__(self, lake: Lake, env: dict[str, str] | None = None) -> None:
        self.lake = lake
        # What the worker and its JVM print outside a request (Java's own warnings, a dying
        # JVM's last words): next to the lake.
        self.log = lake.root.parent / "warm-worker.log"
        read, write = os.pipe()
        with self.log.open("w") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.e2e.warm", str(write)],
                cwd=ROOT,
                env={**environment(lake), **(env or {})},
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=log,
                pass_fds=(write,),
                text=True,
            )
        os.close(write)
        self._answers = os.fdopen(read, "r")

    def _ask(self, request: dict) -> dict:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._answers.readline()
        if not line:
            code = self._process.wait()
            raise RuntimeError(f"the warm worker of {self.lake.root} died ({code}): {self.log}")
        return json.loads(line)

    def _command(self, kind: str, args: tuple[str, ...]) -> Result:
        answer = self._ask({kind: list(args)})
        return Result(answer["returncode"], answer["stdout"], answer["stderr"])

    def dbt(self, *args: str) -> Result:
        """A dbt command, as ``harness.dbt`` runs it, with dbt's exit code (0, 1 or 2)."""
        return self._command("dbt", args)

    def target(self, *args: str) -> Path:
        """The dbt target folder a dbt command with ``args`` writes to (:func:`target_path`)."""
        return target_path(Path(environment(self.lake)["DBT_TARGET_PATH"]), args)

    def tidemark(self, *args: str) -> Result:
        """A ``tidemark`` command (its ``main``), in the worker, on the worker's session."""
        return self._command("tidemark", args)

    def mf(self, *args: str) -> Result:
        """A MetricFlow command (``mf``), in the worker: the ``dbt debug`` it starts with finds
        Spark running instead of starting it."""
        return self._command("mf", args)

    def sql_rows(self, query: str) -> list[dict]:
        """Rows of a query, as ``tidemark sql --format jsonl`` prints them."""
        answer = self._ask({"sql": query})
        Result(answer["returncode"], answer["stdout"], answer["stderr"]).check()
        return [json.loads(line) for line in answer["stdout"].splitlines() if line.strip()]

    def bronze_scans(self, query: str) -> list[str]:
        """The bronze tables the physical plan of ``query`` scans, once per scan that runs.

        A dynamic partition pruning subquery repeats a side of its join in the plan; with
        Spark's defaults it runs only where it can reuse that side's broadcast, so its subtree
        is left out."""
        self.sql_rows("set spark.sql.maxMetadataStringLength=100000")  # whole file paths
        (row,) = self.sql_rows(f"explain {query}")
        scans, pruning_depth = [], None
        for line in row["plan"].splitlines():
            depth = line.find("- ")  # where the node's marker is: deeper nodes, larger
            if pruning_depth is not None and depth > pruning_depth:
                continue
            pruning_depth = None
            if line[depth + 2 :].startswith("SubqueryAdaptiveBroadcast"):
                pruning_depth = depth
            elif found := re.search(r"FileScan .*?\[file:[^,\]]*/bronze/(\w+)/", line):
                scans.append(found.group(1))
        return scans

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._answers.close()

    def __enter__(self) -> WarmLake:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _serve(answers_fd: int) -> None:
    from dbt.cli.main import dbtRunner

    from tidemark.cli import main
    from tidemark.spark.bronze import register_bronze
    from tidemark.spark.session import spark_session
    from tidemark.sql import write_rows

    lake = Lake.from_env()
    spark = spark_session(lake)
    targets = Path(os.environ["DBT_TARGET_PATH"])
    with os.fdopen(answers_fd, "w", buffering=1) as answers:
        for line in sys.stdin:
            request = json.loads(line)
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                try:
                    register_bronze(spark, lake)  # the bronze tables may have new snapshots
                    if "dbt" in request:
                        target = target_path(targets, request["dbt"])
                        os.environ["DBT_TARGET_PATH"] = str(target)
                        done = dbtRunner().invoke(request["dbt"])
                        code = 0 if done.success else 2 if done.exception else 1
                    elif "tidemark" in request:
                        code = main(request["tidemark"])
                    elif "mf" in request:
                        code = _metricflow(request["mf"])
                    else:
                        frame = spark.sql(request["sql"])
                        write_rows(frame.columns, frame.collect(), "jsonl", out)
                        code = 0
                except Exception as exc:  # the request fails, the worker serves the next one
                    print(f"{type(exc).__name__}: {exc}", file=err)
                    code = 2
            answers.write(
                json.dumps({"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
                + "\n"
            )


def _metricflow(args: list[str]) -> int:
    """``mf ARGS``'s exit code. MetricFlow points the root logger at its own log file
    (``logging.basicConfig(force=True)``); the worker's logging is put back afterwards."""
    import logging

    from dbt_metricflow.cli.main import cli

    handlers, level = logging.root.handlers[:], logging.root.level
    try:
        cli.main(args, prog_name="mf", standalone_mode=False)
        return 0
    except SystemExit as stop:  # MetricFlow calls exit(1) on invalid configs
        return stop.code if isinstance(stop.code, int) else 1
    finally:
        logging.root.handlers[:] = handlers
        logging.root.setLevel(level)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
