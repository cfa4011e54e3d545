"""A mart's newest second of a job, from its newest partition (``job_id``, ``hour_at``,
``minute_slice``): looked up by name from the hour of the job's newest landed event back (a mart
never runs ahead of what landed), then a few parquet footers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import unquote, urlparse

from tidemark.health.model import MARTS
from tidemark.health.paths import data_files, marts_root, partitions
from tidemark.lake import Lake

# How many hours back from a job's newest landed event a mart's newest partition is looked up by
# name before its hour folders are listed.
PROBE_HOURS = 48


def column_max(path: Path, column: str) -> int | None:
    """The largest value of an integer ``column`` in a parquet file: from its row groups'
    statistics, or from the column itself where a row group has none."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    if column not in names:
        return None
    index = names.index(column)
    best: int | None = None
    for group in range(meta.num_row_groups):
        chunk = meta.row_group(group).column(index)
        stats = chunk.statistics
        if meta.row_group(group).num_rows == 0:
            continue
        if stats is None or not stats.has_min_max:
            value = pc.max(pq.read_table(path, columns=[column])[column]).as_py()
            return None if value is None else int(value)
        best = int(stats.max) if best is None else max(best, int(stats.max))
    return best


def _newest_in_hour(hour: Path, column: str) -> int | None:
    """The largest ``column`` in the newest slice of an hour folder that holds a data file."""
    slices = []
    for value, folder in partitions(hour, "minute_slice"):
        if value.lstrip("-").isdigit():
            slices.append((int(value), folder))
    for _, folder in sorted(slices, reverse=True):
        present = [v for v in (column_max(p, column) for p in data_files(folder)) if v is not None]
        if present:
            return max(present)
    return None


def hour_folder(hour_ms: int) -> str:
    """The folder name Spark gives the ``hour_at`` partition of epoch milliseconds ``hour_ms``
    (the timestamp in the session's UTC, ``:`` escaped)."""
    at = dt.datetime.fromtimestamp(hour_ms / 1000, dt.UTC)
    return "hour_at=" + at.strftime("%Y-%m-%d %H:%M:%S").replace(":", "%3A")


def newest_in_job(
    job_folder: Path, column: str, landed_ms: int | None = None, probe_hours: int = PROBE_HOURS
) -> int | None:
    """The largest ``column`` in a job's newest partition that holds a data file.

    A mart never runs ahead of what landed, so its newest partition is at or before the hour of
    the job's newest landed ``landed_ms``: the hours from there back are looked up by name, at
    most ``probe_hours`` of them (what it costs follows how far behind the mart is, not its
    history). Past that, or without ``landed_ms``, the job's hour folders are listed."""
    if landed_ms is not None:
        hour = landed_ms - landed_ms % 3_600_000
        for back in range(probe_hours):
            folder = job_folder / hour_folder(hour - back * 3_600_000)
            if folder.is_dir():
                value = _newest_in_hour(folder, column)
                if value is not None:
                    return value
    for _, folder in sorted(partitions(job_folder, "hour_at"), reverse=True):
        value = _newest_in_hour(folder, column)
        if value is not None:
            return value
    return None


def marts_newest(
    lake: Lake, landed: Mapping[str, int], jobs: Iterable[str]
) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Per mart of MARTS, each job's newest time column value (of ``jobs`` only, ``landed``
    their newest landed ts_ms); and notes on the marts that could not be read."""
    wanted = set(jobs)
    newest: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    for mart, column in MARTS.items():
        table = marts_root(lake) / mart
        if not table.is_dir():
            notes.append(f"tidemark.{mart} is not built yet")
            continue
        if (table / "_delta_log").is_dir():
            notes.append(f"tidemark.{mart} is a Delta table (TIDEMARK_DELTA=native): not read")
            continue
        for attempt in range(3):  # a partition rewritten while it is read: look again
            try:
                published = published_newest(table)
                found = {}
                if published is not None:
                    for job, folder in published.items():
                        values = [column_max(f, column) for f in data_files(folder)]
                        if job in wanted and any(v is not None for v in values):
                            found[job] = max(v for v in values if v is not None)
                else:
                    for job, folder in partitions(table, "job_id"):
                        if job in wanted:
                            value = newest_in_job(folder, column, landed.get(job))
                            if value is not None:
                                found[job] = value
                newest[mart] = found
                break
            except FileNotFoundError:
                if attempt == 2:
                    notes.append(f"tidemark.{mart} kept changing while it was read")
    return newest, notes


def published_newest(table: Path) -> dict[str, Path] | None:
    """Per job, the folder of its newest partition, as the last publish into the mart noted it
    (``_tidemark_versions/_newest.tsv``, docs/decisions/0015-consistent-reads.md); None for a
    mart no build published into, whose own folder holds its partitions."""
    noted = table / "_tidemark_versions" / "_newest.tsv"
    if not noted.is_file():
        return None
    newest = {}
    for line in noted.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0].startswith("job_id="):
            newest[unquote(fields[0][len("job_id=") :])] = Path(unquote(urlparse(fields[2]).path))
    return newest
