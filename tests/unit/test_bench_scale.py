"""bench/scale.py's report: issue 11 asks for ten kept minutes in a row, the last no slower."""

from __future__ import annotations

from bench.scale import Minute, ScaleBench, longest_kept_run


def _minutes(totals: list[float]) -> list[Minute]:
    return [Minute(k + 1, 1000, 10.0, total - 10.0, 0, 0.0) for k, total in enumerate(totals)]


def test_longest_kept_run_is_the_longest_of_consecutive_minutes_under_a_minute() -> None:
    minutes = _minutes([84.0, 59.0, 61.0, 58.0, 57.0, 56.0, 60.0, 50.0])
    assert [m.minute for m in longest_kept_run(minutes)] == [4, 5, 6]
    assert longest_kept_run(_minutes([61.0, 70.0])) == []
    # Of two runs as long, the earlier.
    assert [m.minute for m in longest_kept_run(_minutes([50.0, 61.0, 40.0]))] == [1]


def test_report_names_the_run_and_its_last_against_its_first() -> None:
    bench = ScaleBench("250/500/250", 1.0, 10, 2.0, _minutes([84.0, 61.0, 50.0, 55.0, 40.0]))
    lines = bench.report().splitlines()
    assert lines[-1] == (
        "longest run of kept minutes: 3 (target: ten in a row), minutes 3 to 5; "
        "its last / its first 0.80"
    )
    none_kept = ScaleBench("1", 1.0, 10, 2.0, _minutes([84.0, 61.0])).report()
    assert none_kept.splitlines()[-1] == "longest run of kept minutes: 0 (target: ten in a row)"
