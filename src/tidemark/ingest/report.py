"""What ``tidemark ingest`` reports: per file and in all, the progress it tells as it goes, and
the one line it prints at the end."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class FileReport:
    path: Path
    sha256: str = ""
    lines_read: int = 0
    accepted: int = 0
    duplicates: int = 0
    quarantined: int = 0
    skipped_as_seen: bool = False
    error: str | None = None


@dataclass
class IngestReport:
    files: list[FileReport] = field(default_factory=list)

    @property
    def lines_read(self) -> int:
        return sum(f.lines_read for f in self.files)

    @property
    def accepted(self) -> int:
        return sum(f.accepted for f in self.files)

    @property
    def duplicates(self) -> int:
        return sum(f.duplicates for f in self.files)

    @property
    def quarantined(self) -> int:
        return sum(f.quarantined for f in self.files)

    @property
    def errors(self) -> list[FileReport]:
        return [f for f in self.files if f.error]


class Progress:
    """Told how far ingest has got; the CLI shows it as a bar or as log lines."""

    def file_started(self, path: Path, total_bytes: int, phase: str) -> None: ...
    def advance(self, nbytes: int) -> None: ...
    def file_done(self, report: FileReport) -> None: ...


def describe(report: IngestReport) -> str:
    """The one-line summary ``tidemark ingest`` prints."""
    seen = sum(1 for f in report.files if f.skipped_as_seen)
    parts = [
        f"{len(report.files)} file(s)",
        f"{report.lines_read} lines read",
        f"{report.accepted} accepted",
        f"{report.duplicates} duplicate",
        f"{report.quarantined} quarantined",
    ]
    if seen:
        parts.append(f"{seen} file(s) already ingested")
    if report.errors:
        parts.append(f"{len(report.errors)} unreadable")
    return ", ".join(parts)
