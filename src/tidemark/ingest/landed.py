"""What becomes of a capture file once it has landed (`--landed-files`, issue 44).

``keep`` (the default) leaves it where it is; ``delete`` removes it; ``move:DIR`` moves it to
``DIR``, below the same relative path it had in the folder it was found in. Only a file whose
content bronze's ingest log holds (landed now, or before) is touched, never one that failed:
the ingest log keeps its identity, so the same content delivered again is still a duplicate.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from tidemark.ingest.report import IngestReport


@dataclass(frozen=True)
class LandedFiles:
    how: str  # keep, delete or move
    archive: Path | None = None

    @classmethod
    def parse(cls, text: str) -> LandedFiles:
        if text in ("keep", "delete"):
            return cls(text)
        if text.startswith("move:") and text[len("move:") :].strip():
            return cls("move", Path(text[len("move:") :].strip()).expanduser().absolute())
        raise ValueError(
            f"--landed-files takes keep, delete or move:DIR, got {text!r} (e.g. "
            "move:/var/lib/tidemark/landed)"
        )

    def dispose(self, report: IngestReport, roots: list[Path]) -> int:
        """Delete or move the files of ``report`` that landed; returns how many."""
        if self.how == "keep":
            return 0
        done = 0
        for file in report.files:
            if file.error or not file.sha256 or not file.path.exists():
                continue
            if self.how == "delete":
                file.path.unlink()
            else:
                assert self.archive is not None
                target = self.archive / _relative(file.path, roots)
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
                shutil.move(str(file.path), partial)
                os.replace(partial, target)
            done += 1
        return done


def _relative(path: Path, roots: list[Path]) -> Path:
    """``path`` below the folder of ``roots`` it was found in, else its name alone."""
    resolved = path.resolve()
    for root in roots:
        folder = root.resolve()
        if folder.is_dir() and resolved.is_relative_to(folder):
            return resolved.relative_to(folder)
    return Path(path.name)
