"""What tidemark's own health looks like, as plain data: no Spark, no file system.

A cycle (one ``tidemark run`` cycle, or one ``dbt build``/``dbt run`` that tidemark run did not
start), the freshness of each mart per job (its newest second against the job's newest landed
``ts_ms``), and the bytes the lake holds on disk. ``tidemark.run_log`` stores them, one row
shape (``RUN_LOG_COLUMNS``); ``tidemark status`` prints them (``status_sections``). The thin
parts read the lake (``health.read`` and the readers it puts together) and write the table
(``health.record``, ``macros/tidemark_run_log_insert.sql``). See docs/decisions/0017-health.md.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# The marts whose newest second says how far behind they are: the ones partitioned by
# (job_id, hour_at, minute_slice), each with the column its partition is taken from, so the
# newest partition of a job holds its newest row. The analysis, conformance and dimension marts
# are rebuilt whole each build and hold a row only where something happened (an incident, a
# captured round): their newest time is no measure of freshness.
MARTS: dict[str, str] = {
    "fct_subtask_seconds": "second_start_ms",
    "fct_subtask_flink_gauges": "update_ms",
    "fct_vertex_seconds": "second_start_ms",
    "fct_vertex_sampled_backpressure": "sampling_start_ms",
    "fct_valve_emissions": "ts_ms",
    "fct_task_watermarks": "valid_from_ms",
    "fct_watermark_seconds": "second_start_ms",
    "fct_vertex_watermark_seconds": "second_start_ms",
}
# The bronze tables whose ts_ms make a job's newest landed event: the task events every mart
# derives from (a task's horizon counts all its event types).
LANDED_TABLES = ("timer_events", "watermark_events")

OUTCOMES = ("ok", "failed", "nothing new")

# tidemark.run_log's columns, in table order (the partition column last), with Spark SQL types.
# macros/tidemark_run_log_insert.sql creates the table with the same list (a unit test holds
# them equal).
RUN_LOG_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cycle_started_at", "timestamp"),
    ("recorded_by", "string"),
    ("row_kind", "string"),
    ("outcome", "string"),
    ("events_landed", "bigint"),
    ("ingest_s", "double"),
    ("build_s", "double"),
    ("error_message", "string"),
    ("job_id", "string"),
    ("mart_name", "string"),
    ("landed_ts_ms", "bigint"),
    ("newest_second_ms", "bigint"),
    ("lag_s", "bigint"),
    ("bronze_bytes", "bigint"),
    ("marts_bytes", "bigint"),
    ("intermediate_bytes", "bigint"),
    ("lake_bytes", "bigint"),
    ("cycle_date", "date"),
)
# How many days of cycles the table keeps (TIDEMARK_RUN_LOG_DAYS); the writer drops older days.
RETENTION_DAYS = 14
# At most this many jobs are reported per cycle: the ones with the newest landed events. A lake
# collects a job id per Flink submission over months; the rows of a cycle stay bounded.
MAX_JOBS = 50
# A job is reported while its newest landed event is within this many hours of the lake's newest
# landed event (event time, so a replayed history reads the same): a job that stopped a day
# before the others has ended.
ACTIVE_JOB_HOURS = 24
ERROR_CHARS = 2000


@dataclass(frozen=True)
class Cycle:
    """One cycle: when it started (UTC), who ran it, how it ended and what it cost."""

    started_at: dt.datetime
    recorded_by: str
    outcome: str
    events_landed: int | None = None
    ingest_s: float | None = None
    build_s: float | None = None
    error_message: str | None = None

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}: one of {', '.join(OUTCOMES)}")
        if self.started_at.tzinfo is None:
            raise ValueError("a cycle's start must be a UTC time, not a naive one")

    @classmethod
    def of_run(
        cls,
        started_at: dt.datetime,
        ok: bool,
        landed: int,
        ingest_s: float,
        build_s: float | None,
        detail: str = "",
    ) -> Cycle:
        """A ``tidemark run`` cycle from what it reported (``tidemark.cycles.CycleResult``)."""
        outcome = "failed" if not ok else "nothing new" if build_s is None else "ok"
        return cls(
            started_at.astimezone(dt.UTC),
            "tidemark run",
            outcome,
            landed,
            round(ingest_s, 3),
            None if build_s is None else round(build_s, 3),
            one_line(detail) if detail else None,
        )

    @classmethod
    def raised(cls, started_at: dt.datetime, exc: BaseException) -> Cycle:
        """A ``tidemark run`` cycle that ended with an exception instead of a result."""
        text = one_line(f"{type(exc).__name__}: {str(exc).strip()}".rstrip(": "))
        return cls(started_at.astimezone(dt.UTC), "tidemark run", "failed", error_message=text)


@dataclass(frozen=True)
class Freshness:
    """A mart's newest second of a job against the job's newest landed event."""

    job_id: str
    mart_name: str
    landed_ts_ms: int | None
    newest_second_ms: int | None

    @property
    def lag_s(self) -> int | None:
        """Whole seconds from the mart's newest second to the second of the newest landed event:
        0 when the mart holds the job's latest second."""
        if self.landed_ts_ms is None or self.newest_second_ms is None:
            return None
        return (second_of(self.landed_ts_ms) - self.newest_second_ms) // 1000


