"""The ``tidemark`` command: parses arguments and calls the library; errors are one line."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from tidemark import __version__

log = logging.getLogger("tidemark")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidemark",
        description="Flink runtime metrics, exact and per second, in the lakehouse.",
        epilog="State lives under TIDEMARK_LAKE (default ./lake).",
    )
    parser.add_argument("--version", action="version", version=f"tidemark {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show details and tracebacks")
    parser.add_argument("--lake", help="the lake folder (default: $TIDEMARK_LAKE or ./lake)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = commands.add_parser(
        "ingest", help="land event files (or folders of them) in the bronze Delta tables"
    )
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    _landed_option(ingest)

    generate = commands.add_parser("generate", help="write synthetic events for a scenario")
    generate.add_argument("--scenario", required=True)
    generate.add_argument("--out", required=True, type=Path)
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--scale", type=int, default=1)
    generate.add_argument(
        "--parallelism",
        default="2,4,2",
        help="the job's subtasks: a total N (split about 1:2:1 over source, map, sink) or S,M,K",
    )
    generate.add_argument(
        "--edges",
        default="all-to-all",
        help="how neighbouring vertices' subtasks connect: all-to-all (keyBy, rebalance) or "
        "pointwise (forward, rescale); the valves' channels follow",
    )
    generate.add_argument(
        "--file-seconds",
        type=int,
        default=None,
        help="start a new events file every this many seconds of arrival time",
    )

    sql = commands.add_parser("sql", help="run Spark SQL against the lake and print the result")
    sql.add_argument("query")
    sql.add_argument("--format", choices=("table", "csv", "jsonl"), default="table")
    serve = commands.add_parser(
        "serve", help="start the Spark Thrift (HiveServer2) endpoint for BI tools and dbt"
    )
    _server_options(serve)
    serve.add_argument(
        "--refresh-s", type=float, default=5.0, help="how often to look for new bronze commits"
    )
    report = commands.add_parser(
        "report", help="write one self-contained HTML page of a job, drawn from the marts"
    )
    report.add_argument("--job", help="the job id (default: the job with the latest second)")
    report.add_argument("--from", dest="from_", metavar="T", help="start (ISO time or epoch ms)")
    report.add_argument("--to", metavar="T", help="end, exclusive (ISO time or epoch ms)")
    report.add_argument("--out", type=Path, default=Path("report.html"), help="the HTML file")
    report.add_argument(
        "--gauge-window-s",
        type=int,
        default=60,
        help="the dbt var flink_gauge_window_s the marts were built with (default 60)",
    )
    run = commands.add_parser(
        "run",
        help="the scheduled path on a warm Spark: every --every seconds, ingest then dbt build",
    )
    run.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="capture files/folders")
    run.add_argument(
        "--every", type=float, default=60.0, metavar="SECONDS", help="cycle period (default 60)"
    )
    run.add_argument("--once", action="store_true", help="one cycle, then exit with its status")
    run.add_argument(
        "--cycles", type=int, default=None, metavar="N", help="stop after N cycles (default: never)"
    )
    run.add_argument(
        "--tests-every",
        type=int,
        default=1,
        metavar="N",
        help="run dbt's data tests on the first build and every N-th after it (default 1: always)",
    )
    run.add_argument(
        "--dbt",
        default="",
        metavar="ARGS",
        help='more arguments for dbt build, one string, e.g. "--select +fct_subtask_seconds"',
    )
    _landed_option(run)
    run.add_argument(
        "--maintain-every",
        type=float,
        default=None,
        metavar="SECONDS",
        help="also run tidemark maintain between cycles, at most this often (e.g. 3600)",
    )
    _retention_options(run)
    run.add_argument(
        "--serve",
        action="store_true",
        help="also serve the Thrift (HiveServer2) endpoint for BI tools from the same session",
    )
    _server_options(run)
    status = commands.add_parser(
        "status",
        help="tidemark's own health: the last cycles, each mart's newest second per job against "
        "the newest landed event, bytes on disk (read from the lake's files, without Spark)",
    )
    status.add_argument(
        "--cycles", type=int, default=10, metavar="N", help="how many cycles to show (default 10)"
    )
    status.add_argument("--format", choices=("table", "csv", "jsonl"), default="table")
    status.add_argument(
        "--check",
        action="store_true",
        help="a probe: one line, exit 0 when healthy, 1 when not (the last cycles failed, a mart "
        "is behind) or the lake cannot be read",
    )
    status.add_argument(
        "--max-failed", type=int, default=None, metavar="N",
        help="--check: unhealthy when the last N cycles all failed (default 3; 0: not checked)",
    )  # fmt: skip
    status.add_argument(
        "--max-lag-s", type=int, default=None, metavar="S",
        help="--check: unhealthy when a per-second mart is more than S seconds behind its job's "
        "newest landed event (default: not checked)",
    )  # fmt: skip
    status.add_argument(
        "--max-age-s", type=float, default=None, metavar="S",
        help="--check: unhealthy when the newest cycle (or the run's start, before its first) is "
        "more than S seconds old (default: not checked)",
    )  # fmt: skip
    maintain = commands.add_parser(
        "maintain",
        help="keep the lake bounded: expire what is past the retention, compact bronze's days",
    )
    _retention_options(maintain)
    maintain.add_argument(
        "--bronze-only",
        action="store_true",
        help="only bronze (no Spark): expire and compact its tables, tidy their Delta logs",
    )
    maintain.add_argument(
        "--port",
        type=int,
        default=None,
        help="expire the marts through the Thrift server listening on 127.0.0.1:PORT (a running "
        "tidemark serve or run --serve holds the lake) instead of starting Spark",
    )
    archive = commands.add_parser(
        "jvm-archive",
        help="write the archive of Spark's classes that halves each later command's JVM start",
    )
    archive.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the archive file (default: $TIDEMARK_JVM_ARCHIVE, else LAKE/jvm/spark-classes.jsa)",
    )
    return parser


def _server_options(parser: argparse.ArgumentParser) -> None:
    """The Thrift endpoint's options, shared by ``serve`` and ``run --serve``."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    parser.add_argument("--port", type=int, default=10000)
    parser.add_argument(
        "--hiveconf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a HiveServer2 setting, e.g. hive.server2.authentication=LDAP (repeatable)",
    )


