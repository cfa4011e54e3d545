"""How ``tidemark ingest`` shows progress: a bar on a terminal, plain log lines elsewhere."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import IO

from tidemark.ingest.report import FileReport, Progress

log = logging.getLogger("tidemark.ingest")


class BarProgress(Progress):
    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._bar = None

    def file_started(self, path: Path, total_bytes: int, phase: str) -> None:
        from tqdm import tqdm

        self._close()
        self._bar = tqdm(
            total=total_bytes,
            unit="B",
            unit_scale=True,
            desc=f"{phase} {path.name}",
            file=self._stream,
            leave=False,
        )

    def advance(self, nbytes: int) -> None:
        if self._bar is not None:
            self._bar.update(nbytes)

    def file_done(self, report: FileReport) -> None:
        self._close()
        _log_done(report)

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class LogProgress(Progress):
    """A line when a file starts and ends, and one every ``every_s`` seconds in between."""

    def __init__(self, every_s: float = 10.0) -> None:
        self._every = every_s
        self._total = 0
        self._done = 0
        self._last = 0.0
        self._label = ""

    def file_started(self, path: Path, total_bytes: int, phase: str) -> None:
        self._total, self._done, self._last = total_bytes, 0, time.monotonic()
        self._label = f"{phase} {path}"
        log.info("%s (%d bytes)", self._label, total_bytes)

    def advance(self, nbytes: int) -> None:
        self._done += nbytes
        now = time.monotonic()
        if now - self._last >= self._every and self._total:
            self._last = now
            log.info("%s: %.0f%%", self._label, 100.0 * self._done / self._total)

    def file_done(self, report: FileReport) -> None:
        _log_done(report)


def _log_done(report: FileReport) -> None:
    if report.error:
        return
    if report.skipped_as_seen:
        log.info("%s: already ingested (same content), skipped", report.path)
        return
    log.info(
        "%s: %d lines, %d accepted, %d duplicate, %d quarantined",
        report.path,
        report.lines_read,
        report.accepted,
        report.duplicates,
        report.quarantined,
    )


def progress_for(stream: IO[str]) -> Progress:
    return BarProgress(stream) if stream.isatty() else LogProgress()