@dataclass(frozen=True)
class DiskUsage:
    """Bytes on disk under the lake: bronze, the marts (schema tidemark), the intermediate tables,
    and everything (the metastore, logs, the JVM archive and the caches too)."""

    bronze: int
    marts: int
    intermediate: int
    lake: int


def one_line(text: str) -> str:
    """``text`` on one line, at most ERROR_CHARS long."""
    flat = " ".join(text.split())
    return flat if len(flat) <= ERROR_CHARS else flat[: ERROR_CHARS - 1] + "…"


def second_of(ms: int) -> int:
    """The start of the second holding epoch milliseconds ``ms``."""
    return ms // 1000 * 1000


def active_jobs(landed: Mapping[str, int]) -> list[str]:
    """The jobs to report, newest first: within ACTIVE_JOB_HOURS of the newest landed event, at
    most MAX_JOBS."""
    if not landed:
        return []
    newest = max(landed.values())
    since = newest - ACTIVE_JOB_HOURS * 3_600_000
    recent = sorted(
        (job for job, ts in landed.items() if ts >= since), key=lambda job: (-landed[job], job)
    )
    return recent[:MAX_JOBS]


def freshness(
    landed: Mapping[str, int], newest: Mapping[str, Mapping[str, int]], jobs: Sequence[str]
) -> list[Freshness]:
    """One row per job of ``jobs`` and mart of MARTS: ``landed`` is each job's newest ts_ms,
    ``newest`` each mart's newest time column value per job (None where it has none)."""
    rows = []
    for job in jobs:
        for mart in MARTS:
            value = newest.get(mart, {}).get(job)
            rows.append(
                Freshness(job, mart, landed.get(job), None if value is None else second_of(value))
            )
    return rows


def run_log_rows(
    cycle: Cycle, fresh: Iterable[Freshness], disk: DiskUsage | None
) -> list[dict[str, object]]:
    """The rows one cycle adds to tidemark.run_log: its ``cycle`` row (outcome, seconds, error,
    bytes when measured), then a ``freshness`` row per job and mart."""
    day = cycle.started_at.astimezone(dt.UTC).date()
    base: dict[str, object] = {name: None for name, _ in RUN_LOG_COLUMNS}
    base.update(cycle_started_at=cycle.started_at, recorded_by=cycle.recorded_by, cycle_date=day)
    rows = [
        {
            **base,
            "row_kind": "cycle",
            "outcome": cycle.outcome,
            "events_landed": cycle.events_landed,
            "ingest_s": cycle.ingest_s,
            "build_s": cycle.build_s,
            "error_message": cycle.error_message,
            **(
                {}
                if disk is None
                else {
                    "bronze_bytes": disk.bronze,
                    "marts_bytes": disk.marts,
                    "intermediate_bytes": disk.intermediate,
                    "lake_bytes": disk.lake,
                }
            ),
        }
    ]
    for row in fresh:
        rows.append(
            {
                **base,
                "row_kind": "freshness",
                "job_id": row.job_id,
                "mart_name": row.mart_name,
                "landed_ts_ms": row.landed_ts_ms,
                "newest_second_ms": row.newest_second_ms,
                "lag_s": row.lag_s,
            }
        )
    return rows


def macro_args(rows: Sequence[Mapping[str, object]]) -> str:
    """``dbt run-operation tidemark_run_log_insert --args`` for ``rows``: JSON (which is YAML),
    times as ``yyyy-MM-dd HH:mm:ss.SSS`` UTC and days as ``yyyy-MM-dd``, Spark's literal forms."""

    def plain(value: object) -> object:
        if isinstance(value, dt.datetime):
            return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        if isinstance(value, dt.date):
            return value.isoformat()
        return value

    records = [[plain(row[name]) for name, _ in RUN_LOG_COLUMNS] for row in rows]
    return json.dumps({"rows": records}, ensure_ascii=False)


