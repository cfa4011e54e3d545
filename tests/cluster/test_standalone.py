"""tidemark on a real Spark cluster: a standalone master and two workers on this machine.

The same generated scenario is ingested and built twice, in two lakes: once in local mode and
once with ``TIDEMARK_SPARK_MASTER`` pointing at the cluster (tests/cluster/standalone.py), where
every Spark task, the valve UDTF's Python included, runs in the workers' executors. Every mart
must come out identical to the local run's.

Nothing reaches the executors by luck: their Python is :func:`bare_python` (the test venv's
libraries without its editable install of tidemark, so ``import udfs`` fails there unless the
session ships the package), the workers run in folders of their own with no ``PYTHONPATH``, and
a probe asks the executors where they imported ``udfs`` from: the zip the session factory adds
(``tidemark.spark.session.ship_udfs``). Bronze is read from the executors through the file list of
its Delta snapshot, as locally; the lake is shared by being on the same machine's disk.

Measured on the shared 2-core machine (2026-11-25, under a load of 9 to 18 from other runs):
7 min 5 s in all: the cluster's start 7 s, ingest and build 159 s in local mode and 212 s on
the cluster, the rest (generate, probe, comparison) about 35 s. Too long for `make test`'s 10
minutes next to the rest, so it is a `deep` test: `make test-deep` and CI run it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.standalone import HOST, StandaloneCluster, bare_python
from tests.e2e.harness import dbt, run, tidemark, warehouse_tables
from tidemark.lake import Lake

pytestmark = [pytest.mark.e2e, pytest.mark.deep]

# The smallest scenario with both kinds of marts at work: timer gauges on every vertex, and a
# source that goes idle and comes back (the valve's IDLE/ACTIVE rules, S1 and S2).
SCENARIO, SEED = "idle-source", 3
# Small, because the machine is shared: 1 GB per executor, one core each, both workers used.
SPARK_DEFAULTS = """\
spark.executor.memory 1g
spark.executor.cores 1
spark.cores.max 2
"""
# Columns that hold the time of the ingest, so differ between the two lakes.
INGEST_TIME = {"dim_vertices": {"updated_at"}}
# Where each executor imported `udfs` from, in which folder, with which Python, and whether it
# could import `tidemark` (it must not: only the package the session ships is there).
PROBE = """
import os, sys
from tidemark.spark.session import spark_session

def where(_):
    import importlib.util, udfs
    has_tidemark = importlib.util.find_spec("tidemark") is not None
    yield udfs.__file__, os.getcwd(), sys.executable, has_tidemark

spark = spark_session()
for row in sorted(set(spark.sparkContext.parallelize(range(4), 4).mapPartitions(where).collect())):
    print("\\t".join(map(str, row)))
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=2) as started:
        yield started


def test_marts_built_on_a_standalone_cluster_equal_the_local_run(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    python = bare_python(tmp_path / "executor-python")
    imports = subprocess.run(
        [str(python), "-c", "import pyarrow, pandas, pyspark; import udfs"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "No module named 'udfs'" in imports.stderr, "the executors' Python finds udfs alone"
    conf = tmp_path / "spark-conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(SPARK_DEFAULTS)
    on_cluster = {
        "TIDEMARK_SPARK_MASTER": cluster.url,
        "PYSPARK_PYTHON": str(python),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_CONF_DIR": str(conf),
    }

    events = tmp_path / "events"
    local = Lake.from_env(tmp_path / "local" / "lake")
    remote = Lake.from_env(tmp_path / "remote" / "lake")
    tidemark(
        "generate", "--scenario", SCENARIO, "--seed", str(SEED), "--out", str(events), lake=local
    ).check()
    build = ("build", "--exclude-resource-type", "unit_test")
    for where, lake, extra in (("local", local, {}), ("cluster", remote, on_cluster)):
        started = time.monotonic()
        tidemark("ingest", str(events), lake=lake, **extra).check()
        result = dbt(*build, lake=lake, **extra).check()
        assert "ERROR=0" in result.stdout and " PASS=" in result.stdout, result.stdout
        print(f"{where}: ingest and dbt build in {time.monotonic() - started:.0f} s")

    # The build ran on the cluster: one application, its executors on both workers.
    apps = cluster.state()["completedapps"]
    assert [app["name"] for app in apps] == ["tidemark"], apps
    assert all(any(work.glob("app-*/*/stderr")) for work in cluster.worker_dirs())

    probe = run([sys.executable, "-c", PROBE], remote, **on_cluster).check()
    rows = [line.split("\t") for line in probe.stdout.splitlines()]
    assert {Path(cwd).parents[2].name for _, cwd, _, _ in rows} == {"worker-0", "worker-1"}
    for module, cwd, executable, has_tidemark in rows:
        assert os.path.normpath(Path(cwd, module)) == str(
            Path(cwd, "udfs.zip", "udfs", "__init__.py")
        )
        assert executable == str(python)
        assert has_tidemark == "False"

    want, got = (warehouse_tables(lake, ignore=INGEST_TIME) for lake in (local, remote))
    assert {"fct_subtask_seconds", "fct_task_watermarks", "fct_valve_emissions"} <= set(want)
    assert len(want["fct_valve_emissions"]) > 100, "the valve emitted almost nothing"
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], f"tidemark.{name} differs from the local run"
