"""Soak of the service, `tidemark run --serve`, on a new lake (issue 64).

    python bench/soak.py --cycles 60

Generates the `backpressure` scenario and cuts its events in arrival order into `--cycles`
batches (bench/serve.py's `slices_of`: the job graph and half the events, then equal slices).
Then, on a fresh lake:

* the service starts before any data lands, and `--clients` BI clients (PyHive) poll it from
  the first second, as dashboards with connection pools do: connect, query a mart's figures,
  now and then close and connect again; some of their queries fail on purpose (a table that
  does not exist, a syntax error). Their first attempts are refused (the port is not open yet),
  then answered with TABLE_OR_VIEW_NOT_FOUND until the first build;
* every soak cycle puts one new batch in the feed (one folder, renamed in at once) and waits for
  the service's cycle that builds it; then the marts' figures (row count and an order-free hash,
  bench/serve.py's `figures_query`) are read through the service as the cycle's reference;
* in the middle (`--kill-at`), once that cycle's ingest committed and its build has run for
  about half a build, the service's process group (Python and the JVM) gets SIGKILL, and the
  same command starts again at once, on the same port: no manual step;
* at the end a second fresh lake gets the same batches: the events landed by the kill, then all
  of them, each built from scratch (`--full-refresh`); the soak's marts must equal both.

Every BI answer is judged against the references: the figures before its cycle or after it,
TABLE_OR_VIEW_NOT_FOUND while the mart was not built yet, the clear error an on-purpose bad
query deserves, or a refused or broken connection while the service was not listening (before
its first start and from the kill to the restart's "listening" line). Anything else counts as
wrong or unexpected. Also measured: every line the service printed (stdout and stderr, nothing
left out) per cycle; the driver JVM's heap after a full GC (`jcmd GC.run`, `GC.heap_info`)
after cycle `--heap-at` and after the last; the lake's files after every cycle, per top folder;
and the restart's seconds to its first ok cycle against the cold start's.

Exit 1 when a correctness target fails (a failed cycle, a batch not built, a wrong answer, an
unexpected error, marts unlike the full build); the timing, log, heap and file targets are
reported, met or not.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import queue
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gauges import ROOT, _environment, fresh_work, generate_backpressure  # noqa: E402
from bench.serve import MARTS, figures_query, slices_of  # noqa: E402
from tests.ports import free_port  # noqa: E402
from tests.processes import kill_group, stop  # noqa: E402

BIN = Path(sys.executable).parent
MISSING = "not built"  # a mart's figures before its first build: the query fails, not found
# The queries that fail on purpose, and the error class each must fail with.
BAD_QUERIES = {
    "bad table": ("select count(*) from tidemark.no_such_mart", "TABLE_OR_VIEW_NOT_FOUND"),
    "bad syntax": ("selec count(*) from tidemark.dim_vertices", "PARSE_SYNTAX_ERROR"),
}
# What a client's socket says when the server is not there (refused) or went away (killed).
CONNECTION_ERRORS = (
    "connection refused",
    "could not connect",
    "connection reset",
    "broken pipe",
    "tsocket read 0 bytes",
    "end of file",
    "errno 111",
    "errno 104",
    "errno 32",
    "connection aborted",
    "timed out",
    "ttransportexception",
)
# How an answer is judged (judge): the first four are right or expected, the last two are not.
RIGHT, NOT_BUILT, ON_PURPOSE, DOWN, WRONG, UNEXPECTED = (
    "right", "not built yet", "bad on purpose", "service down", "wrong", "unexpected error",
)  # fmt: skip
EXPECTED = (RIGHT, NOT_BUILT, ON_PURPOSE, DOWN)
CYCLE_LINE = re.compile(
    r"^tidemark run: cycle (?P<number>\d+): (?P<state>ok|FAILED): (?P<landed>\d+) events landed "
    r"in (?P<ingest>[\d.]+) s, (?:build (?P<build>[\d.]+) s|no build(?P<idle> \(nothing new\))?)"
)
# Columns that hold the wall clock of a landing (when a row was ingested), which a second lake
# cannot share: left out of the figures compared with the full build.
WALL_CLOCK = {"dim_vertices": ("updated_at",)}
# The targets of issue 64 (part 6) that are seconds, lines, bytes and files, not correctness.
RESTART_TARGET = 1.2  # restart to its first ok cycle, against the cold start's
LINES_TARGET = 5.0  # the service's output lines per soak cycle (a batch landed), on average
HEAP_TARGET = 1.2  # heap after the last cycle against after cycle --heap-at
# A restart that exits at once (its port still held by the killed server's connections) is
# started again this often, for at most this long, as a supervisor (systemd's Restart=) would.
RESTART_EVERY_S, RESTART_FOR_S = 5.0, 300.0
# A folder's file count "grows per cycle" when its trend over the soak's second half is above
# this many files per cycle (a few files come and go with each publish and collection).
FILES_SLOPE_LIMIT = 0.5


# --- pure parts: parsing, judging, the report (tests/unit/test_bench_soak.py) ---------------


def comparable_query(mart: str) -> str:
    """A mart's figures as `figures_query`'s, without its WALL_CLOCK columns (SQL pipe syntax):
    the same events built in another lake give the same figures."""
    dropped = WALL_CLOCK.get(mart)
    if not dropped:
        return figures_query(mart)
    rows = f"from tidemark.{mart} |> drop {', '.join(dropped)}"
    return f"select count(*), bit_xor(xxhash64(*)) from ({rows})"


@dataclass(frozen=True)
class CycleLine:
    """One `tidemark run: cycle N: ...` line of the service (CycleResult.describe)."""

    number: int
    ok: bool
    landed: int
    ingest_s: float
    build_s: float | None  # None: no build
    nothing_new: bool
    text: str


def parse_cycle(line: str) -> CycleLine | None:
    """The cycle a line of the service reports, or None for any other line. Whatever follows
    the build's seconds (`; details`, `(took longer than --every)`) is kept in ``text`` only."""
    found = CYCLE_LINE.match(line)
    if found is None:
        return None
    build = found.group("build")
    return CycleLine(
        number=int(found.group("number")),
        ok=found.group("state") == "ok",
        landed=int(found.group("landed")),
        ingest_s=float(found.group("ingest")),
        build_s=float(build) if build is not None else None,
        nothing_new=found.group("idle") is not None,
        text=line.rstrip("\n"),
    )


