"""Which Table API submits the live SQL job on each release (tests/live/flink_job.py, decision
0020): PyFlink where it has a Python 3.11 wheel, the Java Table API before."""

from __future__ import annotations

import pytest

from tests.live.flink_job import LiveSetupError, sql_api
from tests.live.versions_table import MATRIX


def test_pyflink_from_1_19_and_the_java_table_api_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIDEMARK_LIVE_SQL_API", raising=False)
    apis = {version: sql_api(version) for version in MATRIX}
    assert apis == {
        "1.15.4": "java",
        "1.16.3": "java",
        "1.17.2": "java",
        "1.18.1": "java",
        "1.19.3": "pyflink",
        "1.20.5": "pyflink",
        "2.0.2": "pyflink",
        "2.1.3": "pyflink",
        "2.2.1": "pyflink",
        "2.3.0": "pyflink",
    }


@pytest.mark.parametrize("chosen", ["java", "pyflink"])
def test_the_environment_sets_one_api_for_every_release(
    monkeypatch: pytest.MonkeyPatch, chosen: str
) -> None:
    monkeypatch.setenv("TIDEMARK_LIVE_SQL_API", chosen)
    assert {sql_api(version) for version in MATRIX} == {chosen}


def test_an_unknown_api_is_a_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDEMARK_LIVE_SQL_API", "scala")
    with pytest.raises(LiveSetupError, match="java or pyflink, not 'scala'"):
        sql_api("2.3.0")
