"""Shared fixtures: one Spark session for the whole run, and a fresh lake per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidemark.lake import Lake


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    """A lake of the test's own: bronze, quarantine and logs under the test's temp dir."""
    return Lake.from_env(tmp_path / "lake")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The suite's one Spark session (UTC, few shuffle partitions, UI off).

    Its warehouse and metastore sit in a lake of the session's own; tests that need bronze views
    of their own lake call ``tidemark.spark.bronze.register_bronze(spark, lake)``.
    """
    os.environ.setdefault("TIDEMARK_SHUFFLE_PARTITIONS", "2")
    os.environ.setdefault("TIDEMARK_DRIVER_MEMORY", "2g")
    from tidemark.spark.session import spark_session

    session = spark_session(Lake.from_env(tmp_path_factory.mktemp("suite") / "lake"))
    yield session
    session.stop()
