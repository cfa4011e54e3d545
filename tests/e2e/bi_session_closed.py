"""Run by tests/e2e/test_serve.py in a process of its own (it starts a Thrift server): a BI
client's session opens, fails a query on a mart not built yet, leaves a statement open (which
must leave no file in the lake), and closes, all before the process's own Spark threads first
call tidemark's procedures, as on a new lake served from its first minute or after a restart.
Then the driver calls a procedure, as a build's publish does, from its own thread, from a new
thread (dbt's) and from a new session. Prints one line per call: "ok" or the error's first line."""

from __future__ import annotations

import sys
import threading

from pyhive import hive

from tidemark.lake import Lake
from tidemark.serve import ServeOptions, ThriftServer

EXPIRE = "call tidemark_system.marts.expire('tidemark.t', 'hour_at', '2020-01-01 00:00:00', 1)"


def main(port: int) -> None:
    server = ThriftServer(Lake.from_env(), ServeOptions(port=port))
    spark = server.spark
    spark.sql("create database if not exists tidemark")
    spark.sql(
        "create table tidemark.t (x int, hour_at string) using parquet partitioned by (hour_at)"
    )
    client = hive.connect(host="127.0.0.1", port=port, username="dashboard")
    try:
        client.cursor().execute("select count(*) from tidemark.fct_subtask_seconds")
    except Exception as exc:  # noqa: BLE001 - the mart is not built yet, as expected
        print("BI query: failed" if "TABLE_OR_VIEW_NOT_FOUND" in str(exc) else f"BI query: {exc}")
    # A dashboard's statement left open (its cursor not closed) leaves no file in the lake.
    open_statement = client.cursor()
    open_statement.execute("select 1")
    open_statement.fetchall()
    logs = [path for path in Lake.from_env().logs.rglob("*") if path.is_file()]
    print(f"files in the lake's logs: {sorted(path.name for path in logs)}")
    client.close()

    def call(session, where: str) -> None:
        try:
            session.sql(EXPIRE).collect()
            print(f"{where}: ok", flush=True)
        except Exception as exc:  # noqa: BLE001 - printed for the test to read
            print(f"{where}: {str(exc).splitlines()[0]}", flush=True)

    call(spark, "driver thread")
    thread = threading.Thread(target=call, args=(spark, "new thread"))
    thread.start()
    thread.join()
    call(spark.newSession(), "new session")
    server.stop()
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]))
