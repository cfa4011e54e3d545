"""tidemark's live SQL job through PyFlink's Table API: LiveSqlJob.java's job, written in Python.

The statements of tests/live/job/live_sql_job.sql, which LiveSqlJob.java runs too (a 1 s
``TUMBLE`` aggregation over ``datagen``, ``SLOW_SUM`` back-pressuring the sources in alternate
3 s windows, into ``blackhole``), submitted by PyFlink's ``TableEnvironment`` to the local
MiniCluster that PyFlink's gateway JVM starts: the way a Python user writes and runs a Flink
SQL job. ``SLOW_SUM`` is LiveSqlJob.java's Java aggregate, registered with ``CREATE TEMPORARY
SYSTEM FUNCTION ... LANGUAGE JAVA`` from the compiled job on ``pipeline.classpaths``, so the
job Flink runs is all JVM, as a Python user's job with a Java UDF is (a Python UDF would add a
Python worker).

Runs in a virtual environment of its own with ``apache-flink`` installed
(tests/live/pyflink-venv.sh); the capture is attached by the caller (``JVM_ARGS`` with
``-javaagent``; the reporter from ``--capture-dir``). Arguments as LiveSqlJob.java's (``--sql
FILE`` among them), plus ``--classes DIR`` (the compiled job). Prints ``LIVEJOB_RESULT {json}``
at the end.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pyflink.common import Configuration
from pyflink.table import EnvironmentSettings, TableEnvironment


def statements(text: str) -> list[str]:
    """The statements of a file: its lines without comment lines, split at semicolons (as
    LiveSqlJob.java splits them)."""
    kept = "\n".join(line for line in text.splitlines() if not line.strip().startswith("--"))
    return [statement.strip() for statement in kept.split(";") if statement.strip()]


def main(argv: list[str]) -> int:
    if len(argv) % 2 or any(not key.startswith("--") for key in argv[::2]):
        raise SystemExit(f"usage: live_sql_job.py [--option value]...; got {argv}")
    options = dict(zip((key.removeprefix("--") for key in argv[::2]), argv[1::2], strict=True))
    conf = Configuration()
    for key, value in {
        "rest.port": options.get("rest-port", "8081"),
        "rest.address": "127.0.0.1",
        "rest.bind-address": "127.0.0.1",
        "taskmanager.numberOfTaskSlots": "4",
        "taskmanager.memory.segment-size": "4kb",
        "taskmanager.network.memory.floating-buffers-per-gate": "2",
        "taskmanager.network.memory.max-buffers-per-channel": "2",
        "metrics.fetcher.update-interval": options.get("fetcher-interval-ms", "10000"),
        "parallelism.default": "2",
        "pipeline.classpaths": Path(options["classes"]).resolve().as_uri() + "/",
    }.items():
        conf.set_string(key, value)
    if "capture-dir" in options:
        conf.set_string(
            "metrics.reporter.tidemark.factory.class", "tidemark.capture.CaptureReporterFactory"
        )
        conf.set_string("metrics.reporter.tidemark.dir", options["capture-dir"])
    settings = EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(conf)
    tables = TableEnvironment.create(settings.build())
    tables.execute_sql(
        "CREATE TEMPORARY SYSTEM FUNCTION SLOW_SUM AS 'tidemark.live.LiveSqlJob$SlowSum'"
        " LANGUAGE JAVA"
    )
    # live_sql_job.sql (--sql FILE): the statements, the last one the INSERT that runs the job
    started = time.time()
    for statement in statements(Path(options["sql"]).read_text()):
        result = tables.execute_sql(statement)
    result.wait()
    job_ms = round((time.time() - started) * 1000)
    print("LIVEJOB_RESULT " + json.dumps({"job_ms": job_ms, "api": "pyflink"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
