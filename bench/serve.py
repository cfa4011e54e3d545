"""Benchmark and check of the one-process service, `tidemark run --serve` (issue 42).

    python bench/serve.py --cycles 10

Generates the `backpressure` scenario and splits its events in arrival order into a base and
`--cycles` slices. Then, in lakes of their own:

* cost: `tidemark run` and `tidemark run --serve` (no client connected) take turns, cycle by
  cycle: each lands the base, then one slice per cycle. Target: a cycle of `run --serve` costs
  at most 10 % more than the same cycle of `run` (the sums of their cycles compared);
* reads during cycles: `tidemark run --serve` again, while two BI clients (PyHive) query every
  mart without pause. After each cycle the marts' figures are read once more (nothing writes
  then): every answer a client got must be the figures of the cycle before or after it, and no
  query may fail. Each figure is a mart's row count and an order-free hash of its rows.

All figures come from one run, side by side. Each process builds models only after its first
cycle (`--tests-every` larger than the run), as most cycles of a schedule do.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gauges import ROOT, _environment, fresh_work, generate_backpressure  # noqa: E402

BIN = Path(sys.executable).parent
# What a BI tool reads: the gauge, watermark, analysis, dimension and conformance marts.
MARTS = (
    "fct_subtask_seconds",
    "fct_subtask_flink_gauges",
    "fct_vertex_seconds",
    "fct_valve_emissions",
    "fct_task_watermarks",
    "fct_watermark_seconds",
    "fct_backpressure_incidents",
    "fct_bottlenecks",
    "dim_vertices",
    "fct_capture_conformance",
)


def figures_query(mart: str) -> str:
    """A mart's figures: its rows and an order-free hash of them (the same rows, the same hash)."""
    return f"select count(*), bit_xor(xxhash64(*)) from tidemark.{mart}"


@dataclass
class Poll:
    mart: str
    started: float
    answer: tuple | None
    error: str | None = None


@dataclass
class ServeBench:
    cycles: int
    run_cycle_s: list[float]
    serve_cycle_s: list[float]
    polled_cycle_s: list[float]
    polls: int
    errors: list[str] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)

    @property
    def serve_vs_run(self) -> float:
        return sum(self.serve_cycle_s) / sum(self.run_cycle_s)

    def report(self) -> str:
        def cycles(values: list[float]) -> str:
            return f"{sum(values):8.1f} s ({', '.join(f'{v:.1f}' for v in values)})"

        right = self.polls - len(self.errors) - len(self.inconsistent)
        return "\n".join(
            [
                f"{self.cycles} cycles of tidemark run          {cycles(self.run_cycle_s)}",
                f"{self.cycles} cycles of run --serve, idle     {cycles(self.serve_cycle_s)}",
                f"  run --serve / run                  {self.serve_vs_run:8.3f}x  (target <= 1.10)",
                f"{self.cycles} cycles of run --serve, polled   {cycles(self.polled_cycle_s)}",
                f"BI answers during those cycles       {self.polls:8,}: {right:,} the figures "
                f"before or after a cycle, {len(self.inconsistent)} other, "
                f"{len(self.errors)} errors (target: all, 0, 0)",
                *(f"  error: {e}" for e in self.errors[:5]),
                *(f"  other: {e}" for e in self.inconsistent[:5]),
            ]
        )


class Service:
    """One `tidemark run` process over a feed folder of its own, cycling every second."""

    def __init__(self, work: Path, name: str, serve: bool) -> None:
        self.feed = work / name / "feed"
        self.feed.mkdir(parents=True)
        self.port = _free_port() if serve else None
        env = _environment(work / name / "lake")
        command = [str(BIN / "tidemark"), "run", str(self.feed), "--every", "1"]
        command += ["--tests-every", "1000000"]
        if serve:
            command += ["--serve", "--port", str(self.port)]
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.log: list[str] = []

    def land(self, files: list[Path]) -> float:
        """Puts `files` in the feed and waits for the cycle that builds them; its seconds."""
        for path in files:
            shutil.copy(path, self.feed / path.name)
        while True:
            line = self._next_cycle()
            if ": ok: 0 events landed" in line and "no build" in line:
                continue  # a cycle that started before the files arrived
            if ": ok: " not in line or "no build" in line:
                raise RuntimeError(f"cycle failed: {line}\n" + "".join(self.log[-40:]))
            landed = line.split(": ok: ")[1]
            ingest = float(landed.split(" events landed in ")[1].split(" s")[0])
            build = float(landed.split(", build ")[1].split(" s")[0])
            return ingest + build

    def _next_cycle(self) -> str:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line)
            if line.startswith("tidemark run: cycle "):
                return line
        raise RuntimeError("tidemark run ended:\n" + "".join(self.log[-40:]))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _connect(port: int, deadline_s: float = 300):
    from pyhive import hive

    until = time.monotonic() + deadline_s
    while True:
        try:
            return hive.connect(host="127.0.0.1", port=port, username="bench")
        except Exception:
            if time.monotonic() > until:
                raise
            time.sleep(1)


