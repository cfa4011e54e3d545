"""`tidemark ingest` without Spark: every contract rule, exactly-once landing, crash recovery."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.events import (
    DELETE,
    capture_gap,
    status,
    timer,
    update,
    valve_output,
    vertex,
    watermark,
    write_jsonl,
)
from tidemark.ingest import bronze_index, landing
from tidemark.ingest.landing import ingest
from tidemark.ingest.report import IngestReport
from tidemark.ingest.schema import TIMER_EVENTS, VERTICES
from tidemark.ingest.summary import BronzeSummary, Generations
from tidemark.lake import Lake


def rows(lake: Lake, table: str) -> list[dict]:
    path = lake.bronze_table(table)
    if not DeltaTable.is_deltatable(str(path)):
        return []
    found = DeltaTable(str(path)).to_pyarrow_dataset().to_table().to_pylist()
    return sorted(found, key=lambda r: (r.get("source_sha256"), r.get("line_number")))


def content(lake: Lake, table: str) -> list[dict]:
    """Rows without the columns that depend on when and in which commit they landed."""
    drop = {"ingest_id", "ingested_at"}
    return [{k: v for k, v in r.items() if k not in drop} for r in rows(lake, table)]


def quarantine_reasons(lake: Lake) -> dict[int, str]:
    return {r["line_number"]: r["reason"] for r in rows(lake, "quarantine")}


def assert_every_line_in_one_place(report: IngestReport) -> None:
    assert report.accepted + report.duplicates + report.quarantined == report.lines_read


# -- every rule of contract §1 has a bad-input case ------------------------------------------
BAD_LINES = [
    ("malformed JSON", b'{"type": "timer",', "malformed JSON"),
    ("not an object", b"[1, 2, 3]", "line is a JSON array, not an object"),
    ("missing type", timer(type=DELETE), "missing field 'type'"),
    ("unknown type", timer(type="gauge"), "field 'type' is 'gauge': expected one of"),
    ("missing job_id", timer(job_id=DELETE), "missing field 'job_id'"),
    ("empty job_id", timer(job_id=""), "field 'job_id' is empty"),
    ("job_id not a string", timer(job_id=12), "field 'job_id' must be a string"),
    ("empty vertex_id", vertex(vertex_id=""), "field 'vertex_id' is empty"),
    ("missing subtask_index", timer(subtask_index=DELETE), "missing field 'subtask_index'"),
    ("negative subtask_index", timer(subtask_index=-1), "field 'subtask_index' is negative: -1"),
    ("float subtask_index", timer(subtask_index=1.0), "must be an integer, got number 1.0"),
    ("negative attempt", timer(attempt=-2), "field 'attempt' is negative: -2"),
    ("string attempt", timer(attempt="0"), "field 'attempt' must be an integer"),
    ("missing seq", timer(DELETE), "missing field 'seq'"),
    ("negative seq", timer(seq=-5), "field 'seq' is negative: -5"),
    ("huge seq", timer(seq=2**63), "out of range for a signed 64-bit integer"),
    ("missing ts_ms", timer(ts_ms=DELETE), "missing field 'ts_ms'"),
    ("huge ts_ms", timer(ts_ms=-(2**63) - 1), "out of range for a signed 64-bit integer"),
    ("bad timer", timer(timer="busy"), "field 'timer' is 'busy': expected one of idle"),
    ("missing timer", timer(timer=DELETE), "missing field 'timer'"),
    ("bad action", timer(action="stop"), "field 'action' is 'stop': expected one of start, end"),
    ("published on start", timer(published=3), "'published' is only allowed on action 'update'"),
    ("published above 1000", update(published=1001), "'published' is 1001: a TimerGauge publishes"),
    ("negative published", update(published=-1), "field 'published' is -1"),
    ("float published", update(published=2.5), "field 'published' must be an integer"),
    ("output without kind", valve_output(kind=DELETE), "missing field 'kind'"),
    ("bad output kind", valve_output(kind="idle"), "field 'kind' is 'idle': expected one of"),
    ("output without input", valve_output(input_index=DELETE), "missing field 'input_index'"),
    ("output watermark missing", valve_output(watermark_ms=DELETE), "missing field 'watermark_ms'"),
    (
        "output status missing",
        valve_output(kind="status", watermark_ms=DELETE),
        "missing field 'status'",
    ),
    (
        "bad output status",
        valve_output(kind="status", status="Idle"),
        "field 'status' is 'Idle': expected one of IDLE, ACTIVE",
    ),
    ("gap without to_seq", capture_gap(to_seq=DELETE), "missing field 'to_seq'"),
    ("gap ends before it starts", capture_gap(5, to_seq=4), "field 'to_seq' is 4: below seq (5)"),
    ("gap without to_ts_ms", capture_gap(to_ts_ms=DELETE), "missing field 'to_ts_ms'"),
    ("gap drops nothing", capture_gap(dropped=0), "field 'dropped' is below 1: 0"),
    ("gap without reason", capture_gap(reason=DELETE), "missing field 'reason'"),
    ("gap without seq", capture_gap(seq=DELETE), "missing field 'seq'"),
    ("missing input_index", watermark(input_index=DELETE), "missing field 'input_index'"),
    ("negative input_index", watermark(input_index=-1), "field 'input_index' is negative"),
    ("negative channel", watermark(channel_index=-1), "field 'channel_index' is negative"),
    ("channel >= channels", watermark(channel_index=2), "must be below num_channels (2)"),
    ("zero channels", watermark(num_channels=0), "field 'num_channels' is below 1: 0"),
    ("missing watermark_ms", watermark(watermark_ms=DELETE), "missing field 'watermark_ms'"),
    ("float watermark", watermark(watermark_ms=1.5), "field 'watermark_ms' must be an integer"),
    ("huge watermark", watermark(watermark_ms=2**64), "out of range for a signed 64-bit integer"),
    ("bad status", status(status="idle"), "field 'status' is 'idle': expected one of IDLE, ACTIVE"),
    ("missing status", status(status=DELETE), "missing field 'status'"),
    ("missing parallelism", vertex(parallelism=DELETE), "missing field 'parallelism'"),
    ("zero parallelism", vertex(parallelism=0), "field 'parallelism' is below 1: 0"),
    ("busy flag string", vertex(busy_time_enabled="false"), "must be true or false"),
    ("upstream not a list", vertex(upstream_vertex_ids="src"), "must be an array of strings"),
    ("upstream null item", vertex(upstream_vertex_ids=["a", None]), "holds a null or empty id"),
    ("repeated key", b'{"type": "timer", "type": "vertex"}', "field 'type' appears more than once"),
    ("invalid utf-8", b'{"type": "timer", "job_id": "\xff\xfe"}', "line is not valid UTF-8"),
]


@pytest.mark.parametrize(("case", "bad", "reason"), BAD_LINES, ids=[c[0] for c in BAD_LINES])
def test_each_contract_rule_quarantines_with_a_reason(
    tmp_path: Path, lake: Lake, case: str, bad: dict | bytes, reason: str
) -> None:
    good = timer(seq=100, subtask_index=9)
    path = write_jsonl(tmp_path / "events.jsonl", [good, bad, good])
    report = ingest([path], lake)
    assert (report.lines_read, report.accepted, report.duplicates, report.quarantined) == (
        3,
        1,
        1,
        1,
    )
    [row] = rows(lake, "quarantine")
    assert row["line_number"] == 2 and reason in row["reason"]
    assert row["source_file"] == str(path) and row["raw_line"]
    if isinstance(bad, bytes) and b"\xff" in bad:
        assert row["raw_bytes"] == bad  # nothing is lost, even bytes that are not text
    assert len(rows(lake, "timer_events")) == 1


def test_valid_events_land_in_their_tables_with_lineage(tmp_path: Path, lake: Lake) -> None:
    path = write_jsonl(
        tmp_path / "a.jsonl",
        [vertex(), timer(0), watermark(1), status(2), timer(3, attempt=DELETE, action="end")],
    )
    report = ingest([path], lake)
    assert (report.accepted, report.quarantined, report.duplicates) == (5, 0, 0)
    timers = rows(lake, "timer_events")
    assert [(r["seq"], r["attempt"], r["action"]) for r in timers] == [
        (0, 0, "start"),
        (3, 0, "end"),
    ]
    channel = rows(lake, "watermark_events")
    assert [(r["event_type"], r["watermark_ms"], r["status"]) for r in channel] == [
        ("watermark", 501, None),
        ("watermark_status", None, "IDLE"),
    ]
    [graph] = rows(lake, "vertices")
    assert graph["upstream_vertex_ids"] == ["source"] and graph["busy_time_enabled"] is True
    assert {r["line_number"] for r in timers + channel + [graph]} == {1, 2, 3, 4, 5}
    assert all(r["source_file"] == str(path) for r in timers)


def test_capture_records_land_in_their_tables(tmp_path: Path, lake: Lake) -> None:
    """A capture's records (decision 0006): updates with published values, valve outputs, gaps."""
    path = write_jsonl(
        tmp_path / "capture.jsonl",
        [
            timer(0),
            update(1, published=1000),
            update(2, published=DELETE),
            watermark(3),
            valve_output(4),
            valve_output(5, kind="status", watermark_ms=DELETE, status="IDLE"),
            capture_gap(6, to_seq=9, dropped=4, reason="write failed: No space left on device"),
            timer(10, action="end"),
        ],
    )
    report = ingest([path], lake)
    assert (report.accepted, report.quarantined) == (8, 0)
    assert [(r["seq"], r["action"], r["published"]) for r in rows(lake, "timer_events")] == [
        (0, "start", None),
        (1, "update", 1000),
        (2, "update", None),
        (10, "end", None),
    ]
    outputs = rows(lake, "valve_outputs")
    assert [(r["seq"], r["kind"], r["watermark_ms"], r["status"]) for r in outputs] == [
        (4, "watermark", 404, None),
        (5, "status", None, "IDLE"),
    ]
    [gap] = rows(lake, "capture_gaps")
    assert (gap["seq"], gap["to_seq"], gap["dropped"], gap["to_ts_ms"]) == (6, 9, 4, 1008)
    assert gap["reason"] == "write failed: No space left on device" and gap["line_number"] == 7