def _landed_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--landed-files", default="keep", metavar="keep|delete|move:DIR",
        help="what becomes of a file once it landed: kept (default), deleted, or moved to DIR",
    )  # fmt: skip


def _retention_options(parser: argparse.ArgumentParser) -> None:
    """How long the lake keeps what: `maintain` and `run --maintain-every`
    (tidemark.maintain.retention.Retention, docs/decisions/0019-retention.md)."""
    from tidemark.maintain.retention import Retention

    kept = Retention()  # the defaults live there, once
    for flag, days, what in (
        ("--keep-bronze-days", kept.bronze_days,
         "days of raw events bronze keeps, counted back from the newest"),
        ("--keep-task-marts-days", kept.task_marts_days, "days the per-task marts keep"),
        ("--keep-vertex-marts-days", kept.vertex_marts_days,
         "days the per-vertex marts keep, and with them the incidents"),
    ):  # fmt: skip
        help_ = f"{what} (default {days})"
        parser.add_argument(flag, type=int, default=days, metavar="N", help=help_)
    parser.add_argument(
        "--replaced-keep-s", type=int, default=600, metavar="S",
        help="how long the files maintenance removes stay for queries still reading them "
        "(600; bronze's in whole hours, rounded up)",
    )  # fmt: skip


def _retention(args: argparse.Namespace):
    from tidemark.maintain.retention import Retention

    return Retention(args.keep_bronze_days, args.keep_task_marts_days, args.keep_vertex_marts_days)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s" if args.verbose else "%(message)s",
        stream=sys.stderr,
    )
    for noisy in ("py4j", "deltalake"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("tidemark: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one clear line for the user; the traceback with --verbose
        if args.verbose:
            log.exception("tidemark %s failed", args.command)
        print(f"tidemark {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    first = text.splitlines()[0]
    return first if len(first) <= 400 else first[:399] + "…"


def _lake(args: argparse.Namespace):
    from tidemark.lake import Lake

    return Lake.from_env(args.lake)


def _ingest(args: argparse.Namespace) -> int:
    from tidemark.ingest.landed import LandedFiles
    from tidemark.ingest.landing import ingest
    from tidemark.ingest.progress import progress_for
    from tidemark.ingest.report import describe

    landed = LandedFiles.parse(args.landed_files)
    missing = [p for p in args.paths if not p.exists()]
    for path in missing:
        print(f"tidemark ingest: error: {path}: no such file or folder", file=sys.stderr)
    present = [p for p in args.paths if p.exists()]
    lake = _lake(args)
    report = ingest(present, lake, progress_for(sys.stderr)) if present else None
    if report is not None:
        for failed in report.errors:
            print(f"tidemark ingest: error: {failed.error}", file=sys.stderr)
        print(describe(report))
        disposed = landed.dispose(report, present)
        if disposed:
            print(f"{disposed} landed file(s) {landed.how}d")
        print(f"lake: {lake.root}")
    return 1 if missing or (report and report.errors) else 0


def _parallelism(text: str) -> int | tuple[int, ...]:
    """``--parallelism``: ``N`` or ``S,M,K``."""
    try:
        parts = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise ValueError(
            f"--parallelism takes a number of subtasks or S,M,K (e.g. 1000 or 250,500,250), "
            f"got {text!r}"
        ) from None
    return parts[0] if len(parts) == 1 else parts


def _generate(args: argparse.Namespace) -> int:
    from tidemark.generate import generate

    started = time.perf_counter()
    result = generate(
        args.scenario,
        args.out,
        seed=args.seed,
        scale=args.scale,
        parallelism=_parallelism(args.parallelism),
        edges=args.edges,
        file_seconds=args.file_seconds,
    )
    took = time.perf_counter() - started
    print(
        f"wrote {result.events} events in {len(result.files)} file(s) to {args.out} "
        f"({took:.1f} s); manifest: {result.manifest}"
    )
    return 0


def _sql(args: argparse.Namespace) -> int:
    from tidemark.spark.session import spark_session
    from tidemark.sql import run_sql

    spark = spark_session(_lake(args))
    run_sql(spark, args.query, args.format)
    return 0


def _serve_options(args: argparse.Namespace):
    from tidemark.serve import ServeOptions

    hiveconf = {}
    for item in args.hiveconf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--hiveconf takes KEY=VALUE, got {item!r}")
        hiveconf[key.strip()] = value.strip()
    return ServeOptions(args.host, args.port, hiveconf, getattr(args, "refresh_s", 5.0))


def _serve(args: argparse.Namespace) -> int:
    from tidemark.serve import serve

    return serve(_lake(args), _serve_options(args))


def _run(args: argparse.Namespace) -> int:
    import shlex

    from tidemark.ingest.landed import LandedFiles
    from tidemark.service import RunOptions, run

    options = RunOptions(
        paths=args.paths,
        every_s=args.every,
        cycles=1 if args.once else args.cycles,
        dbt_args=shlex.split(args.dbt),
        tests_every=args.tests_every,
        landed_files=LandedFiles.parse(args.landed_files),
        serve=_serve_options(args) if args.serve else None,
        maintain_every_s=args.maintain_every,
        retention=_retention(args),
        replaced_keep_s=args.replaced_keep_s,
    )
    options.check()  # before the lake is touched
    return run(_lake(args), options)


def _maintain(args: argparse.Namespace) -> int:
    from tidemark.maintain import maintain

    retention = _retention(args)
    lake = _lake(args)
    sql = None
    if args.port is not None:
        from tidemark.serve import thrift_sql

        sql = thrift_sql("127.0.0.1", args.port)
    elif not args.bronze_only:
        from tidemark.service import spark_sql
        from tidemark.spark.session import spark_session

        sql = spark_sql(spark_session(lake))
    started = time.perf_counter()
    done = maintain(lake, retention, sql, args.replaced_keep_s * 1000)
    print(f"maintained in {time.perf_counter() - started:.1f} s: {done.describe()}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from tidemark.health.model import status_sections, write_sections
    from tidemark.health.read import read_status
    from tidemark.sql import write_rows

    if args.cycles < 1:
        raise ValueError(f"--cycles must be 1 or more, got {args.cycles}")
    limits = [args.max_failed, args.max_lag_s, args.max_age_s]
    if not args.check and any(value is not None for value in limits):
        raise ValueError("--max-failed, --max-lag-s and --max-age-s go with --check")
    lake = _lake(args)
    if not lake.root.is_dir():
        raise FileNotFoundError(f"no lake at {lake.root}: set TIDEMARK_LAKE or --lake")
    if args.check:
        return _check(lake, args)
    found = read_status(lake, args.cycles)
    sections = status_sections(found.cycles, found.freshness, found.disk, found.paths)
    write_sections(sections, found.notes, args.format, write_rows, sys.stdout, sys.stderr)
    return 0


def _check(lake, args: argparse.Namespace) -> int:
    """``tidemark status --check``: one line, ``ok: ...`` on stdout and 0, or ``tidemark status:
    unhealthy: ...`` on stderr and 1; the last cycles, the run's start and (with --max-lag-s)
    the marts' newest seconds, read from files."""
    from tidemark.health.model import MAX_FAILED, Limits
    from tidemark.health.read import read_check

    max_failed = MAX_FAILED if args.max_failed is None else args.max_failed
    limits = Limits(max_failed, args.max_lag_s, args.max_age_s)
    quiet = logging.getLogger("tidemark")
    level = quiet.level
    if not args.verbose:  # one line: what reading logs stays out of it
        quiet.setLevel(logging.ERROR)
    try:
        verdict = read_check(lake, limits)
    finally:
        quiet.setLevel(level)
    if verdict.healthy:
        print(verdict.line())
        return 0
    print(f"tidemark status: {verdict.line()}", file=sys.stderr)
    return 1


def parse_time_ms(text: str | None) -> int | None:
    """``--from``/``--to``: epoch milliseconds, or an ISO 8601 time (UTC unless it says)."""
    import datetime as dt

    if text is None:
        return None
    if text.strip().lstrip("-").isdigit():
        return int(text)
    try:
        parsed = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"not a time: {text!r} (use epoch milliseconds or ISO, e.g. 2026-11-25T06:00:00Z)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return int(parsed.timestamp() * 1000)


def _report(args: argparse.Namespace) -> int:
    from tidemark.report import Window, write_report
    from tidemark.report.queries import not_built
    from tidemark.spark.session import spark_session

    window = Window(args.job, parse_time_ms(args.from_), parse_time_ms(args.to))
    if window.from_ms is not None and window.to_ms is not None and window.to_ms <= window.from_ms:
        raise ValueError("--to must be after --from")
    lake = _lake(args)
    if not lake.metastore_db.exists():  # Spark never ran on this lake: said without starting it
        raise not_built()
    written = write_report(spark_session(lake), args.out, window, args.gauge_window_s)
    print(f"report written to {written.resolve()} ({written.stat().st_size / 1e6:.1f} MB)")
    return 0


def _jvm_archive(args: argparse.Namespace) -> int:
    from tidemark.spark.jvm_archive import create

    started = time.perf_counter()
    written = create(_lake(args), args.out.absolute() if args.out else None)
    took = time.perf_counter() - started
    print(f"wrote {written} ({written.stat().st_size / 1e6:.0f} MB, {took:.0f} s)")
    if args.out is not None:
        print(f"Spark sessions map it in when TIDEMARK_JVM_ARCHIVE={written}")
    return 0


_COMMANDS = {
    "ingest": _ingest,
    "generate": _generate,
    "sql": _sql,
    "serve": _serve,
    "run": _run,
    "status": _status,
    "report": _report,
    "jvm-archive": _jvm_archive,
    "maintain": _maintain,
}

if __name__ == "__main__":
    sys.exit(main())
