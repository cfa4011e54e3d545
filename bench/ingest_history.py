"""Benchmark: does ``tidemark ingest`` cost what is new, or what has landed before? (issue 10)

Lands ``--batches`` files of the same size one after the other into one lake, as a schedule
would: the same job's tasks carry on (seq and time go on), so every batch is new data for tasks
that already have history. Each batch is one ``ingest()`` call in this process, timed alone.

Target: the 50th batch within 10 % of the 1st. The first batch also creates the bronze tables,
so the figures start at the 2nd: the median of batches 2-4 against the median of the last three,
and the trend through every batch from the 2nd on, its last against its first. A batch takes
about half a second, and one slow batch in three moves a median of three by as much as the
target allows; the trend (Theil-Sen: the median of the slopes between every two batches) is
moved by neither a slow batch nor noise, only by a cost that grows from batch to batch.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

JOB = "b" * 32
VERTICES = ["1" * 32, "2" * 32, "3" * 32, "4" * 32]
SUBTASKS = 8
START_MS = 1_767_225_600_000


def write_batch(path: Path, batch: int, events: int) -> None:
    """``events`` lines: per task, alternating idle start/end and watermarks on two channels."""
    tasks = [(v, s) for v in VERTICES for s in range(SUBTASKS)]
    per_task = events // len(tasks)
    with path.open("w") as out:
        for vertex, subtask in tasks:
            first = batch * per_task
            for seq in range(first, first + per_task):
                ts = START_MS + seq * 10
                base = {
                    "job_id": JOB,
                    "vertex_id": vertex,
                    "subtask_index": subtask,
                    "attempt": 0,
                    "seq": seq,
                    "ts_ms": ts,
                }
                if seq % 3 == 2:
                    line = base | {
                        "type": "watermark",
                        "input_index": 0,
                        "channel_index": seq % 2,
                        "num_channels": 2,
                        "watermark_ms": ts - 2_000,
                    }
                else:
                    action = "start" if seq % 3 == 0 else "end"
                    line = base | {"type": "timer", "timer": "idle", "action": action}
                out.write(json.dumps(line, separators=(",", ":")) + "\n")


def bench_ingest_history(work: Path, batches: int, events: int) -> dict[str, str]:
    from tidemark.ingest.landing import ingest
    from tidemark.lake import Lake

    lake = Lake.from_env(work / "lake")
    seconds = []
    for batch in range(batches):
        path = work / "landing" / f"batch-{batch:04d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_batch(path, batch, events)
        started = time.perf_counter()
        report = ingest([path], lake)
        seconds.append(time.perf_counter() - started)
        if report.accepted != report.lines_read or report.errors:
            raise SystemExit(f"bench: batch {batch} was not landed whole: {report}")
    first = statistics.median(seconds[1:4])
    last = statistics.median(seconds[-3:])
    trend_first, trend_last = trend(seconds[1:])
    return {
        "batches x events": f"{batches} x {events:,}",
        "batches 2-4 (median)": f"{first:.3f} s",
        f"batches {batches - 2}-{batches} (median)": f"{last:.3f} s",
        "last / first": f"{last / first:.2f} (target <= 1.10)",
        f"trend, batch 2 to {batches}": f"{trend_first:.3f} s to {trend_last:.3f} s",
        "trend last / first": f"{trend_last / trend_first:.2f} (target <= 1.10)",
        "every batch (s)": " ".join(f"{s:.2f}" for s in seconds),
    }


def trend(seconds: list[float]) -> tuple[float, float]:
    """The Theil-Sen line through ``seconds`` (one per batch, in order): its values at the
    first and the last batch. Its slope is the median of the slopes between every two batches,
    so a few slow batches anywhere do not tilt it."""
    n = len(seconds)
    slopes = [(seconds[j] - seconds[i]) / (j - i) for i in range(n) for j in range(i + 1, n)]
    slope = statistics.median(slopes) if slopes else 0.0
    intercept = statistics.median(y - slope * x for x, y in enumerate(seconds))
    return intercept, intercept + slope * (n - 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.work) as folder:
        figures = bench_ingest_history(Path(folder), args.batches, args.events)
    for name, value in figures.items():
        print(f"ingest history: {name:<24} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
