"""``tidemark ingest``: land event files in the bronze Delta tables, exactly once per content.

For each file: fingerprint it (and prove a gzip archive whole), skip it if the ingest log has its
content already, otherwise stream it in blocks of lines. Each block is parsed, checked against the
per-line rules, judged for duplicates and conflicts, and appended to each bronze table it has rows
for, one Delta commit per table. Every commit carries a Delta *app transaction*
(``tidemark-ingest:<sha256>``, version = block number), so a re-run after a crash skips exactly the
(table, block) pairs that were committed and writes the rest: blocks are cut from the content alone,
and the judging is repeated against the index as it was without this file, so the second run makes
the same decisions as the first. The file's row in ``ingest_log`` is committed last and marks it
done. One ingest runs at a time per lake (a lock file). Parsing and checking the next block, and
committing the previous one, run in two more threads beside the judging (decision 0003); commits
stay in block order.

Here: opening the tables, the loop over the files, and the commit path. Beside it: a block's
judging (:mod:`.judge`), the identity index on bronze it judges against (:mod:`.bronze_index`), the
files seen before (:mod:`.seen`), and the reports (:mod:`.report`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Field, Transaction, write_deltalake

from tidemark.ingest import files
from tidemark.ingest.bronze_index import load_index, open_index
from tidemark.ingest.identity import IdentityIndex
from tidemark.ingest.judge import BlockRows, checked_ahead, judge_block
from tidemark.ingest.report import FileReport, IngestReport, Progress
from tidemark.ingest.schema import BRONZE_SCHEMAS
from tidemark.ingest.seen import SeenFiles
from tidemark.ingest.summary import BronzeSummary
from tidemark.lake import Lake, expired_before, ingest_lock

log = logging.getLogger(__name__)

LINES_PER_BLOCK = 200_000
# A checkpoint every 10 commits (Delta's default is 100): every ingest opens each bronze table, and
# opening one replays the log since its last checkpoint.
TABLE_PROPERTIES = {"delta.checkpointInterval": "10"}
WRITE_ORDER = (
    "timer_events",
    "watermark_events",
    "valve_outputs",
    "capture_gaps",
    "vertices",
    "quarantine",
)


def ensure_tables(lake: Lake) -> dict[str, DeltaTable]:
    """Open the bronze tables, creating any that are missing (empty, with their schema).

    A lake made by an older tidemark gains the tables and the (nullable) columns added since,
    e.g. ``timer_events.published``: its rows keep their values and read NULL in the new columns;
    and its tables get :data:`TABLE_PROPERTIES`.
    """
    tables = {}
    for name, schema in BRONZE_SCHEMAS.items():
        path = lake.bronze_table(name)
        if not DeltaTable.is_deltatable(str(path)):
            path.mkdir(parents=True, exist_ok=True)
            DeltaTable.create(
                str(path), schema=schema, name=name, mode="ignore", configuration=TABLE_PROPERTIES
            )
        table = DeltaTable(str(path))
        have = set(table.schema().to_arrow().names)
        missing = [f for f in schema if f.name not in have]
        if missing:
            log.info("adding column(s) %s to %s", ", ".join(f.name for f in missing), name)
            table.alter.add_columns([Field.from_arrow(f) for f in missing])
        configured = table.metadata().configuration
        if any(configured.get(k) != v for k, v in TABLE_PROPERTIES.items()):
            table.alter.set_table_properties(TABLE_PROPERTIES)
        tables[name] = table
    return tables


def _app_id(sha256: str) -> str:
    return f"tidemark-ingest:{sha256}:{LINES_PER_BLOCK}"


def _next_ingest_id(tables: dict[str, DeltaTable]) -> int:
    highest = 0
    for table in tables.values():
        actions = pa.table(table.get_add_actions(flatten=True))
        column = "max.ingest_id"
        if actions.num_rows and column in actions.column_names:
            value = pc.max(actions[column]).as_py()
            highest = max(highest, value or 0)
    return highest + 1


def ingest(
    paths: list[Path],
    lake: Lake,
    progress: Progress | None = None,
    *,
    after_commit: Callable[[str, int], None] | None = None,
) -> IngestReport:
    """Land ``paths`` (files or folders) in ``lake``'s bronze tables.

    ``after_commit(table, block)`` is a test hook called after every bronze commit.
    """
    progress = progress or Progress()
    report = IngestReport()
    targets = files.find_files(paths)
    with ingest_lock(lake):
        # What `tidemark maintain` expired: an older event is quarantined, not landed.
        expired = expired_before(lake)
        tables = ensure_tables(lake)
        index: IdentityIndex | None = None
        # up to date with bronze until this ingest commits; None after that
        summary: BronzeSummary | None = BronzeSummary.brought_up_to_date(
            lake.bronze_summary, tables
        )
        done = dict(summary.done)
        next_id = _next_ingest_id(tables)
        seen = SeenFiles.load(lake)
        for path in targets:
            file_report = FileReport(path=path)
            report.files.append(file_report)
            try:
                stat = path.stat()
                size = stat.st_size
                progress.file_started(path, size, "checking")
                known = seen.sha256(path, stat)
                if known in done:  # landed before, unchanged since: no need to read it again
                    print_ = files.Fingerprint(known, size)
                else:
                    print_ = files.fingerprint(path, progress.advance)
                file_report.sha256 = print_.sha256
                if print_.sha256 in done:
                    seen.remember(path, stat, print_.sha256)
                    file_report.skipped_as_seen = True
                    file_report.lines_read = done[print_.sha256]
                    file_report.duplicates = done[print_.sha256]
                    progress.file_done(file_report)
                    continue
                app_id = _app_id(print_.sha256)
                committed = {name: tables[name].transaction_version(app_id) for name in WRITE_ORDER}
                if index is None or any(v is not None for v in committed.values()):
                    # A file that crashed part-way is judged against bronze without its own rows.
                    resuming = any(v is not None for v in committed.values())
                    if resuming:
                        index = load_index(tables, print_.sha256)
                    else:
                        if summary is None:  # bronze changed since: bring it up to date again
                            summary = BronzeSummary.brought_up_to_date(lake.bronze_summary, tables)
                        index = open_index(summary, tables)
                progress.file_started(path, size, "landing")
                summary = None  # this file's commits are not in it
                next_id = _land_file(
                    path,
                    print_.sha256,
                    tables,
                    index,
                    committed,
                    next_id,
                    file_report,
                    progress,
                    after_commit,
                    expired,
                )
                _append(
                    tables["ingest_log"],
                    pa.Table.from_pylist(
                        [
                            {
                                "source_sha256": print_.sha256,
                                "source_file": str(path),
                                "lines_read": file_report.lines_read,
                                "accepted": file_report.accepted,
                                "duplicates": file_report.duplicates,
                                "quarantined": file_report.quarantined,
                                "ingest_id": next_id,
                                "ingested_at": datetime.now(UTC),
                            }
                        ],
                        schema=BRONZE_SCHEMAS["ingest_log"],
                    ),
                    None,
                )
                next_id += 1
                done[print_.sha256] = file_report.lines_read
                seen.remember(path, stat, print_.sha256)
                progress.file_done(file_report)
            except files.UnreadableFile as exc:
                file_report.error = str(exc)
                index = None  # it may hold part of the file; rebuild from what is committed
                progress.file_done(file_report)
        seen.save()
    return report


def _append(table: DeltaTable, rows: pa.Table, txn: Transaction | None) -> None:
    write_deltalake(
        table,
        rows,
        mode="append",
        commit_properties=CommitProperties(app_transactions=[txn] if txn else None),
    )
    table.update_incremental()


def _land_file(
    path: Path,
    sha256: str,
    tables: dict[str, DeltaTable],
    index: IdentityIndex,
    committed: dict[str, int | None],
    next_id: int,
    report: FileReport,
    progress: Progress,
    after_commit: Callable[[str, int], None] | None,
    expired_before_ms: int | None,
) -> int:
    app_id = _app_id(sha256)
    source = str(path)
    blocks = files.read_blocks(path, LINES_PER_BLOCK, progress.advance)

    def write(rows: BlockRows, block_no: int) -> None:
        for name in WRITE_ORDER:
            out = rows.tables[name]
            done_up_to = committed[name]
            if out.num_rows == 0 or (done_up_to is not None and done_up_to >= block_no):
                continue
            _append(tables[name], out, Transaction(app_id=app_id, version=block_no))
            if after_commit:
                after_commit(name, block_no)

    # A block's commits run in a third thread while the next block is judged. They stay in
    # block order: a block is handed over only once the one before it has committed (or failed).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidemark-write") as writer:
        writing: Future[None] | None = None
        for block_no, (block, checked) in enumerate(checked_ahead(blocks, expired_before_ms)):
            rows = judge_block(block, checked, source, sha256, next_id, index)
            if writing is not None:
                writing.result()
            writing = writer.submit(write, rows, block_no)
            report.lines_read += len(block)
            report.accepted += rows.accepted
            report.duplicates += rows.duplicates
            report.quarantined += rows.tables["quarantine"].num_rows
            next_id += 1
        if writing is not None:
            writing.result()
    return next_id