def test_capture_records_share_the_task_identity(tmp_path: Path, lake: Lake) -> None:
    """One seq per task across every record type (contract §1): same seq, other type = conflict."""
    a = write_jsonl(tmp_path / "a.jsonl", [update(1), valve_output(2), capture_gap(3)])
    b = write_jsonl(
        tmp_path / "b.jsonl",
        [
            update(1),  # duplicate
            update(1, published=251),  # conflict: another published value
            watermark(2),  # conflict: a valve output has seq 2
            capture_gap(3, reason="queue full again"),  # conflict: another reason
            valve_output(2),  # duplicate
        ],
    )
    ingest([a], lake)
    report = ingest([b], lake)
    assert (report.accepted, report.duplicates, report.quarantined) == (0, 2, 3)
    assert sorted(quarantine_reasons(lake)) == [2, 3, 4]


def test_a_lake_from_before_captures_gains_the_new_tables_and_column(
    tmp_path: Path, lake: Lake
) -> None:
    """Migration: an old timer_events table (no `published`) keeps its rows; updates land."""
    old_schema = TIMER_EVENTS.remove(TIMER_EVENTS.get_field_index("published"))
    old = ingest([write_jsonl(tmp_path / "old.jsonl", [timer(0)])], lake)
    assert old.accepted == 1
    table_path = lake.bronze_table("timer_events")
    kept = DeltaTable(str(table_path)).to_pyarrow_table().select(old_schema.names)
    write_deltalake(
        str(table_path), kept.cast(old_schema), mode="overwrite", schema_mode="overwrite"
    )
    for name in ("valve_outputs", "capture_gaps"):
        shutil.rmtree(lake.bronze_table(name))
    DeltaTable(str(table_path)).alter.set_table_properties({"delta.checkpointInterval": "100"})
    assert "published" not in DeltaTable(str(table_path)).schema().to_arrow().names
    report = ingest(
        [write_jsonl(tmp_path / "new.jsonl", [update(1), valve_output(2), capture_gap(3)])], lake
    )
    assert (report.accepted, report.quarantined) == (3, 0)
    assert [(r["seq"], r["published"]) for r in rows(lake, "timer_events")] == [
        (0, None),
        (1, 250),
    ]
    assert len(rows(lake, "valve_outputs")) == 1 and len(rows(lake, "capture_gaps")) == 1
    # the old table (overwritten without its properties) is given them again: a checkpoint
    # every 10 commits bounds what opening a table replays (issue 10)
    for name in ("timer_events", "valve_outputs", "ingest_log"):
        configuration = DeltaTable(str(lake.bronze_table(name))).metadata().configuration
        assert configuration.get("delta.checkpointInterval") == "10", name


