"""bench/gauges.py compares the medians of the floor and the full refresh, run taking turns, each
timed without the JVM's start (the full refresh by dbt's own clock), in new processes and on one
warm session (issue 43)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.gauges import TURNS, GaugeBench, dbt_elapsed


def _bench(**changed: object) -> GaugeBench:
    figures: dict[str, object] = dict(
        timer_events=5_000_000,
        watermark_events=800_000,
        tail_lines=58_000,
        startup_s=20.0,
        floor_runs=[10.0, 14.0, 12.0],
        full_refresh_runs=[33.0, 30.0, 40.0],
        warm_floor_runs=[8.0, 9.0, 10.0],
        warm_full_refresh_runs=[22.0, 27.0, 30.0],
        small_lines=200,
        small_incremental_s=20.0,
        incremental_s=24.0,
        analysis_s=8.0,
    )
    return GaugeBench(**{**figures, **changed})  # type: ignore[arg-type]


def test_the_medians_compare_and_each_full_refresh_meets_its_neighbouring_floor() -> None:
    bench = _bench()
    assert (bench.floor_s, bench.full_refresh_s) == (12.0, 33.0)
    assert bench.full_vs_floor == 2.75
    assert [round(ratio, 2) for ratio in bench.full_vs_floor_runs] == [3.3, 2.14, 3.33]
    report = bench.report()
    assert "floor: read + write bronze            12.0 s  (median of 10.0, 14.0, 12.0 s)" in report
    assert "= 2.75x floor (target <= 3x)" in report
    assert "median of 33.0, 30.0, 40.0 s, each against the floor beside it 3.30x, 2.14x, 3.33x" in (
        report
    )
    assert "in none of the figures below" in report
    assert "warm session: full refresh            27.0 s  = 3.00x the warm floor" in report
    assert "proposed target <= 3x, decision 0007); median of 22.0, 27.0, 30.0 s" in report


def test_the_turns_alternate_three_floors_and_three_full_refreshes() -> None:
    assert TURNS.count("floor") == TURNS.count("full") == 3
    assert TURNS[:2] == ("floor", "full") and TURNS[-2:] == ("floor", "full")


def test_a_dbt_run_is_timed_by_its_own_clock(tmp_path: Path) -> None:
    (tmp_path / "run_results.json").write_text(json.dumps({"elapsed_time": 41.25, "results": []}))
    assert dbt_elapsed(tmp_path) == 41.25
