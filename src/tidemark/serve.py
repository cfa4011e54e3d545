"""``tidemark serve``: Spark's Thrift server (HiveServer2 protocol) over the lake, for BI tools.

It runs in the same session set-up as everything else (``spark_session``): UDFs registered,
``bronze.*`` views, warehouse and metastore under ``TIDEMARK_LAKE``. All JDBC/ODBC connections share
one Spark session (``spark.sql.hive.thriftServer.singleSession``), so they all see tidemark's Python
functions, which Spark registers per session. The bronze views are refreshed whenever a bronze
table gets a new Delta version, so ``tidemark ingest`` followed by ``dbt build --target thrift``
sees the new events.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import socket
import threading
from dataclasses import dataclass, field

from tidemark.lake import BRONZE_TABLES, Lake
from tidemark.spark.settings import (
    LOCAL_SCRATCH_DIR,
    RESOURCES_DIR,
    local_scratch_folder,
    resources_folder,
)

log = logging.getLogger("tidemark.serve")

# HiveServer2's hive.server2.authentication values that check who connects.
AUTHENTICATING = {"LDAP", "KERBEROS", "PAM", "CUSTOM"}


class ServeError(RuntimeError):
    pass


@dataclass
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 10000
    hiveconf: dict[str, str] = field(default_factory=dict)
    refresh_s: float = 5.0


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_options(options: ServeOptions) -> None:
    """Refuse what must not start: a taken port, or an open address without authentication."""
    auth = options.hiveconf.get("hive.server2.authentication", "NONE").upper()
    if not is_loopback(options.host) and auth not in AUTHENTICATING:
        raise ServeError(
            f"refusing to listen on {options.host} without authentication: anyone who can reach "
            "it could read and change the lake. Keep the default 127.0.0.1, or configure "
            "HiveServer2 authentication, e.g. --hiveconf hive.server2.authentication=LDAP "
            "--hiveconf hive.server2.authentication.ldap.url=ldaps://... (see the README)"
        )
    if not 0 < options.port < 65536:
        raise ServeError(f"port {options.port} is not a TCP port")
    family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As the Thrift server binds (reuse on): a port whose last server was killed holds its
        # clients' connections in TIME_WAIT for a minute, which the server binds over; without
        # it, a restarted `tidemark run --serve` refused to start for that minute (issue 64).
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((options.host, options.port))
        except OSError as exc:
            raise ServeError(
                f"cannot listen on {options.host}:{options.port}: {exc.strerror} (another server "
                "is probably using the port; pick another with --port)"
            ) from exc


def server_conf(lake: Lake, options: ServeOptions) -> dict[str, str]:
    conf = {
        "spark.hadoop.hive.server2.thrift.bind.host": options.host,
        "spark.hadoop.hive.server2.thrift.port": str(options.port),
        # Hive writes a file per open statement into the lake, which no one reads (tidemark's
        # own listener logs what failed): a dashboard that leaves its statements open grew
        # them by 18 files a cycle in the soak (issue 64).
        "spark.hadoop.hive.server2.logging.operation.enabled": "false",
        "spark.sql.hive.thriftServer.singleSession": "true",
        # Hive makes a session's resource folder as the session opens and deletes it as it
        # closes. With one folder for every session (spark_conf), a BI client's close raced
        # another's open ("Couldn't create directory"); so a folder per session here.
        f"spark.hadoop.{RESOURCES_DIR}": str(resources_folder(lake) / "${hive.session.id}"),
        # Where a closing session looks for its .pipeout files: by default /tmp/<user>, which
        # no one creates, so every close logged "Unable to access pipeout files" (issue 64).
        f"spark.hadoop.{LOCAL_SCRATCH_DIR}": str(local_scratch_folder(lake)),
    }
    for key, value in options.hiveconf.items():
        conf[f"spark.hadoop.{key}"] = value
    return conf


def _bronze_versions(lake: Lake) -> dict[str, int | None]:
    from deltalake import DeltaTable

    versions: dict[str, int | None] = {}
    for name in BRONZE_TABLES:
        path = str(lake.bronze_table(name))
        versions[name] = DeltaTable(path).version() if DeltaTable.is_deltatable(path) else None
    return versions


class ThriftServer:
    """Spark's Thrift (HiveServer2) server over the process's session: ``tidemark serve`` runs
    one alone, ``tidemark run --serve`` beside its scheduled cycles. Every connection shares
    that one session (``server_conf``), so BI tools see what the cycles build as they build it.
    """

    def __init__(self, lake: Lake, options: ServeOptions) -> None:
        check_options(options)
        from tidemark.spark.session import STORE_VIEW_PLANS, spark_session

        self.options = options
        # The process's own session never closes (SPARK-51571): its empty folder stays behind,
        # one per server start, and goes at the next (the metastore admits one process).
        for folder in resources_folder(lake).glob("*"):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only an empty one
        self.spark = spark_session(lake, server_conf(lake, options))
        # The BI tools share this session: a temporary view of theirs over a mart must read the
        # mart as it is at each query, after every publish, not the files of when it was made.
        self.spark.conf.set(STORE_VIEW_PLANS, "false")
        jvm = self.spark._jvm
        # A BI client's failed statement in one log line (log4j2.properties turns the server's
        # own three stacks off).
        self.spark.sparkContext._jsc.sc().addSparkListener(jvm.tidemark.spark.BiQueryLog())
        hive = jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
        self._server = hive.startWithContext(self.spark._jsparkSession.sqlContext())

    def stop(self) -> None:
        self._server.stop()


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT (Ctrl-C) set ``stop``: what runs finishes, nothing new starts."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())


def listening(lake: Lake, options: ServeOptions, command: str) -> str:
    return f"tidemark {command}: listening on {options.host}:{options.port} (lake {lake.root})"


def serve(lake: Lake, options: ServeOptions, ready: threading.Event | None = None) -> int:
    """Run the server until SIGTERM or SIGINT; returns the exit code."""
    from tidemark.spark.bronze import register_bronze

    server = ThriftServer(lake, options)
    stop = threading.Event()
    stop_on_signals(stop)
    print(listening(lake, options, "serve"), flush=True)
    if ready:
        ready.set()
    seen = _bronze_versions(lake)
    try:
        while not stop.wait(options.refresh_s):
            now = _bronze_versions(lake)
            if now != seen:
                register_bronze(server.spark, lake)
                log.info("bronze changed; views now show the new snapshot")
                seen = now
    finally:
        print("tidemark serve: stopping", flush=True)
        server.stop()
        server.spark.stop()
    return 0


def thrift_sql(host: str, port: int, user: str = "tidemark"):
    """A function that runs one statement through a Thrift (HiveServer2) endpoint and returns its
    rows: maintenance of a lake that `tidemark serve` or `tidemark run --serve` holds."""
    from pyhive import hive

    try:
        connection = hive.connect(host=host, port=port, username=user)
    except Exception as exc:
        raise ServeError(
            f"no Thrift server answers on {host}:{port} ({exc}): start tidemark serve, or run "
            "without --port to start Spark here"
        ) from exc

    def sql(statement: str) -> list[tuple]:
        cursor = connection.cursor()
        cursor.execute(statement)
        return [tuple(row) for row in cursor.fetchall()] if cursor.description else []

    return sql