def test_vertex_defaults(tmp_path: Path, lake: Lake) -> None:
    path = write_jsonl(
        tmp_path / "g.jsonl",
        [vertex(busy_time_enabled=DELETE, upstream_vertex_ids=DELETE, vertex_name=DELETE)],
    )
    ingest([path], lake)
    [graph] = rows(lake, "vertices")
    assert graph["busy_time_enabled"] is True and graph["upstream_vertex_ids"] == []
    assert graph["vertex_name"] is None


def test_vertex_records_carry_the_release_key_groups_and_ship_strategies(
    tmp_path: Path, lake: Lake
) -> None:
    """Contract §8: the optional fields land as given, absent ones read NULL; a record that adds
    them to an earlier one's graph is new, not a repeat; each breach is quarantined with why."""
    graph = {"upstream_vertex_ids": ["a", "b"], "parallelism": 2}
    full = {
        "flink_version": "1.15.4",
        "max_parallelism": 128,
        "input_ship_strategies": ["HASH", "FORWARD"],
    }
    lines = [
        vertex(**graph),
        vertex(**graph, **full),  # adds the fields: lands
        vertex(**graph, **full),  # a repeat
        vertex(vertex_id="w", flink_version="2.3-SNAPSHOT"),
        vertex(vertex_id="x", flink_version="two"),
        vertex(vertex_id="y", max_parallelism=0),
        vertex(vertex_id="z", **graph, input_ship_strategies=["HASH"]),
        vertex(vertex_id="n", **graph, input_ship_strategies=["HASH", ""]),
    ]
    report = ingest([write_jsonl(tmp_path / "g.jsonl", lines)], lake)
    assert (report.accepted, report.duplicates, report.quarantined) == (3, 1, 4)
    landed = [
        (r["vertex_id"], r["flink_version"], r["max_parallelism"], r["input_ship_strategies"])
        for r in rows(lake, "vertices")
    ]
    assert sorted(landed, key=str) == sorted(
        [
            ("map", None, None, None),
            ("map", "1.15.4", 128, ["HASH", "FORWARD"]),
            ("w", "2.3-SNAPSHOT", None, None),
        ],
        key=str,
    )
    assert quarantine_reasons(lake) == {
        5: "field 'flink_version' is 'two': expected a Flink release like 1.15.4 or 2.3.0",
        6: "field 'max_parallelism' is below 1: 0",
        7: "field 'input_ship_strategies' has 1 names for 2 upstream vertices: one per entry of "
        "upstream_vertex_ids",
        8: "field 'input_ship_strategies' holds a null or empty name",
    }


