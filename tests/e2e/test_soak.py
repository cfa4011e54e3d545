"""The service's soak, short (issue 64): `tidemark run --serve` on a new lake, four BI clients
polling from its first second (some queries failing on purpose), a new batch every cycle and a
SIGKILL of the service during a build in the middle, then the same command started again.

bench/soak.py runs it (`make bench`: 60 cycles, with the timing, log, heap and file targets);
this deep test runs six cycles and holds the correctness targets only: every batch built,
no failed cycle, every BI answer the figures before or after its cycle or a clear expected
error, and the marts after the kill and at the end equal to a full build of the same events.
Deep: about six minutes on two idle cores (`make test-deep`, CI)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench.gauges import generate_backpressure
from bench.soak import SoakOptions, soak
from tests.e2e.harness import environment
from tidemark.lake import Lake

pytestmark = [pytest.mark.e2e, pytest.mark.deep]

CYCLES, KILL_AT = 6, 3


def test_the_service_soaks_through_bi_clients_and_a_kill(tmp_path: Path) -> None:
    events = generate_backpressure(tmp_path / "generated", 1)
    options = SoakOptions(
        cycles=CYCLES, every_s=1.0, clients=4, kill_at=KILL_AT, heap_at=CYCLES,
        maintain_every_s=None, tests_every=1_000_000, think_s=0.5,
        environment=lambda lake: environment(Lake.from_env(lake)),
        progress=lambda text: print(text, file=sys.stderr, flush=True),
    )  # fmt: skip
    result = soak(tmp_path, events, options)
    report = result.report()
    assert result.batches_built == CYCLES, report
    assert result.killed_mid_build, report  # the kill hit the fifth cycle's build
    assert not result.failed_cycles, report
    assert not result.wrong and not result.unexpected, report
    assert result.answers.get("right", 0) > 0, report  # the clients did read the marts
    assert result.answers.get("not built yet", 0) > 0, report  # from before the first build
    assert result.answers.get("bad on purpose", 0) > 0, report
    assert all(result.after_kill_equal.values()) and result.after_kill_equal, report
    assert all(result.final_equal.values()) and result.final_equal, report
    # the log: no Java stack from the first builds of a new lake, the BI clients or the kill
    assert not result.log_kinds.get("Java stacks"), report
    assert result.correct(), report