class BatchWait:
    """Whether the cycles seen since a batch was put in the feed built it: a cycle that built
    after every event of the batch landed, or (duplicates, quarantined lines) a cycle with nothing
    new after one that built. After a restart, the new process's first ok build: the killed one
    may have landed the batch already, and a process's first cycle builds whatever landed."""

    def __init__(self, lines: int, after_restart: bool = False) -> None:
        self.lines = lines
        self.after_restart = after_restart
        self.landed = 0
        self.built = False

    def done(self, cycle: CycleLine) -> bool:
        if not cycle.ok:
            return False  # a failed cycle builds nothing that counts; its retry comes
        self.landed += cycle.landed
        if cycle.build_s is not None:
            self.built = True
            return self.after_restart or self.landed >= self.lines
        return cycle.nothing_new and self.built


def error_text(exc: BaseException) -> str:
    """The first line of what a BI client's query or connection failed with: HiveServer2's
    error message for a failed statement (PyHive wraps the whole Thrift response), else the
    exception's own text."""
    for arg in getattr(exc, "args", ()):
        message = getattr(getattr(arg, "status", None), "errorMessage", None)
        if message:
            return message.strip().splitlines()[0][:400]
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text.splitlines()[0][:400]}"


def error_kind(text: str) -> str:
    """`connection`, the error class Spark names in brackets (`TABLE_OR_VIEW_NOT_FOUND`), or
    `unclear` for an error that names no class."""
    if any(marker in text.lower() for marker in CONNECTION_ERRORS):
        return "connection"
    named = re.search(r"\[([A-Z][A-Z0-9_]+)(?:\.[A-Z0-9_]+)?\]", text)
    return named.group(1) if named else "unclear"


@dataclass
class Answer:
    """One thing a BI client asked: a mart's figures, a bad query, or a connection."""

    client: int
    kind: str  # "figures", a key of BAD_QUERIES, or "connect"
    mart: str | None
    started: float
    ended: float
    answer: tuple | None = None
    error: str | None = None


Reference = tuple[float, dict]  # when its reading began, each mart's figures (or MISSING)


def allowed(references: Sequence[Reference], started: float, mart: str) -> list:
    """A mart's figures before the cycle a query started in, and after it. ``references`` are
    in time order, the first at -inf (a new lake: every mart MISSING); a query that began after
    reference k and before reference k + 1 ran during cycle k + 1."""
    k = max(i for i, (at, _) in enumerate(references) if at <= started)
    return [figures[mart] for _, figures in references[k : k + 2]]


def _overlaps(answer: Answer, down: Sequence[tuple[float, float]]) -> bool:
    return any(answer.started <= end and answer.ended >= start for start, end in down)


def judge(
    answer: Answer, references: Sequence[Reference], down: Sequence[tuple[float, float]]
) -> str:
    """RIGHT, NOT_BUILT, ON_PURPOSE, DOWN (expected), WRONG or UNEXPECTED: see the module's
    docstring. ``down`` are the spans the service was not listening."""
    kind = error_kind(answer.error) if answer.error is not None else None
    if kind == "connection":
        return DOWN if _overlaps(answer, down) else UNEXPECTED
    if answer.kind == "connect":
        return UNEXPECTED  # only failed connections are recorded; this one not for the socket
    if answer.kind in BAD_QUERIES:
        if answer.error is None:
            return WRONG
        return ON_PURPOSE if kind == BAD_QUERIES[answer.kind][1] else UNEXPECTED
    assert answer.mart is not None
    expected = allowed(references, answer.started, answer.mart)
    if answer.error is None:
        return RIGHT if answer.answer in expected else WRONG
    if kind == "TABLE_OR_VIEW_NOT_FOUND":
        return NOT_BUILT if MISSING in expected else WRONG
    return UNEXPECTED


def heap_used_kib(heap_info: str) -> int:
    """The Java heap in use, KiB, from `jcmd PID GC.heap_info`: the generations' (Parallel,
    Serial) or the whole heap's (G1) `used`, not Metaspace's nor class space's."""
    used = 0
    for line in heap_info.splitlines():
        found = re.match(r"\s*(\S.*?)\s+total (\d+)K, used (\d+)K", line)
        if found and not found.group(1).lower().startswith(("metaspace", "class space")):
            used += int(found.group(3))
    return used


def line_shape(line: str) -> str:
    """A log line with its numbers, quoted names and paths blurred: lines of one kind alike."""
    shape = re.sub(r"\d+(\.\d+)?", "#", line.strip())
    shape = re.sub(r"(/[^\s:'\"]+)+", "/...", shape)
    return shape[:90]