# -- tidemark status --------------------------------------------------------------------------


def iso_ms(ms: int | None, timespec: str = "milliseconds") -> str | None:
    """Epoch milliseconds as ISO 8601 UTC (``...Z``)."""
    if ms is None:
        return None
    at = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return at.isoformat(timespec=timespec).replace("+00:00", "Z")


def iso_time(at: dt.datetime | None) -> str | None:
    if at is None:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    return at.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def human_bytes(count: int | None) -> str | None:
    if count is None:
        return None
    size = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Section:
    """One part of ``tidemark status``: a title, its columns and rows."""

    name: str
    title: str
    columns: tuple[str, ...]
    rows: list[tuple[object, ...]]


CYCLE_COLUMNS = (
    "started_at",
    "recorded_by",
    "outcome",
    "events_landed",
    "ingest_s",
    "build_s",
    "error_message",
)
FRESHNESS_COLUMNS = ("job_id", "mart_name", "landed_at", "newest_second_at", "lag_s")
DISK_COLUMNS = ("area", "path", "bytes", "size")


def status_sections(
    cycles: Sequence[Cycle],
    fresh: Sequence[Freshness],
    disk: DiskUsage | None,
    paths: Mapping[str, str] | None = None,
) -> list[Section]:
    """What ``tidemark status`` prints: the last cycles (newest first), then per job each mart's
    newest second against the newest landed event, then the bytes on disk."""
    cycle_rows = [
        (
            iso_time(c.started_at),
            c.recorded_by,
            c.outcome,
            c.events_landed,
            c.ingest_s,
            c.build_s,
            c.error_message,
        )
        for c in sorted(cycles, key=lambda c: c.started_at, reverse=True)
    ]
    fresh_rows = [
        (
            f.job_id,
            f.mart_name,
            iso_ms(f.landed_ts_ms),
            iso_ms(f.newest_second_ms, "seconds"),
            f.lag_s,
        )
        for f in fresh
    ]
    where = paths or {}
    disk_rows = (
        []
        if disk is None
        else [
            (area, where.get(area), count, human_bytes(count))
            for area, count in (
                ("bronze", disk.bronze),
                ("marts", disk.marts),
                ("intermediate", disk.intermediate),
                ("lake", disk.lake),
            )
        ]
    )
    return [
        Section("cycles", "last cycles", CYCLE_COLUMNS, cycle_rows),
        Section("freshness", "newest second per job and mart", FRESHNESS_COLUMNS, fresh_rows),
        Section("disk", "bytes on disk", DISK_COLUMNS, disk_rows),
    ]


def write_sections(
    sections: Sequence[Section],
    notes: Sequence[str],
    fmt: str,
    write_rows: Callable[..., int],
    out,
    err,
) -> None:
    """Print ``sections`` in ``fmt`` with ``write_rows`` (tidemark.sql's): under a title each for
    ``table`` (with the notes after them), as CSV blocks after a ``# name`` line for ``csv``,
    and as JSON lines with a ``section`` field for ``jsonl``. For csv and jsonl the notes go to
    ``err``, so the output stays machine-readable."""
    for index, section in enumerate(sections):
        if fmt == "jsonl":
            columns = ("section", *section.columns)
            write_rows(columns, ((section.name, *row) for row in section.rows), fmt, out)
            continue
        if index:
            out.write("\n")
        out.write(f"# {section.name}\n" if fmt == "csv" else f"{section.title}\n")
        write_rows(section.columns, section.rows, fmt, out)
    for note in notes:
        if fmt == "table":
            out.write(f"note: {note}\n")
        else:
            err.write(f"tidemark status: note: {note}\n")


# -- tidemark status --check ------------------------------------------------------------------

# The marts whose newest second follows the job's newest landed event after every build: the
# per-second ones. The gauges lag up to a round (4 s) and the sampled back pressure up to a
# sampling interval by design, and the marts of changes (fct_valve_emissions,
# fct_task_watermarks) hold a row only where something changed, so their lag is no delay.
LAG_MARTS = tuple(mart for mart, column in MARTS.items() if column == "second_start_ms")
# `--max-failed`'s default: this many cycles in a row failed (tidemark run's back-off fails a
# cycle that waits to retry a failed build, so three are two failed builds a cycle apart and the
# wait for the third, or a capture folder gone for three cycles).
MAX_FAILED = 3
CHECK_CHARS = 400


