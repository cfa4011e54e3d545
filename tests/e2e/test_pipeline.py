"""The main job end to end, as `make demo` and a schedule run it: ingest, dbt build, checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.e2e.conftest import DemoLake
from tests.e2e.harness import BIN, ROOT, dbt, dump_tables, run
from tidemark.lake import Lake

pytestmark = pytest.mark.e2e

BRONZE = ("timer_events", "watermark_events", "vertices", "quarantine")


def test_build_freshness_docs_then_compaction_leaves_every_mart_unchanged(
    demo_lake: DemoLake,
) -> None:
    """The scheduled path after `dbt build` (freshness), the docs, and bronze maintenance."""
    lake = demo_lake.lake
    assert "ERROR=0" in demo_lake.build.stdout and "PASS=" in demo_lake.build.stdout
    freshness = dbt("source", "freshness", lake=lake).check()  # the scheduled path's check
    assert freshness.stdout.count(" PASS freshness of bronze.") == 4, freshness.stdout
    assert " WARN freshness" not in freshness.stdout  # the quarantine has no freshness check
    dbt("docs", "generate", lake=lake).check()
    assert _undocumented(lake.root.parent / ".dbt" / "target") == []

    # Compacting bronze (delta-rs OPTIMIZE) rewrites its files; Spark reads the Delta log, so a
    # full refresh over the compacted tables gives exactly the same marts.
    before = dump_tables(lake, "tidemark")
    bronze_before = {t: _bronze(lake, t) for t in BRONZE}
    for table in BRONZE:
        DeltaTable(str(lake.bronze_table(table))).optimize.compact()
    assert any(
        len(list(lake.bronze_table(t).glob("*.parquet")))
        > len(DeltaTable(str(lake.bronze_table(t))).file_uris())
        for t in BRONZE
    ), "compaction removed no file, so the test would prove nothing"

    dbt("run", "--full-refresh", lake=lake).check()
    assert dump_tables(lake, "tidemark") == before
    assert {t: _bronze(lake, t) for t in BRONZE} == bronze_before


def _undocumented(target: Path) -> list[str]:
    """Models, and columns of their YAML or of the built tables, that have no description."""
    manifest = json.loads((target / "manifest.json").read_text())
    catalog = json.loads((target / "catalog.json").read_text())
    missing = []
    for key, node in manifest["nodes"].items():
        if node["resource_type"] != "model" or node["package_name"] != "tidemark":
            continue
        if not node["description"].strip():
            missing.append(node["name"])
        described = {n for n, c in node["columns"].items() if c["description"].strip()}
        built = set(catalog["nodes"].get(key, {}).get("columns", {}))
        columns = built | set(node["columns"])
        missing += [f"{node['name']}.{c}" for c in sorted(columns - described)]
    return missing


def _bronze(lake: Lake, table: str) -> int:
    return DeltaTable(str(lake.bronze_table(table))).to_pyarrow_dataset().count_rows()


def test_dbt_parse_needs_no_spark(lake: Lake) -> None:
    result = dbt("parse", lake=lake).check()
    assert "Spark" not in result.stderr
    assert not (lake.root / "metastore").exists()


def test_semantic_layer_validates_offline(lake: Lake) -> None:
    # MetricFlow reads <project root>/target/semantic_manifest.json whatever DBT_TARGET_PATH
    # says, so this parse writes where a user's would (target/ is git-ignored).
    dbt("parse", lake=lake, DBT_TARGET_PATH=str(ROOT / "target")).check()
    result = run([str(BIN / "mf"), "validate-configs", "--skip-dw"], lake).check()
    assert "ERRORS: 0" in result.stdout, result.stdout
