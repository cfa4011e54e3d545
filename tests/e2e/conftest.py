"""The suite's one demo lake: three generated scenarios, ingested and built once.

A `dbt build` of every model and data test costs a minute or two on two cores, so the
end-to-end tests that only read the marts share this lake instead of building their own. Tests
that change what they read (incremental runs, bad input, the server) keep lakes of their own.
The lake's dbt commands and queries run in one warm process (tests/e2e/warm.py), which saves a
JVM and Spark start per command.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.gauge_reference import PROJECT_WINDOW_S, literal_job
from tests.e2e.harness import Result, tidemark
from tests.e2e.warm import WarmLake
from tests.events import write_jsonl
from tidemark.lake import Lake

# Scenario and seed; each is one job of its own in the lake (job ids come from both).
SCENARIOS = {"backpressure": 5, "skew": 5, "idle-source": 0}


@dataclass
class DemoLake:
    lake: Lake
    build: Result
    warm: WarmLake
    events: dict[str, Path] = field(default_factory=dict)
    manifests: dict[str, dict] = field(default_factory=dict)


@pytest.fixture(scope="session")
def demo_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoLake]:
    """Each scenario generated and ingested on its own (several commits per bronze table), then
    one `dbt build` of the whole project as a schedule runs it: models and data tests, no unit
    tests (test_pipeline runs those, against this lake, with every var changed)."""
    work = tmp_path_factory.mktemp("demo")
    lake = Lake.from_env(work / "lake")
    with WarmLake(lake) as warm:  # Spark starts while the scenarios are generated and ingested
        demo = DemoLake(lake=lake, build=Result(0, "", ""), warm=warm)
        for name, seed in SCENARIOS.items():
            out = work / name
            tidemark(
                "generate", "--scenario", name, "--out", str(out), "--seed", str(seed), lake=lake
            ).check()
            result = tidemark("ingest", str(out), lake=lake).check()
            assert " 0 quarantined" in result.stdout, result.stdout
            demo.events[name] = out
            demo.manifests[name] = json.loads((out / "manifest.json").read_text())
        # One more job: the random streams test_gauges_reference checks against a literal
        # TimerGauge, with the project's window; a build of their own cost it a minute or two.
        _, _, records = literal_job(PROJECT_WINDOW_S)
        literal = write_jsonl(work / "literal-gauges.jsonl", records)
        tidemark("ingest", str(literal), lake=lake).check()
        demo.build = warm.dbt("build", "--exclude-resource-type", "unit_test").check()
        yield demo
