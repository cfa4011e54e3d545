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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.gauge_reference import PROJECT_WINDOW_S, literal_job
from tests.e2e.harness import Result, Server, serving, tidemark
from tests.e2e.warm import WarmLake
from tests.events import write_jsonl
from tidemark.lake import Lake

# Scenario and seed; each is one job of its own in the lake (job ids come from both).
SCENARIOS = {"backpressure": 5, "skew": 5, "idle-source": 0}


# Every var of dbt_project.yml set away from its default. A unit test that leaves a var it depends
# on to the project fails under these (issue 10: `dbt build --vars '{flink_gauge_window_s: 5}'`,
# as the README documents it, failed on unit tests that assumed the 60 s window). The demo lake's
# tests that need other vars take these where they can: each set of vars costs a parse of the
# project of its own, about 10 s (tests/e2e/warm.py).
CHANGED_VARS = {
    "flink_gauge_window_s": 5,
    "flink_release": "1.15",
    "flink_release_by_job": {"j": "1.17"},
    "gauge_replay_lookback_s": 60,
    "valve_semantics": "flink-40475",
    "watermark_stall_s": 3,
    "incident_grace_s": 0,
    "bottleneck_busy_ratio": 0.9,
    "bottleneck_max_depth": 1,
    "legacy_backpressure_refresh_ms": 30000,
    "legacy_backpressure_num_samples": 20,
    "legacy_backpressure_delay_ms": 100,
    "data_tests_recent_hours": 1,
    "replaced_files_keep_s": 60,
}


@dataclass
class DemoLake:
    lake: Lake
    build: Result
    _warm: WarmLake | None
    events: dict[str, Path] = field(default_factory=dict)
    manifests: dict[str, dict] = field(default_factory=dict)

    @property
    def warm(self) -> WarmLake:
        """The lake's warm worker, started again if ``released`` stopped it."""
        if self._warm is None:
            self._warm = WarmLake(self.lake)
        return self._warm

    @contextmanager
    def released(self) -> Iterator[Lake]:
        """The lake without its warm worker, for another process that opens its metastore
        (Derby admits one process): `tidemark serve` in test_metric_views. A later ``warm``
        starts a new worker (a Spark start); that file runs last in its group, so none does."""
        self.close()
        yield self.lake

    def close(self) -> None:
        if self._warm is not None:
            self._warm.close()
            self._warm = None


@pytest.fixture(scope="session")
def demo_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoLake]:
    """Each scenario generated and ingested on its own (several commits per bronze table), then
    one `dbt build` of the whole project as a schedule runs it: models and data tests, no unit
    tests (test_dbt_tests runs those on a lake of their own, with every var changed)."""
    work = tmp_path_factory.mktemp("demo")
    lake = Lake.from_env(work / "lake")
    # Spark starts in the warm worker while the scenarios are generated and ingested.
    demo = DemoLake(lake=lake, build=Result(0, "", ""), _warm=WarmLake(lake))
    try:
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
        demo.build = demo.warm.dbt("build", "--exclude-resource-type", "unit_test").check()
        yield demo
    finally:
        demo.close()


@pytest.fixture(scope="session")
def demo_server(demo_lake: DemoLake) -> Iterator[Server]:
    """One `tidemark serve` over the demo lake, for the files that run last in the demo group
    (test_metric_views, then test_serve, which stops it). It takes the lake's metastore from the
    warm worker (Derby admits one process)."""
    with demo_lake.released() as lake, serving(lake) as server:
        yield server
