"""bench/valve.py's plain loops emit the same (the ratios it prints rest on it)."""

from __future__ import annotations

from bench.valve import feed_loop, make_events, plain_loop


def test_task_feed_loop_emits_what_the_valve_loop_emits() -> None:
    rows = make_events(4_000, tasks=3)
    _, valve_emissions = plain_loop(rows)
    # Small chunks: a task's events cross several, as in the UDTF.
    _, feed_rows = feed_loop(rows, chunk_seqs=256)
    assert valve_emissions > 100
    assert feed_rows == valve_emissions