def _figures(cursor, mart: str) -> tuple:
    cursor.execute(figures_query(mart))
    return tuple(cursor.fetchall()[0])


def poll(port: int, stop: threading.Event, polls: list[Poll]) -> None:
    """A BI client: every mart's figures, one after another, without pause, until `stop`."""
    cursor = _connect(port).cursor()
    while not stop.is_set():
        for mart in MARTS:
            started = time.monotonic()
            try:
                polls.append(Poll(mart, started, _figures(cursor, mart)))
            except Exception as exc:
                polls.append(Poll(mart, started, None, str(exc).splitlines()[0][:300]))
                cursor = _connect(port).cursor()


def check(polls: list[Poll], references: list[tuple[float, dict[str, tuple]]]) -> list[str]:
    """The answers that are neither the figures before the cycle they ran in nor after it.

    `references` are the marts' figures read after each cycle, with the time the reading began;
    a poll that began after reference k and before reference k + 1 ran during cycle k + 1."""
    wrong = []
    for answer in polls:
        if answer.answer is None or answer.started < references[0][0]:
            continue
        k = max(i for i, (at, _) in enumerate(references) if at <= answer.started)
        allowed = [refs[answer.mart] for _, refs in references[k : k + 2]]
        if answer.answer not in allowed:
            wrong.append(f"{answer.mart} during cycle {k + 1}: {answer.answer} not in {allowed}")
    return wrong


def bench_serve(work: Path, events: Path, cycles: int) -> ServeBench:
    slices = slices_of(events, work / "slices", cycles)
    run_s, serve_s = cycle_costs(work, slices)
    polled_s, polls, errors, inconsistent = reads_during_cycles(work, slices)
    return ServeBench(cycles, run_s, serve_s, polled_s, polls, errors, inconsistent)


def cycle_costs(work: Path, slices: list[list[Path]]) -> tuple[list[float], list[float]]:
    """The seconds of each cycle after the base's, of `tidemark run` and of `tidemark run
    --serve`, taking turns slice by slice."""
    base, rest = slices[0], slices[1:]
    run, serve = Service(work, "run", serve=False), Service(work, "serve", serve=True)
    try:
        run.land(base)
        serve.land(base)
        run_s, serve_s = [], []
        for part in rest:
            run_s.append(run.land(part))
            serve_s.append(serve.land(part))
    finally:
        run.stop()
        serve.stop()
    return run_s, serve_s


def reads_during_cycles(
    work: Path, slices: list[list[Path]]
) -> tuple[list[float], int, list[str], list[str]]:
    """`tidemark run --serve` cycles while two clients read every mart without pause: each
    cycle's seconds, the answers counted, the failed ones and those that were neither the
    figures before their cycle nor after it."""
    base, rest = slices[0], slices[1:]
    polled = Service(work, "polled", serve=True)
    polls: list[Poll] = []
    stop = threading.Event()
    try:
        polled.land(base)
        assert polled.port is not None
        reader = _connect(polled.port).cursor()
        references = [(time.monotonic(), {m: _figures(reader, m) for m in MARTS})]
        clients = [
            threading.Thread(target=poll, args=(polled.port, stop, polls), daemon=True)
            for _ in range(2)
        ]
        for client in clients:
            client.start()
        polled_s = []
        for part in rest:
            polled_s.append(polled.land(part))
            references.append((time.monotonic(), {m: _figures(reader, m) for m in MARTS}))
        stop.set()
        for client in clients:
            client.join(timeout=600)
    finally:
        stop.set()
        polled.stop()
    counted = [p for p in polls if p.started >= references[0][0]]
    errors = [f"{p.mart}: {p.error}" for p in counted if p.error]
    return polled_s, len(counted), errors, check(counted, references)


def slices_of(events: Path, out: Path, cycles: int) -> list[list[Path]]:
    """The generated files in arrival order: the job graph and the first half of the events as
    the base, then the rest of the events cut into `cycles` slices of the same number of lines."""
    out.mkdir(parents=True)
    files = sorted(p for p in events.iterdir() if p.name.endswith(".jsonl"))
    lines = [line for p in files if p.name.startswith("events") for line in p.open("rb")]
    graph = [p for p in files if not p.name.startswith("events")]
    half = len(lines) // 2
    bounds = [half + (len(lines) - half) * k // cycles for k in range(cycles + 1)]
    base = out / "events-0000.jsonl"
    base.write_bytes(b"".join(lines[:half]))
    slices: list[list[Path]] = [[*graph, base]]
    for k in range(cycles):
        part = out / f"events-{k + 1:04d}.jsonl"
        part.write_bytes(b"".join(lines[bounds[k] : bounds[k + 1]]))
        slices.append([part])
    return slices


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("bench-data") / "serve")
    parser.add_argument("--scale", type=int, default=4, help="generator scale")
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    work = fresh_work(parser, args.work)
    events = generate_backpressure(work / "generated", args.scale)
    result = bench_serve(work, events, args.cycles)
    print(json.dumps(asdict(result), indent=2) if args.json else result.report())
    return 0 if not (result.errors or result.inconsistent) else 1


if __name__ == "__main__":
    sys.exit(main())
