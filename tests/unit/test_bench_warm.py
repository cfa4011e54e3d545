"""bench/warm.py's report splits the +1 % cycle into what every cycle pays and what grows with
the new events, and prints dbt's floor run incremental and from scratch (issue 43)."""

from __future__ import annotations

from bench.warm import WarmBench


def _bench(**changed: float) -> WarmBench:
    figures = dict(
        events=1_000_000,
        first_cycle_s=60.0,
        full_refresh_s=40.0,
        small_cycle_s=30.0,
        small_build_s=25.0,
        tail_lines=9_000,
        tail_cycle_s=34.0,
        models_only_cycle_s=20.0,
        models_only_queries=190,
        models=38,
        floor_s=5.0,
        floor_full_refresh_s=6.25,
        cold_small_s=90.0,
    )
    return WarmBench(**{**figures, **changed})


def test_the_report_splits_the_tail_cycle_and_prints_the_floor_both_ways() -> None:
    report = _bench().report()
    assert "34.0 s  = 85.0% of the warm full refresh" in report
    assert "of which the new events' own work" in report
    assert "4.0 s  = 10.0% (the +1 % cycle beyond the +200-line one" in report
    assert "proposed target <= 25 %, decision 0007" in report
    assert "the models-only cycle is 4.00x (target <= 1.5x; proposed <= 4x" in report
    assert "190 Spark queries, proposed target <= 190" in report
    assert "dbt's floor, full refresh" in report
    assert "6.2 s  (its incremental run 80.0% of it" in report


def test_a_tail_cycle_faster_than_the_small_one_has_no_work_of_its_own() -> None:
    assert _bench(tail_cycle_s=28.0).tail_work_s == 0.0