@dataclass(frozen=True)
class Limits:
    """What ``tidemark status --check`` holds a lake to; None (or 0 failed) is not checked."""

    max_failed: int = MAX_FAILED
    max_lag_s: int | None = None
    max_age_s: float | None = None

    def __post_init__(self) -> None:
        if self.max_failed < 0:
            raise ValueError(f"--max-failed must be 0 (not checked) or more, got {self.max_failed}")
        for name, value in (("--max-lag-s", self.max_lag_s), ("--max-age-s", self.max_age_s)):
            if value is not None and value < 0:
                raise ValueError(f"{name} must be 0 or more seconds, got {value:g}")


@dataclass(frozen=True)
class Verdict:
    healthy: bool
    reason: str

    def line(self) -> str:
        text = f"{'ok' if self.healthy else 'unhealthy'}: {self.reason}"
        return text if len(text) <= CHECK_CHARS else text[: CHECK_CHARS - 1] + "…"


def check(
    cycles: Sequence[Cycle],
    fresh: Sequence[Freshness],
    now: dt.datetime,
    limits: Limits = Limits(),
    run_started: dt.datetime | None = None,
) -> Verdict:
    """``tidemark status --check``'s verdict on the newest ``cycles`` and the marts' ``fresh``ness.

    ``run_started`` is when the running ``tidemark run`` started (None: no run noted its start):
    only its own cycles count, so a run restarted after failed cycles is judged on what it
    does, and until it records its first cycle it is healthy (starting) unless that takes more
    than ``max_age_s``. Unhealthy, in this order: no cycle for more than ``max_age_s``; the
    newest ``max_failed`` cycles all failed; a per-second mart (LAG_MARTS) of a job more than
    ``max_lag_s`` behind the job's newest landed event. A lake with no cycle and no run is
    healthy: nothing has failed yet."""
    newest_first = sorted(cycles, key=lambda c: c.started_at, reverse=True)
    if run_started is not None:
        newest_first = [c for c in newest_first if c.started_at >= run_started]
        if not newest_first:
            age = _seconds(now - run_started)
            if limits.max_age_s is not None and age > limits.max_age_s:
                return Verdict(
                    False,
                    f"tidemark run started {age} s ago and has recorded no cycle "
                    f"(--max-age-s {limits.max_age_s:g})",
                )
            return Verdict(
                True, f"tidemark run started {age} s ago; its first cycle is not recorded yet"
            )
    if not newest_first:
        return Verdict(True, "no cycle recorded yet")
    newest = newest_first[0]
    age = _seconds(now - newest.started_at)
    when = f"{iso_time(newest.started_at)}, {age} s ago"
    if limits.max_age_s is not None and age > limits.max_age_s:
        return Verdict(False, f"no cycle since {when} (--max-age-s {limits.max_age_s:g})")
    failed = 0
    for cycle in newest_first:
        if cycle.outcome != "failed":
            break
        failed += 1
    if limits.max_failed and failed >= limits.max_failed:
        return Verdict(
            False,
            f"the last {failed} cycles failed (--max-failed {limits.max_failed}); the newest, at "
            f"{when}: {newest.error_message or 'no error recorded'}",
        )
    said = f"the newest cycle {newest.outcome}, at {when}"
    if limits.max_lag_s is None:
        return Verdict(True, said)
    lags = [(lag, f) for f in fresh if f.mart_name in LAG_MARTS and (lag := f.lag_s) is not None]
    behind = sorted(
        ((lag, f) for lag, f in lags if lag > limits.max_lag_s),
        key=lambda pair: (-pair[0], pair[1].job_id, pair[1].mart_name),
    )
    if behind:
        lag, worst = behind[0]
        more = f", and {len(behind) - 1} more (job, mart) pairs" if len(behind) > 1 else ""
        return Verdict(
            False,
            f"tidemark.{worst.mart_name} is {lag} s behind job {worst.job_id}'s newest landed "
            f"event (--max-lag-s {limits.max_lag_s}){more}",
        )
    most = max((lag for lag, _ in lags), default=None)
    lag = "no mart second to compare yet" if most is None else f"marts at most {most} s behind"
    return Verdict(True, f"{said}; {lag}")


def _seconds(delta: dt.timedelta) -> int:
    return max(0, int(delta.total_seconds()))
