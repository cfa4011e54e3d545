"""What a cycle of ``tidemark run`` reports: shared by the schedule that runs the cycles
(:mod:`tidemark.schedule`) and the health records that keep them (:mod:`tidemark.health`), which
import it and not each other."""

from __future__ import annotations

from dataclasses import dataclass

# Set by ``tidemark run`` for its in-process dbt builds: the cycle is recorded as a whole by the
# run, so the build's on-run-end hook (macros/tidemark_record_run.sql) records nothing.
RECORDER_ENV = "TIDEMARK_RUN_LOG_RECORDER"
# From this many failed builds in a row, each failed build says that the builds keep failing.
KEEPS_FAILING = 3


@dataclass(frozen=True)
class CycleResult:
    landed: int  # events accepted into bronze by this cycle's ingest
    ingest_s: float
    build_s: float | None  # None: no build (nothing new, or waiting to retry a failed build)
    ok: bool  # ingest had no file error, the build (if any) succeeded, none is waiting to retry
    detail: str = ""
    failed_builds: int = 0  # failed builds in a row, this cycle's included (0: the last built)
    retry_in: int | None = None  # after a failed build: cycles to its retry if nothing lands

    def describe(self) -> str:
        if self.build_s is not None:
            build = f"build {self.build_s:.1f} s"
        else:
            build = "no build" if self.failed_builds else "no build (nothing new)"
        state = "ok" if self.ok else "FAILED"
        text = f"{state}: {self.landed} events landed in {self.ingest_s:.1f} s, {build}"
        return f"{text}; {self.detail}" if self.detail else text

    def keeps_failing(self) -> str | None:
        """The line a run prints after each failed build from the KEEPS_FAILING-th in a row."""
        if self.build_s is None or self.failed_builds < KEEPS_FAILING:
            return None
        return (
            f"tidemark run: {self.failed_builds} builds in a row failed; the next retry is "
            f"{in_cycles(self.retry_in or 1)} or as soon as new events land; the errors are in "
            "tidemark status and tidemark.run_log"
        )


def in_cycles(count: int) -> str:
    """'on the next cycle', 'in 3 cycles'."""
    return "on the next cycle" if count == 1 else f"in {count} cycles"
