"""The capture's cost to a job: records/s of the live test job with and without tidemark's capture.

The job is tests/live/job/LiveJob.java in its bench variant (``--bench``: no pacing, no sleeps
in the sink, no pause, no failure), run in a local MiniCluster like the live tests run it. With
the capture, it is attached as contract §6 says (the reporter in the configuration, the jar on
the classpath, ``-javaagent:...=dir=DIR``). A run's figure is the records its sink saw divided
by the time from the sink's first record to its last.

Runs come in pairs, the order alternating (without/with, then with/without, ...), so that drift
of a busy machine hits both sides alike; the result is the median of each side and their ratio
(issue 9's target: with >= 95 % of without). On Linux it also reads each thread's CPU time
(/proc) and prints the capture writer thread's share of the JVM's CPU in each run with the
capture: on a job that keeps every core busy, about what the writer takes from its throughput,
and a figure that does not swing with the host as records/s does. The last line printed is one
JSON object:

    {"bench": "capture_throughput", "flink": "2.2.0", "pairs": 3, ..., "ratio": 0.98}

Needs Java 17 and ``make capture`` (capture/build/tidemark-capture.jar); Flink's jars come from
PyPI through capture/flink-jars.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.live.flink_job import LiveSetupError, build_job, capture_jar, start_job  # noqa: E402

TARGET_RATIO = 0.95
# The target held where records/s cannot settle 5 % (docs/flink-versions.md): the capture
# writer's share of the JVM's CPU; the calling thread's share is tidemark.capture.Bench's.
TARGET_WRITER_SHARE = 0.05
RUN_TIMEOUT_S = 600


WRITER_THREAD = "tidemark-captur"  # the writer's thread name as Linux keeps it (15 characters)


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of each thread of process ``pid`` so far, by thread id;
    empty where /proc is not there (not Linux) or the process is gone."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds: dict[str, float] = {}
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return seconds
    for tid in threads:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        seconds[f"{tid} {name}"] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


def measure(version: str, work: Path, capture: bool, records: int) -> tuple[float, float | None]:
    """Records/s of one run of the bench job, and the capture writer's share of the JVM's CPU
    time (None without the capture, or where threads' CPU time cannot be read)."""
    run = start_job(
        version, work, capture=capture, bench=True, extra_args=("--bench-records", str(records))
    )
    # A thread's figures go with it: keep each thread's last seen, by id (a thread may be renamed).
    last: dict[str, tuple[str, float]] = {}
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while run.process.poll() is None and time.monotonic() < deadline:
        for thread, seconds in thread_cpu_s(run.process.pid).items():
            tid, name = thread.split(" ", 1)
            last[tid] = (name, seconds)
        time.sleep(0.25)
    run.wait(timeout=max(1.0, deadline - time.monotonic())).check()
    writer = sum(s for name, s in last.values() if name == WRITER_THREAD)
    share = writer / sum(s for _, s in last.values()) if capture and writer > 0 else None
    return float(run.result["records_per_s"]), share


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flink", default="2.2.0", help="Flink version (default 2.2.0)")
    parser.add_argument("--pairs", type=int, default=3, help="paired runs (default 3)")
    parser.add_argument(
        "--records",
        type=int,
        default=3_000_000,
        help=(
            "records per source subtask (default 3000000: about 20 s per run; much "
            "shorter runs measure the JIT's warm-up more than the job)"
        ),
    )
    args = parser.parse_args(argv)
    try:
        capture_jar()
        build_job(args.flink)
    except LiveSetupError as exc:
        print(f"capture_throughput: error: {exc}", file=sys.stderr)
        return 1
    without: list[float] = []
    with_capture: list[float] = []
    writer_shares: list[float] = []
    with tempfile.TemporaryDirectory(prefix="tidemark-capture-bench-") as folder:
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            for capture in order:
                work = Path(folder) / f"pair{pair}-{'with' if capture else 'without'}"
                rate, share = measure(args.flink, work, capture, args.records)
                (with_capture if capture else without).append(rate)
                side = "with" if capture else "without"
                writer = "" if share is None else f" (the writer {share:.1%} of the JVM's CPU)"
                if share is not None:
                    writer_shares.append(share)
                print(f"pair {pair + 1}/{args.pairs}: {side} capture {rate:,.0f} records/s{writer}")
    median_without = statistics.median(without)
    median_with = statistics.median(with_capture)
    ratio = median_with / median_without
    # Each pair's own ratio: the two runs of a pair are back to back, so slow drift of a shared
    # machine cancels within it; their median is the steadier figure.
    pair_ratios = [w / o for w, o in zip(with_capture, without, strict=True)]
    pair_median = statistics.median(pair_ratios)
    writer = (
        f"; the writer's median share of the JVM's CPU {statistics.median(writer_shares):.1%}"
        if writer_shares
        else ""
    )
    print(
        f"capture throughput on Flink {args.flink}: {median_with:,.0f} records/s with the capture, "
        f"{median_without:,.0f} without: {ratio:.3f}; median of the pairs' ratios "
        f"{pair_median:.3f} (target >= {TARGET_RATIO}){writer}"
    )
    if writer_shares:
        print(
            f"the capture writer's CPU share on Flink {args.flink}: at most "
            f"{max(writer_shares):.1%} of the JVM's in {len(writer_shares)} runs "
            f"(target <= {TARGET_WRITER_SHARE:.0%})"
        )
    result = {
        "bench": "capture_throughput",
        "flink": args.flink,
        "pairs": args.pairs,
        "records_per_source_subtask": args.records,
        "without_records_per_s": [round(r) for r in without],
        "with_records_per_s": [round(r) for r in with_capture],
        "median_without_records_per_s": round(median_without),
        "median_with_records_per_s": round(median_with),
        "ratio": round(ratio, 4),
        "pair_ratios": [round(r, 4) for r in pair_ratios],
        "median_pair_ratio": round(pair_median, 4),
        "writer_cpu_shares": [round(s, 4) for s in writer_shares],
        "target_ratio": TARGET_RATIO,
        "meets_target": min(ratio, pair_median) >= TARGET_RATIO,
        "target_writer_share": TARGET_WRITER_SHARE,
        "meets_writer_share_target": (
            max(writer_shares) <= TARGET_WRITER_SHARE if writer_shares else None
        ),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
