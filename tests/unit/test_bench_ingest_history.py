"""bench/ingest_history.py's trend: issue 10 asks for the 50th batch within 10 % of the 1st."""

from __future__ import annotations

import pytest

from bench.ingest_history import trend


def test_slow_batches_do_not_tilt_the_trend() -> None:
    flat = [0.50, 0.52, 0.48, 0.50, 0.51, 0.49] * 8
    flat[-1] = flat[-3] = 0.80  # two slow batches among the last three: the medians say 1.6x
    first, last = trend(flat)
    assert last / first == pytest.approx(1.0, abs=0.03)


def test_a_cost_that_grows_with_the_batches_shows() -> None:
    growing = [0.5 + 0.01 * k for k in range(49)]
    assert trend(growing) == pytest.approx((0.5, 0.98))
    assert trend([0.4]) == (0.4, 0.4)