def test_a_lake_from_before_the_release_field_gains_its_columns(tmp_path: Path, lake: Lake) -> None:
    """Migration: a vertices table from before contract §8 keeps its rows (NULL in the new
    columns), and a record with the release lands beside them."""
    new = {"flink_version", "max_parallelism", "input_ship_strategies"}
    old_schema = pa.schema([f for f in VERTICES if f.name not in new])
    ingest([write_jsonl(tmp_path / "old.jsonl", [vertex()])], lake)
    table_path = lake.bronze_table("vertices")
    kept = DeltaTable(str(table_path)).to_pyarrow_table().select(old_schema.names)
    write_deltalake(
        str(table_path), kept.cast(old_schema), mode="overwrite", schema_mode="overwrite"
    )
    assert not new & set(DeltaTable(str(table_path)).schema().to_arrow().names)
    report = ingest([write_jsonl(tmp_path / "new.jsonl", [vertex(flink_version="1.15.4")])], lake)
    assert (report.accepted, report.duplicates, report.quarantined) == (1, 0, 0)
    assert sorted((r["flink_version"] or "") for r in rows(lake, "vertices")) == ["", "1.15.4"]


def test_a_vertex_list_arrow_infers_wrongly_is_quarantined_not_a_crash(
    tmp_path: Path, lake: Lake
) -> None:
    """Contract §1 (a bad line is quarantined with its reason, nothing else is lost) for a block
    big enough for Arrow's reader (not the line-by-line path) with a null leading a vertex's
    upstream ids: pyarrow 26 infers an invalid array there, and ingest raised."""
    lines = [timer(seq) for seq in range(300)] + [vertex(upstream_vertex_ids=[None, "source"])]
    report = ingest([write_jsonl(tmp_path / "g.jsonl", lines)], lake)
    assert (report.accepted, report.quarantined) == (300, 1)
    assert quarantine_reasons(lake) == {301: "field 'upstream_vertex_ids' holds a null or empty id"}


def test_reingesting_the_same_content_adds_nothing(tmp_path: Path, lake: Lake) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [timer(0), timer(1), b"garbage"])
    first = ingest([path], lake)
    copy = tmp_path / "renamed.jsonl"
    copy.write_bytes(path.read_bytes())
    again = ingest([path, copy], lake)
    assert (first.accepted, first.quarantined) == (2, 1)
    assert again.accepted == 0 and again.quarantined == 0
    assert all(f.skipped_as_seen for f in again.files)
    assert_every_line_in_one_place(again)
    assert len(rows(lake, "timer_events")) == 2 and len(rows(lake, "quarantine")) == 1