def line_kind(line: str) -> str:
    """What a line of the service's output is: a cycle's, a failed BI query's, a Java stack's,
    the start's and stop's, or other (dbt's, Spark's warnings, ...)."""
    text = line.strip()
    if text.startswith("tidemark run: cycle "):
        return "cycles"
    if "BI query failed" in text:
        return "failed BI queries"
    if text.startswith(("at ", "Caused by:", "... ")) or re.match(
        r"^[\w.$]+(Exception|Error)\b", text
    ):
        return "Java stacks"
    if text.startswith(
        ("tidemark run: listening", "tidemark run: stopping", "tidemark run: error")
    ):
        return "start and stop"
    return "other"


def slope(values: Sequence[float]) -> float:
    """The least-squares trend of ``values`` per step (0 for fewer than two)."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    spread = sum((x - mean_x) ** 2 for x in range(n))
    return sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values)) / spread


@dataclass
class Verdict:
    target: str
    figure: str
    met: bool | None  # None: not measured in this run
    hard: bool  # a correctness target: the soak exits 1 when it fails


@dataclass
class SoakResult:
    cycles: int
    clients: int
    every_s: float
    kill_at: int | None
    batches_built: int
    service_cycles: int
    failed_cycles: list[str]
    answers: dict[str, int]  # per judgement
    answers_by_kind: dict[str, int]  # per kind of query, every judgement
    wrong: list[str]
    unexpected: list[str]
    expected_errors: dict[str, int]  # the first line of each expected error (shape), counted
    cold_start_s: float | None
    cold_listening_s: float | None
    restart_s: float | None
    restart_listening_s: float | None
    restart_attempts: int
    killed_in_build_s: float | None  # seconds into the build when killed (None: no kill)
    killed_mid_build: bool | None
    after_kill_equal: dict[str, bool]
    final_equal: dict[str, bool]
    log_lines: int
    log_shapes: list[tuple[str, int]]
    log_kinds: dict[str, int]
    heap_kib: dict[str, int]  # after cycle N (first JVM / after the restart) and at the end
    files: list[dict[str, int]]  # per soak cycle: files per top folder of the lake
    cycle_s: list[float]  # per soak cycle: from putting the batch in to its cycle's line
    maintain_every_s: float | None = None
    heap_at: int = 10
    restart_refused_s: float = 0.0  # of restart_s: the attempts that exited at once
    notes: list[str] = field(default_factory=list)

    @property
    def figure_answers(self) -> int:
        return self.answers_by_kind.get("figures", 0)

    def verdicts(self) -> list[Verdict]:
        marts = len(MARTS)
        right = self.answers.get(RIGHT, 0)
        answered = right + self.answers.get(WRONG, 0)
        out = [
            Verdict(
                "every batch built by its cycle (a new lake served from its first minute)",
                f"{self.batches_built} of {self.cycles}",
                self.batches_built == self.cycles,
                hard=True,
            ),
            Verdict(
                "0 failed cycles (none caused by BI sessions)",
                f"{len(self.failed_cycles)} failed of {self.service_cycles}",
                not self.failed_cycles,
                hard=True,
            ),
            Verdict(
                "100 % of BI answers the figures before or after their cycle",
                f"{right:,} of {answered:,} answers with rows; {self.answers.get(WRONG, 0)} "
                "wrong (rows or errors)",
                answered > 0 and not self.wrong,
                hard=True,
            ),
            Verdict(
                "every other answer a clear, expected error",
                ", ".join(f"{self.answers.get(k, 0):,} {k}" for k in EXPECTED[1:])
                + f"; {self.answers.get(UNEXPECTED, 0)} unexpected",
                not self.unexpected,
                hard=True,
            ),
        ]
        if self.kill_at is not None:
            equal = sum(self.after_kill_equal.values())
            differ = _differ(self.after_kill_equal)
            out += [
                Verdict(
                    "after the kill the marts equal a full build, no manual step",
                    f"{equal} of {marts} marts equal after cycle {self.kill_at}{differ}; restarted "
                    f"by the same command ({self.restart_attempts} start(s))",
                    equal == marts and bool(self.after_kill_equal),
                    hard=True,
                ),
                # Serving is answering BI queries: the restart serves the marts the killed
                # process published from the moment it listens, before its first cycle ends.
                Verdict(
                    f"restart to serving <= {RESTART_TARGET}x a cold start",
                    _ratio_text(self.restart_listening_s, self.cold_listening_s, "listening")
                    + "; "
                    + _ratio_text(self.restart_s, self.cold_start_s, "first ok cycle")
                    + self._without_refused(),
                    None
                    if self.restart_listening_s is None or not self.cold_listening_s
                    else self.restart_listening_s <= RESTART_TARGET * self.cold_listening_s,
                    hard=False,
                ),
            ]
        equal = sum(self.final_equal.values())
        differ = _differ(self.final_equal)
        per_cycle = self.log_lines / max(self.cycles, 1)
        heap_then, heap_end = (
            self.heap_kib.get(f"after cycle {self.heap_at}"),
            self.heap_kib.get("at the end"),
        )
        growing = self.growing_folders()
        out += [
            Verdict(
                "the marts at the end equal a full build",
                f"{equal} of {marts} marts equal{differ}",
                equal == marts and bool(self.final_equal),
                hard=True,
            ),
            Verdict(
                f"log <= {LINES_TARGET:g} lines per cycle on average",
                f"{per_cycle:.1f} ({self.log_lines:,} lines over {self.cycles} cycles; "
                f"{self.log_lines / max(self.service_cycles, 1):.1f} per cycle of the service, "
                f"{self.service_cycles} with those that landed nothing)",
                per_cycle <= LINES_TARGET,
                hard=False,
            ),
            Verdict(
                f"heap after the soak <= {HEAP_TARGET}x after cycle {self.heap_at}",
                _ratio_text(heap_end, heap_then, "MiB", scale=1 / 1024),
                None if not heap_then or heap_end is None else heap_end <= HEAP_TARGET * heap_then,
                hard=False,
            ),
            Verdict(
                "no file count that grows per cycle",
                self.files_text() + (f"; growing: {', '.join(growing)}" if growing else ""),
                None if len(self.files) < 4 else not growing,
                hard=False,
            ),
        ]
        return out

    def _without_refused(self) -> str:
        if not self.restart_refused_s or self.restart_s is None or not self.cold_start_s:
            return ""
        rest = self.restart_s - self.restart_refused_s
        return (
            f"; {rest / self.cold_start_s:.2f}x without the {self.restart_refused_s:.0f} s its "
            "starts exited at once"
        )

    def trends(self) -> dict[str, float]:
        """Files per cycle over the soak's second half, per top folder of the lake."""
        half = self.files[len(self.files) // 2 :]
        folders = sorted({name for counts in half for name in counts})
        return {name: slope([c.get(name, 0) for c in half]) for name in folders}

    def growing_folders(self) -> list[str]:
        return [f"{n} {s:+.1f}/cycle" for n, s in self.trends().items() if s > FILES_SLOPE_LIMIT]

    def files_text(self) -> str:
        if not self.files:
            return "not counted"
        at = min(self.heap_at, len(self.files)) - 1
        then, end = sum(self.files[at].values()), sum(self.files[-1].values())
        trend = ", ".join(f"{n} {s:+.1f}" for n, s in self.trends().items())
        return f"{then:,} files after cycle {at + 1}, {end:,} at the end; per cycle: {trend}"

    def correct(self) -> bool:
        return all(v.met for v in self.verdicts() if v.hard)

    def report(self) -> str:
        lines = [
            f"soak: {self.cycles} cycles of tidemark run --serve (--every {self.every_s:g}"
            + (f", --maintain-every {self.maintain_every_s:g}" if self.maintain_every_s else "")
            + f"), {self.clients} BI clients, "
            + (f"SIGKILL during cycle {self.kill_at}" if self.kill_at else "no kill"),
            f"  cycle seconds (batch in to its cycle's line): median "
            f"{statistics.median(self.cycle_s) if self.cycle_s else 0:.1f}, max "
            f"{max(self.cycle_s, default=0):.1f}",
            f"  BI requests {sum(self.answers.values()):,}: "
            + ", ".join(f"{n:,} {k}" for k, n in sorted(self.answers_by_kind.items())),
        ]
        if self.kill_at is not None:
            into = self.killed_in_build_s
            lines.append(
                f"  killed {into:.1f} s after the cycle's ingest committed"
                + ("" if self.killed_mid_build else " (its cycle had already ended)")
                if into is not None
                else "  the kill did not happen"
            )
        for verdict in self.verdicts():
            met = {True: "met", False: "NOT MET", None: "not measured"}[verdict.met]
            lines.append(
                f"{'*' if verdict.hard else ' '} {verdict.target}: {verdict.figure}  [{met}]"
            )
        lines += [f"  failed cycle: {line}" for line in self.failed_cycles[:5]]
        lines += [f"  wrong: {text}" for text in self.wrong[:5]]
        lines += [f"  unexpected: {text}" for text in self.unexpected[:5]]
        lines += [f"  expected error ({n}x): {text}" for text, n in self.expected_errors.items()]
        lines.append(f"  heap after a full GC, MiB: {_heap_text(self.heap_kib)}")
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in self.log_kinds.items())
        lines.append(f"  the service's lines: {kinds or 'none'}; the commonest:")
        lines += [f"    {n:6,}  {shape}" for shape, n in self.log_shapes[:8]]
        lines += [f"  note: {note}" for note in self.notes]
        lines.append("  (* a correctness target: the soak exits 1 when one is not met)")
        return "\n".join(lines)


