"""Following a Delta table through its log: the rows added since a version already read.

Bronze's summary and the health's newest landed events read only the commits since the version
they reflect. A commit that removes rows, or one no longer in the log (cleaned up, or a table made
again), cannot be followed: the caller reads the whole table. A compaction (``dataChange`` false)
moves rows: passed over.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


@dataclass(frozen=True)
class Commits:
    """The newest version of a table, and the ``add`` actions of new rows since the known one."""

    version: int
    adds: list[dict[str, Any]]


def commits_since(root: Path, known: int) -> Commits | None:
    """The commits of the table at ``root`` after version ``known``, up to the newest one.

    None when one of them removes rows, or when the commit of ``known`` is no longer in the log
    (nor, then, what came after it): the table must be read whole.
    """
    logs = root / "_delta_log"
    if known < 0 or not _commit(logs, known).is_file():
        return None
    version, adds = known, []
    while True:
        try:
            lines = _commit(logs, version + 1).read_text().splitlines()
        except FileNotFoundError:
            return Commits(version, adds)
        for action in (json.loads(line) for line in lines if line.strip()):
            if _changes_rows(action.get("remove")):
                return None
            if _changes_rows(action.get("add")):
                adds.append(action["add"])
        version += 1


def _changes_rows(action: object) -> bool:
    """Whether an ``add`` or ``remove`` action changes the table's rows (a compaction's do not)."""
    return isinstance(action, Mapping) and bool(action.get("dataChange", True))


def local_path(path: str, root: Path = Path()) -> Path:
    """A path of the log (a ``file://`` URI, or relative to the table's ``root``, escaped as the
    log escapes it) on the local disk; the lake is on the local disk."""
    if "://" not in path:
        return root / unquote(path)
    parsed = urlparse(path)
    if parsed.scheme != "file":
        raise ValueError(f"the lake must be on the local file system, not {path}")
    return Path(unquote(parsed.path))


def _commit(logs: Path, version: int) -> Path:
    return logs / f"{version:020d}.json"
