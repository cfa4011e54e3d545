"""Progress: a bar on a terminal, plain log lines elsewhere."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from tidemark.ingest.progress import BarProgress, LogProgress, progress_for
from tidemark.ingest.report import FileReport


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_and_a_pipe_gets_log_lines() -> None:
    assert isinstance(progress_for(_Terminal()), BarProgress)
    assert isinstance(progress_for(io.StringIO()), LogProgress)


def test_bar_draws_on_the_stream() -> None:
    stream = _Terminal()
    bar = progress_for(stream)
    bar.file_started(Path("events.jsonl"), 1000, "landing")
    bar.advance(500)
    bar.file_done(FileReport(path=Path("events.jsonl"), lines_read=3, accepted=3))
    assert "landing events.jsonl" in stream.getvalue()


def test_log_lines_report_start_percentage_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tidemark.ingest")
    progress = LogProgress(every_s=0.0)
    progress.file_started(Path("big.jsonl"), 200, "landing")
    progress.advance(100)
    progress.file_done(
        FileReport(path=Path("big.jsonl"), lines_read=9, accepted=7, duplicates=1, quarantined=1)
    )
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "landing big.jsonl (200 bytes)",
        "landing big.jsonl: 50%",
        "big.jsonl: 9 lines, 7 accepted, 1 duplicate, 1 quarantined",
    ]