def _differ(equal: dict[str, bool]) -> str:
    differ = [mart for mart, same in equal.items() if not same]
    return f" ({', '.join(differ)} not)" if differ else ""


def _ratio_text(value, base, unit: str, scale: float = 1.0) -> str:
    if value is None or not base:
        return f"{unit}: not measured"
    return f"{value * scale:.1f} against {base * scale:.1f} ({value / base:.2f}x, {unit})"


def _heap_text(heap: dict[str, int]) -> str:
    return ", ".join(f"{k} {v / 1024:.0f}" for k, v in heap.items()) or "not measured"


# --- the service, the clients, the lake --------------------------------------------------------


class SoakService:
    """One `tidemark run FEED --serve` in a process group of its own (Python and its JVM, so one
    SIGKILL takes both), every line it prints kept with the time it came."""

    def __init__(
        self, command: list[str], env: dict[str, str], index: int, log: Path | None = None
    ) -> None:
        self.index = index
        self.log = log
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace", start_new_session=True,
        )  # fmt: skip
        self.lines: list[tuple[float, str]] = []
        self.cycles: queue.Queue[tuple[float, CycleLine] | None] = queue.Queue()
        self.listening_at: float | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        copy = self.log.open("a") if self.log is not None else None
        for line in self.process.stdout:
            now = time.monotonic()
            self.lines.append((now, line))
            if copy is not None:
                copy.write(line)
                copy.flush()
            if self.listening_at is None and "listening on" in line:
                self.listening_at = now
            cycle = parse_cycle(line)
            if cycle is not None:
                self.cycles.put((now, cycle))
        if copy is not None:
            copy.close()
        self.cycles.put(None)  # the process ended

    def next_cycle(self, timeout_s: float) -> tuple[float, CycleLine]:
        try:
            item = self.cycles.get(timeout=timeout_s)
        except queue.Empty:
            raise RuntimeError(f"no cycle in {timeout_s:.0f} s:\n{self.tail()}") from None
        if item is None:
            self.cycles.put(None)
            raise RuntimeError(f"the service ended (exit {self.process.wait()}):\n{self.tail()}")
        return item

    def tail(self, lines: int = 40) -> str:
        return "".join(line for _, line in self.lines[-lines:])

    def java_pid(self) -> int | None:
        """The driver JVM: the `java` process of the service's process group."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)
                name = fields[0].split("(", 1)[1]
                group = int(fields[1].split()[2])
            except (OSError, IndexError, ValueError):
                continue
            if name == "java" and group == self.process.pid:
                return int(stat.parent.name)
        return None

    def kill(self) -> None:
        kill_group(self.process)
        self.join()

    def join(self) -> None:
        self._reader.join(timeout=30)

    def stop(self) -> None:
        stop(self.process)
        self._reader.join(timeout=30)


def _connect(port: int):
    from pyhive import hive

    # Thrift logs every refused connection at ERROR; the soak counts them itself.
    logging.getLogger("thrift").setLevel(logging.CRITICAL)
    return hive.connect(host="127.0.0.1", port=port, username="soak")


def _close(connection) -> None:
    with contextlib.suppress(Exception):  # a connection to a killed server closes as it can
        connection.close()


def client(
    number: int, port: int, stop: threading.Event, answers: list[Answer], think_s: float
) -> None:
    """A dashboard: connects (again a second after a refusal), asks one query at a time, mostly
    a mart's figures and now and then one of BAD_QUERIES, and every twentieth query or so closes
    its connection and opens a new one, as a pool recycles them. A connection that broke is
    replaced. Never raises: everything it saw is in ``answers``."""
    rng = random.Random(64 + number)
    connection = None
    while not stop.is_set():
        if connection is None:
            started = time.monotonic()
            try:
                connection = _connect(port)
            except Exception as exc:  # noqa: BLE001 - judged later
                answers.append(
                    Answer(
                        number, "connect", None, started, time.monotonic(), None, error_text(exc)
                    )
                )
                stop.wait(1.0)
                continue
        draw = rng.random()
        bad = [name for i, name in enumerate(BAD_QUERIES) if 0.05 * i <= draw < 0.05 * (i + 1)]
        kind, mart = (bad[0], None) if bad else ("figures", rng.choice(MARTS))
        query = BAD_QUERIES[kind][0] if bad else figures_query(mart)
        started = time.monotonic()
        try:
            cursor = connection.cursor()
            cursor.execute(query)
            rows = cursor.fetchall()
            answers.append(
                Answer(
                    number, kind, mart, started, time.monotonic(), tuple(rows[0]) if rows else ()
                )
            )
        except Exception as exc:  # noqa: BLE001 - judged later
            text = error_text(exc)
            answers.append(Answer(number, kind, mart, started, time.monotonic(), None, text))
            if error_kind(text) in ("connection", "unclear"):
                _close(connection)
                connection = None
        if connection is not None and rng.random() < 0.05:
            _close(connection)
            connection = None
        stop.wait(think_s)
    if connection is not None:
        _close(connection)


class Reader:
    """The references: every mart's figures, read through the service between cycles (nothing
    writes then), a mart not built yet as MISSING. Connects again after the restart."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = None

    def figures(self, query: Callable[[str], str] = figures_query, deadline_s: float = 300) -> dict:
        until = time.monotonic() + deadline_s
        while True:
            try:
                if self.connection is None:
                    self.connection = _connect(self.port)
                return {mart: self._one(query(mart)) for mart in MARTS}
            except Exception as exc:
                if self.connection is not None:
                    _close(self.connection)
                    self.connection = None
                if error_kind(error_text(exc)) != "connection" or time.monotonic() > until:
                    raise
                time.sleep(1)

    def _one(self, query: str):
        cursor = self.connection.cursor()
        try:
            cursor.execute(query)
        except Exception as exc:
            if error_kind(error_text(exc)) == "TABLE_OR_VIEW_NOT_FOUND":
                return MISSING
            raise
        return tuple(cursor.fetchall()[0])

    def close(self) -> None:
        if self.connection is not None:
            _close(self.connection)


