"""bench/health.py's synthetic lake is laid out as Spark and delta-rs lay out a real one, so the
bench times the paths `tidemark status` and `tidemark run` take."""

from __future__ import annotations

from pathlib import Path

from bench.health import JOB, START_MS, one_more_commit, synthetic_history
from tidemark.health.landed import landed_newest
from tidemark.health.marts import marts_newest
from tidemark.health.model import MARTS
from tidemark.lake import Lake


def test_the_synthetic_history_reads_as_a_real_lake(tmp_path: Path) -> None:
    assert synthetic_history(tmp_path / "lake", 2) == {"mart files": 8 * 2 * 6, "bronze commits": 2}
    lake = Lake.from_env(tmp_path / "lake")
    last = START_MS + 3_600_000 + 50 * 60_000 + 599_000  # the second hour's last slice
    landed = landed_newest(lake)
    assert landed == {JOB: START_MS + 2 * 3_600_000 - 1}
    newest, notes = marts_newest(lake, landed, [JOB])
    assert newest == {mart: {JOB: last} for mart in MARTS} and notes == []
    one_more_commit(tmp_path / "lake", 5)
    assert landed_newest(lake) == {JOB: START_MS + 5 * 3_600_000}