def test_unchanged_landed_files_are_not_read_again(
    tmp_path: Path, lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder ingested every minute (`tidemark run`): files landed before and unchanged since
    (size, mtime, inode) are skipped without hashing; a changed file is read and its new lines
    land; a lost or broken cache only costs the hashing again."""
    folder = tmp_path / "capture"
    folder.mkdir()
    old = write_jsonl(folder / "a.jsonl", [timer(0), timer(1)])
    ingest([folder], lake)
    hashed: list[Path] = []
    real = landing.files.fingerprint
    monkeypatch.setattr(
        landing.files, "fingerprint", lambda p, *a: hashed.append(p.name) or real(p, *a)
    )

    write_jsonl(folder / "b.jsonl", [timer(2)])
    again = ingest([folder], lake)
    assert hashed == ["b.jsonl"] and again.accepted == 1
    assert [f.skipped_as_seen for f in again.files] == [True, False]

    write_jsonl(old, [timer(0), timer(1), timer(3)])  # rewritten in place: read again
    hashed.clear()
    changed = ingest([folder], lake)
    assert hashed == ["a.jsonl"] and changed.accepted == 1 and changed.duplicates == 3

    lake.seen_files.write_text("{not json")
    hashed.clear()
    assert ingest([folder], lake).accepted == 0
    assert sorted(hashed) == ["a.jsonl", "b.jsonl"]
    assert json.loads(lake.seen_files.read_text())  # rebuilt
    assert len(rows(lake, "timer_events")) == 4


def test_duplicates_across_files_are_kept_once_and_conflicts_quarantined(
    tmp_path: Path, lake: Lake
) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [timer(0), timer(1), watermark(2)])
    b = write_jsonl(
        tmp_path / "b.jsonl",
        [timer(1), timer(0, ts_ms=99), watermark(2), status(2), timer(5), timer(5)],
    )
    ingest([a], lake)
    report = ingest([b], lake)
    assert (report.accepted, report.duplicates, report.quarantined) == (1, 3, 2)
    reasons = quarantine_reasons(lake)
    assert set(reasons) == {2, 4}
    assert all(r.startswith("conflict: an event with the same identity") for r in reasons.values())
    assert "seq=0" in reasons[2] and "seq=2" in reasons[4]
    first = [r for r in rows(lake, "timer_events") if r["seq"] == 0]
    assert first[0]["ts_ms"] == 1000  # the first one stays


def _events_read_from_bronze(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the landed task events each ingest reads back from bronze to judge new ones."""
    counts: list[int] = []
    real = bronze_index.landed_events

    def counting(*args, **kwargs):
        counts.append(0)
        for table in real(*args, **kwargs):
            counts[-1] += table.num_rows
            yield table

    monkeypatch.setattr(bronze_index, "landed_events", counting)
    return counts


def test_a_later_file_reads_back_only_the_tasks_it_might_repeat(
    tmp_path: Path, lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10: ingest costs what is new. A capture's next file carries on each task's seq; only
    an event at or below its task's highest landed seq makes ingest read that task back, and
    then only its landed events from that seq up."""
    history = [timer(seq) for seq in range(10)] + [timer(seq, subtask_index=1) for seq in range(10)]
    ingest([write_jsonl(tmp_path / "a.jsonl", history)], lake)
    read = _events_read_from_bronze(monkeypatch)

    carry_on = [timer(seq) for seq in range(10, 13)] + [timer(10, subtask_index=1)]
    report = ingest([write_jsonl(tmp_path / "b.jsonl", carry_on)], lake)
    assert report.accepted == 4 and sum(read) == 0

    repeat = [timer(13), timer(5, subtask_index=1), timer(6, subtask_index=1, ts_ms=1)]
    report = ingest([write_jsonl(tmp_path / "c.jsonl", repeat)], lake)
    assert (report.accepted, report.duplicates, report.quarantined) == (1, 1, 1)
    assert sum(read) == 6  # subtask 1's landed seqs 5 to 10 only, none of subtask 0's 13


def test_a_later_block_with_a_lower_seq_reads_the_range_below(
    tmp_path: Path, lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A late event in a later block of the same file, below what an earlier block read back,
    is still judged against every landed event of its seq."""
    ingest([write_jsonl(tmp_path / "a.jsonl", [timer(seq) for seq in range(10)])], lake)
    read = _events_read_from_bronze(monkeypatch)
    monkeypatch.setattr(landing, "LINES_PER_BLOCK", 2)
    late = [timer(8), timer(10), timer(3), timer(4, ts_ms=99), timer(11), timer(12)]
    report = ingest([write_jsonl(tmp_path / "b.jsonl", late)], lake)
    assert (report.accepted, report.duplicates, report.quarantined) == (3, 2, 1)
    assert read == [2, 5]  # seqs 8-9, then 3-7: every landed row once
    assert sorted(r["seq"] for r in rows(lake, "timer_events")) == list(range(13))


def test_a_late_event_reads_back_only_the_last_ingests_files(tmp_path: Path, lake: Lake) -> None:
    """Issue 11: a capture's late events repeat the tail of what the last ingests landed, so the
    lookup reads those ingests' files, not the task's history: with the first ingest's data file
    gone from disk, a late event of the last ingest is still judged. One from before the
    generations the summary keeps reads everything (and here finds the file missing)."""
    for n in range(6):  # six ingests, six generations; the summary keeps the last four
        # a fast task and a slow one: every file's seqs span both, so no seq bound skips a file
        batch = [timer(seq) for seq in range(10 * n, 10 * n + 10)] + [timer(n, subtask_index=1)]
        ingest([write_jsonl(tmp_path / f"a{n}.jsonl", batch)], lake)
    table = DeltaTable(str(lake.bronze_table("timer_events")))
    first = [f for f in table.file_uris() if 0 in _seqs_of(f)]
    assert len(first) == 1
    Path(first[0].removeprefix("file://")).unlink()

    late = [timer(55), timer(57, ts_ms=9), timer(60), timer(5, subtask_index=1)]
    report = ingest([write_jsonl(tmp_path / "late.jsonl", late)], lake)
    assert (report.accepted, report.duplicates, report.quarantined) == (1, 2, 1)

    with pytest.raises(FileNotFoundError):
        ingest([write_jsonl(tmp_path / "older.jsonl", [timer(5)])], lake)


def _seqs_of(uri: str) -> set[int]:
    return set(pq.read_table(uri.removeprefix("file://"), columns=["seq"])["seq"].to_pylist())


def test_generations_bound_where_a_late_seq_can_have_landed() -> None:
    """BronzeSummary.landed_since: the ingest from which on a seq at least this high can lie."""
    ages = Generations()
    assert ages.landed_since(0) is None  # nothing landed: no bound needed, none claimed
    for ingest_id, highest in [(1, 9), (4, 19), (7, 29), (9, 39), (12, 49), (15, 59)]:
        ages.add(ingest_id, highest)
    assert (ages.ids, ages.max_seqs, ages.older_max_seq) == ([7, 9, 12, 15], [29, 39, 49, 59], 19)
    assert ages.landed_since(55) == 15  # only the newest generation's rows reach 55
    assert ages.landed_since(50) == 15
    assert ages.landed_since(49) == 12
    assert ages.landed_since(20) == 7
    assert ages.landed_since(19) is None  # older rows than the kept generations reach 19
    out_of_order = Generations([7, 3], [29, 39], None)  # a table first read whole, later
    assert out_of_order.landed_since(35) == 3


def test_a_summary_of_the_layout_before_generations_is_rebuilt(tmp_path: Path, lake: Lake) -> None:
    """A lake's summary written by an older tidemark (no generations) is rebuilt from bronze."""
    ingest([write_jsonl(tmp_path / "a.jsonl", [timer(0), timer(1)])], lake)
    old = pa.table(
        {"job_id": ["job-1"], "vertex_id": ["v"], "subtask_index": [0], "attempt": [0],
         "max_seq": [1], "input_index": pa.array([None], pa.int64()),
         "num_channels": pa.array([None], pa.int64())},
    ).replace_schema_metadata({"tidemark.versions": "{}", "tidemark.done": "{}"})  # fmt: skip
    with pa.OSFile(str(lake.bronze_summary), "wb") as sink, pa.ipc.new_file(sink, old.schema) as w:
        w.write_table(old)
    report = ingest([write_jsonl(tmp_path / "b.jsonl", [timer(1), timer(2)])], lake)
    assert (report.accepted, report.duplicates) == (1, 1)
    summary = BronzeSummary.load(lake.bronze_summary)
    assert [ages.max_seqs for ages in summary.generations.values()] == [[1]]  # as of b's start


def test_new_events_below_a_tasks_highest_seq_land(tmp_path: Path, lake: Lake) -> None:
    """A file delivered late fills a task's seq gap: below the highest seq, yet new."""
    ingest([write_jsonl(tmp_path / "a.jsonl", [timer(0), timer(1), timer(5)])], lake)
    late = write_jsonl(tmp_path / "late.jsonl", [timer(2), timer(3), timer(5), timer(1, ts_ms=7)])
    report = ingest([late], lake)
    assert (report.accepted, report.duplicates, report.quarantined) == (2, 1, 1)
    assert sorted(r["seq"] for r in rows(lake, "timer_events")) == [0, 1, 2, 3, 5]


@pytest.mark.parametrize("change", ["compacted", "log cleaned up", "damaged", "deleted"])
def test_the_bronze_summary_is_rebuilt_when_it_cannot_be_trusted(
    tmp_path: Path, lake: Lake, change: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The summary follows bronze through the files its Delta log's new commits add, and passes
    over a compaction (rows moved, not changed). When a commit to follow has left the log, or the
    summary is damaged or gone, it is rebuilt from bronze: the identity and channel rules hold all
    the same."""
    for n in range(3):  # three commits, so compaction has files to merge
        ingest([write_jsonl(tmp_path / f"a{n}.jsonl", [timer(n), watermark(10 + n)])], lake)
    if change == "compacted":
        for table in ("timer_events", "watermark_events"):
            DeltaTable(str(lake.bronze_table(table))).optimize.compact()
    elif change == "log cleaned up":  # the summary is behind, and the commits since are gone
        summary = BronzeSummary.load(lake.bronze_summary)
        summary.versions["timer_events"] = 1
        summary.save(lake.bronze_summary)
        table = DeltaTable(str(lake.bronze_table("timer_events")))
        table.create_checkpoint()
        for version in range(1, table.version()):
            (lake.bronze_table("timer_events") / "_delta_log" / f"{version:020d}.json").unlink()
    elif change == "damaged":
        lake.bronze_summary.write_bytes(b"not arrow")
    else:
        lake.bronze_summary.unlink()
    again = [timer(1), timer(2, ts_ms=5), watermark(13, num_channels=3), timer(3)]
    with caplog.at_level("INFO", logger="tidemark.ingest.summary"):
        report = ingest([write_jsonl(tmp_path / "b.jsonl", again)], lake)
    assert (report.accepted, report.duplicates, report.quarantined) == (1, 1, 2)
    assert sorted(quarantine_reasons(lake).values())[0].startswith("conflict")
    assert "already has 2 channels" in sorted(quarantine_reasons(lake).values())[1]
    followed = "cannot be followed"
    expected_log = {
        "compacted": "",
        "log cleaned up": followed,
        "damaged": "rebuilt from bronze",
        "deleted": "",
    }
    assert expected_log[change] in caplog.text
    assert (followed in caplog.text) == (change == "log cleaned up")
    assert lake.bronze_summary.is_file()


def test_identity_spans_event_types_and_attempts(tmp_path: Path, lake: Lake) -> None:
    path = write_jsonl(
        tmp_path / "a.jsonl",
        [timer(3), watermark(3), timer(3, attempt=1), timer(3, subtask_index=1)],
    )
    report = ingest([path], lake)
    assert (report.accepted, report.quarantined) == (3, 1)
    assert list(quarantine_reasons(lake)) == [2]


def test_num_channels_is_constant_per_task_input(tmp_path: Path, lake: Lake) -> None:
    a = write_jsonl(
        tmp_path / "a.jsonl", [watermark(0), watermark(1, input_index=1, num_channels=5)]
    )
    b = write_jsonl(
        tmp_path / "b.jsonl",
        [watermark(2, num_channels=3), watermark(3, input_index=1, num_channels=5), watermark(4)],
    )
    ingest([a], lake)
    report = ingest([b], lake)
    assert (report.accepted, report.quarantined) == (2, 1)
    assert quarantine_reasons(lake) == {
        1: "field 'num_channels' is 3: input 0 of this task already has 2 channels"
    }


def test_repeated_vertex_record_is_a_duplicate_and_a_new_one_lands(
    tmp_path: Path, lake: Lake
) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [vertex(parallelism=2), vertex(parallelism=4)])
    b = write_jsonl(tmp_path / "b.jsonl", [vertex(parallelism=2), vertex(parallelism=8)])
    ingest([a], lake)
    report = ingest([b], lake)
    assert (report.accepted, report.duplicates) == (1, 1)
    assert sorted(r["parallelism"] for r in rows(lake, "vertices")) == [2, 4, 8]


def test_only_the_vertex_records_of_a_files_jobs_are_read(
    tmp_path: Path, lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10: the vertices table is not read whole at every ingest."""
    first = [vertex(job_id=f"job-{n}", parallelism=2) for n in range(3)]
    ingest([write_jsonl(tmp_path / "a.jsonl", first)], lake)
    read: list[str | None] = []
    landed_vertices = bronze_index.landed_vertices

    def spy(tables, exclude_sha, job_id=None):
        read.append(job_id)
        return landed_vertices(tables, exclude_sha, job_id)

    monkeypatch.setattr(bronze_index, "landed_vertices", spy)
    ingest([write_jsonl(tmp_path / "b.jsonl", [timer(0), timer(1, action="end")])], lake)
    assert read == []
    again = [vertex(job_id="job-1", parallelism=2), vertex(job_id="job-1", parallelism=3)]
    report = ingest([write_jsonl(tmp_path / "c.jsonl", again)], lake)
    assert read == ["job-1"]
    assert (report.accepted, report.duplicates) == (1, 1)
    assert len(rows(lake, "vertices")) == 4


def test_empty_and_blank_files(tmp_path: Path, lake: Lake) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n   \n\t\r\n")
    report = ingest([empty, blank], lake)
    assert report.lines_read == 0 and not report.errors
    assert len(rows(lake, "ingest_log")) == 2


def test_gzip_crlf_and_unicode(tmp_path: Path, lake: Lake) -> None:
    text = (
        json.dumps(timer(0, job_id="jöb-数据"))
        + "\r\n\r\n"
        + json.dumps(timer(1, job_id="jöb-数据"))
    )
    path = tmp_path / "events.jsonl.gz"
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    report = ingest([path], lake)
    assert (report.lines_read, report.accepted) == (2, 2)
    assert [(r["job_id"], r["line_number"]) for r in rows(lake, "timer_events")] == [
        ("jöb-数据", 1),
        ("jöb-数据", 3),
    ]


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_broken_gzip_is_refused_whole_and_reported(tmp_path: Path, lake: Lake, damage: str) -> None:
    data = gzip.compress(("\n".join(json.dumps(timer(i)) for i in range(2000))).encode())
    broken = (
        data[: len(data) // 2] if damage == "truncated" else data[:20] + b"\x00" * 40 + data[60:]
    )
    path = tmp_path / "broken.jsonl.gz"
    path.write_bytes(broken)
    good = write_jsonl(tmp_path / "good.jsonl", [timer(0, vertex_id="other")])
    report = ingest([path, good], lake)
    [failed] = report.errors
    assert failed.path == path and "gzip" in (failed.error or "")
    assert rows(lake, "timer_events") and all(
        r["vertex_id"] == "other" for r in rows(lake, "timer_events")
    )
    assert len(rows(lake, "ingest_log")) == 1  # the broken file is not marked done


def test_folders_are_searched_for_event_files(tmp_path: Path, lake: Lake) -> None:
    folder = tmp_path / "drop"
    (folder / "nested").mkdir(parents=True)
    write_jsonl(folder / "a.jsonl", [timer(0)])
    write_jsonl(folder / "nested" / "b.jsonl", [timer(1)])
    (folder / "notes.txt").write_text("not events")
    report = ingest([folder], lake)
    assert [f.path.name for f in report.files] == ["a.jsonl", "b.jsonl"]
    assert report.accepted == 2


def _crash_after(target: tuple[str, int]):
    class Crash(Exception):
        pass

    def hook(table: str, block: int) -> None:
        if (table, block) == target:
            raise Crash(f"simulated crash after {table} block {block}")

    return Crash, hook


def _mixed_records(n: int) -> list[dict | bytes]:
    records: list[dict | bytes] = [vertex()]
    for i in range(n):
        records.append(timer(i) if i % 3 else watermark(i, channel_index=i % 2))
        if i % 7 == 0:
            records.append(timer(i))  # a duplicate
        if i % 11 == 0:
            records.append(b"{broken")
    return records


@pytest.mark.parametrize(
    "crash_at",
    [
        ("timer_events", 0),
        ("watermark_events", 0),
        ("vertices", 0),
        ("timer_events", 2),
        ("quarantine", 3),
        ("watermark_events", 5),
    ],
)
def test_crash_between_commits_then_rerun_converges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_at: tuple[str, int]
) -> None:
    monkeypatch.setattr(landing, "LINES_PER_BLOCK", 10)
    path = write_jsonl(tmp_path / "events.jsonl", _mixed_records(60))
    clean = Lake.from_env(tmp_path / "clean")
    expected = ingest([path], clean)

    crashed = Lake.from_env(tmp_path / "crashed")
    crash, hook = _crash_after(crash_at)
    with pytest.raises(crash):
        ingest([path], crashed, after_commit=hook)
    assert rows(crashed, "ingest_log") == []
    rerun = ingest([path], crashed)
    assert (rerun.accepted, rerun.duplicates, rerun.quarantined) == (
        expected.accepted,
        expected.duplicates,
        expected.quarantined,
    )
    for table in ("timer_events", "watermark_events", "vertices", "quarantine"):
        assert content(crashed, table) == content(clean, table), table


def test_every_line_lands_in_exactly_one_place(tmp_path: Path, lake: Lake) -> None:
    records = _mixed_records(50)
    path = write_jsonl(tmp_path / "events.jsonl", records)
    report = ingest([path], lake)
    assert_every_line_in_one_place(report)
    landed = {
        r["line_number"]
        for t in ("timer_events", "watermark_events", "vertices", "quarantine")
        for r in rows(lake, t)
    }
    assert len(landed) == report.accepted + report.quarantined
    [logged] = rows(lake, "ingest_log")
    assert (logged["lines_read"], logged["accepted"], logged["duplicates"]) == (
        report.lines_read,
        report.accepted,
        report.duplicates,
    )


def test_ingest_ids_grow_with_every_commit(tmp_path: Path, lake: Lake, monkeypatch) -> None:
    monkeypatch.setattr(landing, "LINES_PER_BLOCK", 2)
    path = write_jsonl(tmp_path / "a.jsonl", [timer(i) for i in range(6)])
    ingest([path], lake)
    later = write_jsonl(tmp_path / "b.jsonl", [timer(10)])
    ingest([later], lake)
    ids = [r["ingest_id"] for r in sorted(rows(lake, "timer_events"), key=lambda r: r["seq"])]
    assert ids == sorted(ids) and len(set(ids)) == 4


def test_channels_in_force_come_from_landed_events_and_each_pairs_first_line() -> None:
    """The index that judges a resumed file (add_landed, no summary) holds num_channels per
    (task, input) as landed; in a block, a pair not seen before takes its first line's value."""
    from tidemark.ingest.identity import ACCEPTED, CHANNELS_CHANGED, IdentityIndex
    from tidemark.ingest.schema import PARSED

    def table(events: list[dict]) -> pa.Table:
        return pa.Table.from_pylist(
            [{name: e.get(name) for name in PARSED.names} for e in events], schema=PARSED
        )

    index = IdentityIndex()
    index.add_landed(table([watermark(0), watermark(1, input_index=1, num_channels=5), timer(2)]))
    verdicts = index.judge(
        table(
            [
                watermark(3, num_channels=3),  # input 0 has 2
                watermark(4, input_index=1, num_channels=5),
                watermark(5, input_index=2, num_channels=7),  # new input: 7 from here on
                watermark(6, input_index=2, num_channels=4),
                watermark(7, subtask_index=1, num_channels=3),  # another task: its own input 0
                timer(8),
            ]
        )
    )
    assert verdicts.codes.tolist() == [
        CHANNELS_CHANGED,
        ACCEPTED,
        ACCEPTED,
        CHANNELS_CHANGED,
        ACCEPTED,
        ACCEPTED,
    ]
    assert verdicts.expected_channels.tolist()[:5] == [2, 5, 7, 7, 3]
