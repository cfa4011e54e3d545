"""Where the health's figures are in the lake, and the listing of a Spark table's partition
folders (its marts and ``tidemark.run_log``)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

from tidemark.lake import Lake


def state_path(lake: Lake) -> Path:
    """What ``tidemark status`` and ``tidemark run`` know of bronze's newest events (a cache:
    safe to delete, rebuilt from the Delta logs)."""
    return lake.root / "_health" / "landed.json"


def marts_root(lake: Lake) -> Path:
    return lake.warehouse / "tidemark.db"


def run_log_root(lake: Lake) -> Path:
    return marts_root(lake) / "run_log"


def run_marker_path(lake: Lake) -> Path:
    """When the lake's ``tidemark run`` started (``health.record.mark_run_started``)."""
    return lake.root / "_health" / "run.json"


def partitions(folder: Path, column: str) -> list[tuple[str, Path]]:
    """The ``column=value`` folders under ``folder``, values unescaped as Spark escapes them."""
    prefix = f"{column}="
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.is_dir(follow_symlinks=False):
                found.append((unquote(entry.name[len(prefix) :]), Path(entry.path)))
    return found


def data_files(folder: Path) -> list[Path]:
    with os.scandir(folder) as entries:
        return [
            Path(entry.path)
            for entry in entries
            if not entry.name.startswith((".", "_")) and entry.is_file(follow_symlinks=False)
        ]