def heap_kib(pid: int) -> int | None:
    """The JVM's heap in use after a full GC (`jcmd PID GC.run`), KiB; None if jcmd failed."""
    jcmd = shutil.which("jcmd") or str(Path(os.environ.get("JAVA_HOME", "/usr")) / "bin" / "jcmd")
    try:
        subprocess.run([jcmd, str(pid), "GC.run"], capture_output=True, timeout=180, check=True)
        info = subprocess.run(
            [jcmd, str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60,
            check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return heap_used_kib(info) or None


def count_files(lake: Path) -> dict[str, int]:
    """The lake's files per top folder (bronze, warehouse, metastore, logs, ...)."""
    counts: Counter[str] = Counter()
    for folder, _, names in os.walk(lake):
        relative = Path(folder).relative_to(lake)
        top = relative.parts[0] if relative.parts else "."
        counts[top] += len(names)
    return dict(sorted(counts.items()))


def _commits(lake: Path) -> int:
    """Commits of the ingest log so far: one more once a cycle's ingest finished."""
    log = lake / "bronze" / "ingest_log" / "_delta_log"
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


def _lines(files: Sequence[Path]) -> int:
    return sum(1 for path in files for _ in path.open("rb"))


class Feed:
    """A feed folder that gets each batch as one folder, renamed in at once: a cycle lands all
    of a batch or none of it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.staging = folder.parent / f"{folder.name}.staging"
        folder.mkdir(parents=True)
        self.staging.mkdir()

    def put(self, name: str, files: Sequence[Path]) -> None:
        batch = self.staging / name
        batch.mkdir()
        for path in files:
            shutil.copy(path, batch / path.name)
        os.replace(batch, self.folder / name)


# --- the soak ----------------------------------------------------------------------------------


@dataclass
class SoakOptions:
    cycles: int = 60
    every_s: float = 20.0
    clients: int = 4
    kill_at: int | None = 30  # None: no kill
    heap_at: int = 10
    maintain_every_s: float | None = 300.0
    tests_every: int = 10
    think_s: float = 0.2
    kill_fraction: float = 0.5  # of the median build so far, after the cycle's ingest committed
    batch_timeout_s: float = 900.0
    progress: Callable[[str], None] = lambda text: None
    environment: Callable[[Path], dict[str, str]] = _environment  # a lake's folder: its env


def service_command(feed: Path, port: int, options: SoakOptions, *more: str) -> list[str]:
    command = [str(BIN / "tidemark"), "run", str(feed), "--every", f"{options.every_s:g}"]
    command += ["--tests-every", str(options.tests_every), "--serve", "--port", str(port)]
    if options.maintain_every_s:
        command += ["--maintain-every", f"{options.maintain_every_s:g}"]
    return [*command, *more]


def soak(work: Path, events: Path, options: SoakOptions) -> SoakResult:
    """The soak (see the module's docstring) in ``work``, over the generated ``events``."""
    say = options.progress
    batches = slices_of(events, work / "slices", options.cycles - 1)
    lake = work / "lake"
    feed = Feed(work / "feed")
    port = free_port()
    env = options.environment(lake)
    command = service_command(feed.folder, port, options)
    services = [SoakService(command, env, 1, work / "service-1.log")]
    answers: list[Answer] = []
    stop = threading.Event()
    clients = [
        threading.Thread(target=client, args=(n, port, stop, answers, options.think_s), daemon=True)
        for n in range(options.clients)
    ]
    for thread in clients:
        thread.start()
    reader = Reader(port)
    down: list[tuple[float, float]] = []
    references: list[Reference] = [(float("-inf"), dict.fromkeys(MARTS, MISSING))]
    result = SoakResult(
        cycles=options.cycles, clients=options.clients, every_s=options.every_s,
        kill_at=options.kill_at, batches_built=0, service_cycles=0, failed_cycles=[], answers={},
        answers_by_kind={}, wrong=[], unexpected=[], expected_errors={}, cold_start_s=None,
        cold_listening_s=None, restart_s=None, restart_listening_s=None, restart_attempts=0,
        killed_in_build_s=None, killed_mid_build=None, after_kill_equal={}, final_equal={},
        log_lines=0, log_shapes=[], log_kinds={}, heap_kib={}, files=[], cycle_s=[],
        maintain_every_s=options.maintain_every_s, heap_at=options.heap_at,
    )  # fmt: skip
    builds: list[float] = []
    kill_figures: dict | None = None
    final_figures: dict = {}

    def seen(service: SoakService, cycle: CycleLine) -> None:
        result.service_cycles += 1
        if not cycle.ok:
            result.failed_cycles.append(f"process {service.index}: {cycle.text}")
        if cycle.build_s is not None and cycle.ok:
            builds.append(cycle.build_s)

    def wait_built(service: SoakService, wait: BatchWait) -> None:
        until = time.monotonic() + options.batch_timeout_s
        while True:
            _, cycle = service.next_cycle(max(1.0, until - time.monotonic()))
            seen(service, cycle)
            if wait.done(cycle):
                return

    def sample_heap(service: SoakService, labels: list[str]) -> None:
        pid = service.java_pid()
        used = heap_kib(pid) if pid is not None else None
        if used is not None:
            result.heap_kib.update(dict.fromkeys(labels, used))

    heap_labels = {options.heap_at: [f"after cycle {options.heap_at}"]}
    if options.kill_at:
        heap_labels.setdefault(options.kill_at - 1, []).append(
            f"before the kill (cycle {options.kill_at - 1})"
        )
        again = options.kill_at + options.heap_at - 1
        if again < options.cycles:
            heap_labels.setdefault(again, []).append(
                f"after cycle {again} (the restarted JVM's {options.heap_at}th)"
            )
    heap_labels.setdefault(options.cycles, []).append("at the end")
    first = services[0]
    try:
        # The cold start: a new lake, nothing in the feed; its first cycle builds (empty marts).
        _, cycle = first.next_cycle(options.batch_timeout_s)
        seen(first, cycle)
        while not cycle.ok:
            _, cycle = first.next_cycle(options.batch_timeout_s)
            seen(first, cycle)
        result.cold_start_s = time.monotonic() - first.started
        result.cold_listening_s = (first.listening_at or time.monotonic()) - first.started
        down.append((first.started - 1, first.listening_at or time.monotonic()))
        say(f"cold start: first ok cycle after {result.cold_start_s:.1f} s")
        references.append((time.monotonic(), reader.figures()))
        for index, files in enumerate(batches):
            number = index + 1
            service = services[-1]
            put_at = time.monotonic()
            commits = _commits(lake)
            feed.put(f"batch-{number:04d}", files)
            wait = BatchWait(_lines(files))
            if number == options.kill_at:
                service = _kill_and_restart(
                    services, command, env, lake, commits, builds, options, result, down, seen
                )
                wait = BatchWait(_lines(files), after_restart=True)
            wait_built(service, wait)
            result.cycle_s.append(time.monotonic() - put_at)
            result.batches_built += 1
            if service.index > 1 and result.restart_s is None:
                result.restart_s = time.monotonic() - service.started
                listening = service.listening_at or time.monotonic()
                result.restart_listening_s = listening - service.started
                say(f"restart: first ok cycle after {result.restart_s:.1f} s")
            references.append((time.monotonic(), reader.figures()))
            if number == options.kill_at:
                kill_figures = reader.figures(comparable_query)
            if number == options.cycles:
                final_figures = reader.figures(comparable_query)
            result.files.append(count_files(lake))
            if number in heap_labels:
                sample_heap(service, heap_labels[number])
            say(
                f"cycle {number}/{options.cycles}: {result.cycle_s[-1]:.1f} s, "
                f"{len(answers):,} BI requests so far, {sum(result.files[-1].values()):,} files"
            )
    except RuntimeError as exc:
        say(f"the soak stopped: {exc}")
        result.notes.append(f"the soak stopped after {result.batches_built} cycles: {exc}"[:600])
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=120)
        reader.close()
        for service in services:
            service.stop()
    _judge_all(answers, references, down, result, first.started)
    all_lines = [line for service in services for _, line in service.lines]
    result.log_lines = len(all_lines)
    result.log_shapes = Counter(map(line_shape, all_lines)).most_common(12)
    result.log_kinds = dict(Counter(map(line_kind, all_lines)).most_common())
    if result.batches_built == options.cycles:
        say("the full builds of the same batches in a second lake")
        kill_batch = options.kill_at if kill_figures is not None else None
        full = full_builds(work, batches, kill_batch, options)
        if kill_batch is not None:
            result.after_kill_equal = _equal(kill_figures or {}, full[0])
        result.final_equal = _equal(final_figures, full[-1])
    return result


def _kill_and_restart(
    services: list[SoakService],
    command: list[str],
    env: dict[str, str],
    lake: Path,
    commits: int,
    builds: list[float],
    options: SoakOptions,
    result: SoakResult,
    down: list[tuple[float, float]],
    seen: Callable[[SoakService, CycleLine], None],
) -> SoakService:
    """SIGKILL the service's process group once the cycle's ingest committed and its build ran
    for ``kill_fraction`` of the median build so far, then start the same command again at once
    (and again every RESTART_EVERY_S, as a supervisor would, while it exits at once)."""
    service = services[-1]
    until = time.monotonic() + options.batch_timeout_s
    while _commits(lake) <= commits:
        if time.monotonic() > until or service.process.poll() is not None:
            raise RuntimeError(f"the cycle to kill never ingested:\n{service.tail()}")
        time.sleep(0.05)
    ingested = time.monotonic()
    time.sleep(options.kill_fraction * (statistics.median(builds) if builds else 10.0))
    killed = time.monotonic()
    service.kill()
    result.killed_in_build_s = killed - ingested
    result.killed_mid_build = True
    while True:  # the cycle lines that came before the kill: did the batch's build end?
        item = service.cycles.get()
        if item is None:
            break
        seen(service, item[1])
        if item[1].build_s is not None:
            result.killed_mid_build = False
    options.progress(f"SIGKILL {result.killed_in_build_s:.1f} s after the ingest committed")
    first_start = time.monotonic()
    refused: list[str] = []
    while True:
        result.restart_attempts += 1
        index = len(services) + 1
        restarted = SoakService(command, env, index, lake.parent / f"service-{index}.log")
        services.append(restarted)
        began = time.monotonic()
        while restarted.process.poll() is None and time.monotonic() - began < RESTART_EVERY_S:
            time.sleep(0.1)
        if restarted.process.poll() is None:
            break
        restarted.process.wait()
        restarted.join()
        refused.append(" | ".join(line.strip() for _, line in restarted.lines[-2:]))
        if time.monotonic() - first_start > RESTART_FOR_S:
            raise RuntimeError(f"the service did not start again:\n{restarted.tail()}")
        time.sleep(max(0.0, RESTART_EVERY_S - (time.monotonic() - began)))
    result.restart_refused_s = restarted.started - first_start
    if refused:
        took = result.restart_refused_s
        result.notes.append(
            f"the restart exited at once {len(refused)} time(s), for {took:.0f} s, restarted "
            f"every {RESTART_EVERY_S:g} s as a supervisor would: {refused[0]}"
        )
    restarted.started = first_start  # the restart's seconds count from its first attempt
    # Down until the restarted service says it listens (its Thrift server opens a bit before).
    while restarted.listening_at is None and restarted.process.poll() is None:
        if time.monotonic() > until:
            break
        time.sleep(0.1)
    down.append((killed, restarted.listening_at or time.monotonic()))
    return restarted


def _judge_all(
    answers: Sequence[Answer],
    references: Sequence[Reference],
    down: Sequence[tuple[float, float]],
    result: SoakResult,
    began: float,
) -> None:
    judged: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    expected_errors: Counter[str] = Counter()
    for answer in answers:
        verdict = judge(answer, references, down)
        judged[verdict] += 1
        kinds[answer.kind] += 1
        what = f"client {answer.client} at {answer.started - began:.1f} s, {answer.kind}" + (
            f" {answer.mart}" if answer.mart else ""
        )
        got = answer.error if answer.error is not None else answer.answer
        if verdict == WRONG:
            expected = allowed(references, answer.started, answer.mart) if answer.mart else "error"
            result.wrong.append(f"{what}: {got} not in {expected}")
        elif verdict == UNEXPECTED:
            result.unexpected.append(f"{what}: {got}")
        elif answer.error is not None:
            expected_errors[f"{verdict}: {line_shape(answer.error)}"] += 1
    result.answers = dict(judged)
    result.answers_by_kind = dict(kinds)
    result.expected_errors = dict(expected_errors.most_common(8))


def _equal(soaked: dict, full: dict) -> dict[str, bool]:
    return {mart: soaked.get(mart) == full.get(mart) for mart in MARTS}


def full_builds(
    work: Path,
    batches: Sequence[Sequence[Path]],
    kill_at: int | None,
    options: SoakOptions,
) -> list[dict]:
    """The marts' figures of a second fresh lake built from scratch: from the batches up to
    ``kill_at`` (when given), then from all of them (`--full-refresh`). One `tidemark run
    --serve` of its own, read through its endpoint."""
    feed = Feed(work / "full" / "feed")
    lake = work / "full" / "lake"
    parts = [batches[:kill_at], batches[kill_at:]] if kill_at else [batches]
    port = free_port()
    command = [
        str(BIN / "tidemark"), "run", str(feed.folder), "--every", "1", "--tests-every",
        "1000000", "--dbt=--full-refresh", "--serve", "--port", str(port),
    ]  # fmt: skip
    offset = 0
    for number, files in enumerate(parts[0], 1):
        feed.put(f"batch-{number:04d}", files)
    service = SoakService(command, options.environment(lake), 1, work / "full" / "service.log")
    reader = Reader(port)
    figures = []
    try:
        for index, part in enumerate(parts):
            if index:
                for number, files in enumerate(part, offset + 1):
                    feed.put(f"batch-{number:04d}", files)
            offset += len(part)
            wait = BatchWait(sum(_lines(files) for files in part))
            until = time.monotonic() + options.batch_timeout_s
            while True:
                _, cycle = service.next_cycle(max(1.0, until - time.monotonic()))
                if not cycle.ok:
                    raise RuntimeError(f"the full build failed: {cycle.text}\n{service.tail()}")
                if wait.done(cycle):
                    break
            figures.append(reader.figures(comparable_query))
            options.progress(f"full build of {offset} batches: {cycle.text}")
    finally:
        reader.close()
        service.stop()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("bench-data") / "soak")
    parser.add_argument("--scale", type=int, default=1, help="generator scale")
    parser.add_argument("--cycles", type=int, default=60, help="batches, one per cycle")
    parser.add_argument("--every", type=float, default=SoakOptions.every_s, help="run --every")
    parser.add_argument("--clients", type=int, default=4, help="BI clients polling")
    parser.add_argument(
        "--kill-at", type=int, default=None,
        help="the cycle whose build is killed (default: the middle; 0: no kill)",
    )  # fmt: skip
    parser.add_argument("--heap-at", type=int, default=10, help="the cycle to compare heap with")
    parser.add_argument(
        "--maintain-every", type=float, default=SoakOptions.maintain_every_s,
        help="run --maintain-every (0: no maintenance)",
    )  # fmt: skip
    parser.add_argument("--tests-every", type=int, default=SoakOptions.tests_every)
    parser.add_argument(
        "--think",
        type=float,
        default=SoakOptions.think_s,
        help="seconds between a client's queries",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.cycles < 2:
        parser.error("--cycles must be 2 or more")
    kill_at = args.cycles // 2 if args.kill_at is None else args.kill_at
    if kill_at and not 1 < kill_at <= args.cycles:
        parser.error(f"--kill-at must be 0 or from 2 to --cycles, got {kill_at}")
    work = fresh_work(parser, args.work)
    began = time.monotonic()

    def progress(text: str) -> None:
        print(f"[{time.monotonic() - began:7.1f} s] {text}", file=sys.stderr, flush=True)

    options = SoakOptions(
        cycles=args.cycles, every_s=args.every, clients=args.clients, kill_at=kill_at or None,
        heap_at=args.heap_at, maintain_every_s=args.maintain_every or None,
        tests_every=args.tests_every, think_s=args.think, progress=progress,
    )  # fmt: skip
    events = generate_backpressure(work / "generated", args.scale)
    result = soak(work, events, options)
    print(json.dumps(asdict(result), indent=2) if args.json else result.report())
    return 0 if result.correct() else 1


if __name__ == "__main__":
    sys.exit(main())
