"""`tidemark run`'s loop (tidemark.schedule.run_every): timing, catching up, failures, stopping.
A fake clock stands in for time; the warm cycle itself is tested in tests/e2e/test_cli.py."""

from __future__ import annotations

import threading

import pytest

from tidemark.schedule import CycleResult, _parse_options, build_args, run_every


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.waits.append(round(seconds, 6))
        self.now += seconds


def cycles_taking(fake: FakeTime, durations: list[float], ok: list[bool] | None = None):
    starts: list[float] = []
    oks = iter(ok or [True] * len(durations))
    takes = iter(durations)

    def cycle() -> CycleResult:
        starts.append(fake.now)
        fake.now += next(takes)
        return CycleResult(landed=1, ingest_s=0.0, build_s=0.0, ok=next(oks))

    return cycle, starts


def test_cycles_start_on_the_grid_of_every_seconds() -> None:
    fake = FakeTime()
    cycle, starts = cycles_taking(fake, [2.0, 5.0, 1.0])
    reported = []
    code = run_every(
        10, cycle, threading.Event(), lambda n, r, behind: reported.append((n, behind)),
        max_cycles=3, clock=fake.clock, wait=fake.wait,
    )  # fmt: skip
    assert code == 0
    assert starts == [1000.0, 1010.0, 1020.0]
    assert fake.waits == [8.0, 5.0]  # none after the last cycle
    assert reported == [(1, False), (2, False), (3, False)]


def test_an_overrun_cycle_is_followed_at_once_and_missed_slots_are_not_queued() -> None:
    fake = FakeTime()
    cycle, starts = cycles_taking(fake, [25.0, 1.0, 1.0])
    reported = []
    run_every(
        10, cycle, threading.Event(), lambda n, r, behind: reported.append(behind),
        max_cycles=3, clock=fake.clock, wait=fake.wait,
    )  # fmt: skip
    # The first cycle covered the slots at 1010 and 1020: the next runs at 1030, then 1040.
    assert starts == [1000.0, 1030.0, 1040.0]
    assert reported == [True, False, False]


def test_a_failed_cycle_does_not_end_the_loop_and_the_last_one_sets_the_exit_code() -> None:
    fake = FakeTime()
    cycle, starts = cycles_taking(fake, [1.0, 1.0], ok=[False, True])
    assert run_every(5, cycle, threading.Event(), lambda *_: None, 2, fake.clock, fake.wait) == 0
    assert len(starts) == 2
    fake = FakeTime()
    cycle, _ = cycles_taking(fake, [1.0, 1.0], ok=[True, False])
    assert run_every(5, cycle, threading.Event(), lambda *_: None, 2, fake.clock, fake.wait) == 1


def test_stop_lets_the_running_cycle_finish_and_starts_no_other() -> None:
    fake = FakeTime()
    stop = threading.Event()
    starts = []

    def cycle() -> CycleResult:
        starts.append(fake.now)
        stop.set()  # SIGTERM arrives while the cycle runs
        fake.now += 3
        return CycleResult(landed=0, ingest_s=0.1, build_s=None, ok=True)

    assert run_every(60, cycle, stop, lambda *_: None, clock=fake.clock, wait=fake.wait) == 0
    assert starts == [1000.0]


def test_every_must_be_positive() -> None:
    with pytest.raises(ValueError, match="--every must be a positive number"):
        run_every(0, lambda: CycleResult(0, 0, None, True), threading.Event(), lambda *_: None)


def test_describe_says_what_a_cycle_did() -> None:
    assert CycleResult(200, 0.25, 1.5, True).describe() == (
        "ok: 200 events landed in 0.2 s, build 1.5 s"
    )
    quiet = CycleResult(0, 0.05, None, False, "x: no such file or folder")
    assert quiet.describe() == (
        "FAILED: 0 events landed in 0.1 s, no build (nothing new); x: no such file or folder"
    )


def test_parse_sees_the_options_that_shape_the_project() -> None:
    args = ["--select", "+fct_subtask_seconds", "--vars", "{a: 1}", "--target=thrift", "-x"]
    assert _parse_options(args) == ["--vars", "{a: 1}", "--target=thrift"]


def test_data_tests_run_on_the_first_build_and_every_nth_after_it() -> None:
    with_tests = ["build", "--exclude-resource-type", "unit_test", "--select", "x"]
    without = ["build", "--exclude-resource-type", "unit_test", "--exclude-resource-type", "test"]
    assert [build_args(b, 3, ["--select", "x"]) for b in (1, 4, 7)] == [with_tests] * 3
    assert build_args(2, 3) == without and build_args(3, 3) == without
    assert build_args(5, 1) == with_tests[:3]
    with pytest.raises(ValueError, match="--tests-every must be 1 or more, got 0"):
        build_args(1, 0)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--every", "0"], "--every must be a positive number of seconds, got 0"),
        (["--tests-every", "0"], "--tests-every must be 1 or more, got 0"),
    ],
)
def test_run_refuses_bad_timing_before_starting_spark(
    option: list[str], message: str, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tidemark.cli import main

    assert main(["--lake", str(tmp_path / "lake"), "run", str(tmp_path), *option]) == 1
    assert f"tidemark run: error: {message}" in capsys.readouterr().err
    assert not (tmp_path / "lake" / "metastore").exists()  # Spark never started


def test_run_serve_refuses_an_open_address_or_a_taken_port_before_starting_spark(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tidemark run --serve` has `tidemark serve`'s rules (contract §7), checked before Spark."""
    import socket

    from tidemark.cli import main

    lake = ["--lake", str(tmp_path / "lake")]
    assert main([*lake, "run", str(tmp_path), "--serve", "--host", "0.0.0.0"]) == 1
    assert "refusing to listen on 0.0.0.0 without authentication" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main([*lake, "run", str(tmp_path), "--serve", "--port", str(port)]) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
    assert not (tmp_path / "lake" / "metastore").exists()  # Spark never started
