"""The main job end to end, as `make demo` runs it: generate, ingest, dbt build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.e2e.harness import dbt, dump_tables, tidemark
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e

BRONZE = ("timer_events", "watermark_events", "vertices", "quarantine")


def test_generate_ingest_build_then_compaction_leaves_every_mart_unchanged(
    tmp_path: Path, lake: Lake
) -> None:
    data = tmp_path / "events"
    tidemark(
        "generate", "--scenario", "backpressure", "--out", str(data), "--seed", "3", lake=lake
    ).check()
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["scenario"] == "backpressure"
    parts = _split(sorted(data.glob("*.jsonl")), tmp_path / "parts", pieces=4)
    for path in parts:  # one ingest per part: several commits, so several files, per table
        result = tidemark("ingest", str(path), lake=lake).check()
        assert " 0 quarantined" in result.stdout
    build = dbt("build", lake=lake).check()
    assert "ERROR=0" in build.stdout and "PASS=" in build.stdout
    freshness = dbt("source", "freshness", lake=lake).check()  # the scheduled path's check
    assert freshness.stdout.count(" PASS freshness of bronze.") == 4, freshness.stdout
    assert " WARN freshness" not in freshness.stdout  # the quarantine has no freshness check
    before = dump_tables(lake, "tidemark")
    bronze_before = {t: _bronze(lake, t) for t in BRONZE}

    for table in BRONZE:
        path = str(lake.bronze_table(table))
        DeltaTable(path).optimize.compact()
    assert any(
        len(list(lake.bronze_table(t).glob("*.parquet")))
        > len(DeltaTable(str(lake.bronze_table(t))).file_uris())
        for t in BRONZE
    ), "compaction removed no file, so the test would prove nothing"

    dbt("build", "--full-refresh", lake=lake).check()
    assert dump_tables(lake, "tidemark") == before
    assert {t: _bronze(lake, t) for t in BRONZE} == bronze_before


def _split(files: list[Path], folder: Path, pieces: int) -> list[Path]:
    folder.mkdir()
    lines = [line for f in files for line in f.read_bytes().splitlines(keepends=True)]
    size = -(-len(lines) // pieces)
    out = []
    for n in range(pieces):
        part = folder / f"part-{n}.jsonl"
        part.write_bytes(b"".join(lines[n * size : (n + 1) * size]))
        out.append(part)
    return out


def _bronze(lake: Lake, table: str) -> int:
    return DeltaTable(str(lake.bronze_table(table))).to_pyarrow_dataset().count_rows()


def test_dbt_parse_needs_no_spark(lake: Lake) -> None:
    result = dbt("parse", lake=lake).check()
    assert "Spark" not in result.stderr
    assert not (lake.root / "metastore").exists()
