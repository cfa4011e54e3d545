"""tidemark's live SQL job through PyFlink's Table API: LiveSqlJob.java's job, written in Python.

The same Flink SQL as tests/live/job/LiveSqlJob.java (a 1 s ``TUMBLE`` aggregation over
``datagen``, ``SLOW_SUM`` back-pressuring the sources in alternate 3 s windows, into
``blackhole``), submitted by PyFlink's ``TableEnvironment`` to the local MiniCluster that
PyFlink's gateway JVM starts: the way a Python user writes and runs a Flink SQL job. ``SLOW_SUM``
is LiveSqlJob.java's Java aggregate, registered with ``CREATE TEMPORARY SYSTEM FUNCTION ...
LANGUAGE JAVA`` from the compiled job on ``pipeline.classpaths``, so the job Flink runs is all
JVM, as a Python user's job with a Java UDF is (a Python UDF would add a Python worker).

Runs in a virtual environment of its own with ``apache-flink`` installed
(tests/live/pyflink-venv.sh); the capture is attached by the caller (``JVM_ARGS`` with
``-javaagent``; the reporter from ``--capture-dir``). Arguments as LiveSqlJob.java's, plus
``--classes DIR`` (the compiled job). Prints ``LIVEJOB_RESULT {json}`` at the end.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pyflink.common import Configuration
from pyflink.table import EnvironmentSettings, TableEnvironment

RATE = 2000


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
    seconds = int(options.get("seconds", "40"))
    tables.execute_sql(
        "CREATE TABLE clicks ("
        " bucket INT, amount INT,"
        " ts AS LOCALTIMESTAMP,"
        " WATERMARK FOR ts AS ts - INTERVAL '0.2' SECOND"
        ") WITH ("
        " 'connector' = 'datagen',"
        f" 'rows-per-second' = '{RATE}',"
        f" 'number-of-rows' = '{RATE * seconds}',"
        " 'fields.bucket.min' = '0', 'fields.bucket.max' = '15',"
        " 'fields.amount.min' = '1', 'fields.amount.max' = '100')"
    )
    tables.execute_sql(
        "CREATE TABLE totals ("
        " window_start TIMESTAMP(3), bucket INT, clicks BIGINT, amount BIGINT"
        ") WITH ('connector' = 'blackhole')"
    )
    started = time.time()
    result = tables.execute_sql(
        "INSERT INTO totals"
        " SELECT window_start, bucket, COUNT(*), SLOW_SUM(amount)"
        " FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' SECOND))"
        " GROUP BY window_start, window_end, bucket"
    )
    result.wait()
    job_ms = round((time.time() - started) * 1000)
    print("LIVEJOB_RESULT " + json.dumps({"job_ms": job_ms, "api": "pyflink"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
