"""The files an ingest has seen, so an unchanged one is not hashed again (a cache: safe to
delete)."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from tidemark.lake import Lake

log = logging.getLogger(__name__)


@dataclass
class SeenFiles:
    """Files already landed, by path, with the size, mtime and inode they had: a folder that
    `tidemark run` ingests every minute is not read again file by file. Only a hint: a file is
    skipped without reading when it is unchanged (same size, mtime in ns, inode) and its sha256
    is in `ingest_log`; anything else is hashed as before. Missing or unreadable: rebuilt."""

    path: Path
    entries: dict[str, list] = field(default_factory=dict)

    @classmethod
    def load(cls, lake: Lake) -> SeenFiles:
        try:
            entries = json.loads(lake.seen_files.read_text())
            if not isinstance(entries, dict):
                raise ValueError("not an object")
        except FileNotFoundError:
            entries = {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s (%s): files are hashed again", lake.seen_files, exc)
            entries = {}
        return cls(lake.seen_files, entries)

    @staticmethod
    def _state(stat: os.stat_result) -> list[int]:
        return [stat.st_size, stat.st_mtime_ns, stat.st_ino]

    def sha256(self, path: Path, stat: os.stat_result) -> str | None:
        entry = self.entries.get(str(path.resolve()))
        if isinstance(entry, list) and len(entry) == 4 and entry[:3] == self._state(stat):
            return entry[3]
        return None

    def remember(self, path: Path, stat: os.stat_result, sha256: str) -> None:
        self.entries[str(path.resolve())] = [*self._state(stat), sha256]

    def save(self) -> None:
        kept = {p: e for p, e in self.entries.items() if Path(p).exists()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(kept))
        partial.replace(self.path)
