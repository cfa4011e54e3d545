"""The lake's bytes on disk, by area: a walk of its files (its cost follows the number of files;
``tidemark run`` measures it once per ``BYTES_EVERY_S``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from tidemark.health.model import DiskUsage
from tidemark.health.paths import marts_root
from tidemark.lake import Lake


def tree_bytes(root: Path, skip: Iterable[Path] = ()) -> int:
    """The sizes of the files under ``root`` (not following links), leaving out ``skip``."""
    left_out = {str(p) for p in skip}
    total = 0
    folders = [str(root)]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.path not in left_out:
                                folders.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except FileNotFoundError:  # removed while walking
                        continue
        except (FileNotFoundError, NotADirectoryError):
            continue
    return total


def disk_paths(lake: Lake) -> dict[str, Path]:
    return {
        "bronze": lake.bronze,
        "marts": marts_root(lake),
        "intermediate": lake.warehouse / "tidemark_intermediate.db",
        "lake": lake.root,
    }


def disk_usage(lake: Lake) -> DiskUsage:
    paths = disk_paths(lake)
    parts = {area: tree_bytes(paths[area]) for area in ("bronze", "marts", "intermediate")}
    rest = tree_bytes(lake.root, skip=[paths[a] for a in parts])
    return DiskUsage(
        parts["bronze"], parts["marts"], parts["intermediate"], rest + sum(parts.values())
    )
