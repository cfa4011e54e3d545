"""`tidemark run`'s loop (tidemark.schedule.run_every): timing, catching up, failures, stopping;
when a cycle builds (tidemark.schedule.Builds): what is new, a process's first cycle, the retry
of a failed build and its back-off. A fake clock and a fake build stand in for time and dbt; the
warm cycle itself is tested in tests/e2e/test_cli.py."""

from __future__ import annotations

import threading

import pytest

from tidemark.cycles import KEEPS_FAILING, CycleResult
from tidemark.schedule import (
    Builds,
    _parse_options,
    build_args,
    retry_cap,
    run_every,
)


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


# -- when a cycle builds: Builds -----------------------------------------------------------------


class FakeBuild:
    """dbt build: each call takes the next outcome (None: it succeeded, else what failed)."""

    def __init__(self, *outcomes: str | None) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    def __call__(self) -> str | None:
        self.calls += 1
        return self.outcomes.pop(0) if self.outcomes else "fct_x: still broken"


def _cycles(builds: Builds, build: FakeBuild, landed: list[int]) -> list[CycleResult]:
    return [builds.cycle(n, 0.01, [], build) for n in landed]


def test_a_failed_build_is_retried_on_the_next_cycle_though_nothing_new_landed() -> None:
    """Issue 64: a failed build then a cycle with nothing new said "ok: ... no build (nothing
    new)", and what had landed never reached the marts."""
    build = FakeBuild(None, "fct_x: division by zero", None)
    first, failed, retried, quiet = _cycles(Builds(), build, [20, 5, 0, 0])
    assert first.ok and first.build_s is not None
    assert not failed.ok and failed.detail == "dbt build failed: fct_x: division by zero"
    assert (failed.failed_builds, failed.retry_in) == (1, 1)
    assert retried.build_s is not None and retried.ok
    assert retried.detail == "retrying after a failed build (attempt 2)"
    assert retried.failed_builds == 0
    assert quiet.build_s is None and quiet.ok and quiet.describe().endswith("(nothing new)")
    assert build.calls == 3


def test_a_new_process_builds_on_its_first_cycle_though_nothing_new_landed() -> None:
    """A lake whose last build failed before a restart: the new process builds at once."""
    build = FakeBuild(None)
    first, second = _cycles(Builds(), build, [0, 0])
    assert first.build_s is not None and first.ok and first.detail == ""
    assert second.build_s is None and build.calls == 1
    # and while its builds have never succeeded, the failed ones are retried with the back-off
    build = FakeBuild("fct_x: broken", "fct_x: broken", None)
    results = _cycles(Builds(), build, [0, 0, 0, 0])
    assert [r.build_s is not None for r in results] == [True, True, False, True]


def test_builds_that_keep_failing_are_retried_after_2_4_8_cycles_up_to_the_cap() -> None:
    build = FakeBuild()  # every build fails
    results = _cycles(Builds(cap=5), build, [0] * 24)
    built = [number for number, r in enumerate(results, 1) if r.build_s is not None]
    assert built == [1, 2, 4, 8, 13, 18, 23]  # gaps 1, 2, 4, then the cap: 5
    assert [r.failed_builds for r in results[:4]] == [1, 2, 2, 3]
    assert not any(r.ok for r in results)  # waiting to retry: the marts miss what landed
    waiting = results[4:7]  # after the third failed build (cycle 4), the retry is on cycle 8
    assert [r.retry_in for r in waiting] == [3, 2, 1]
    assert waiting[0].detail == (
        "retrying after a failed build in 3 cycles; 3 builds in a row failed, the last: "
        "dbt build failed: fct_x: still broken"
    )
    assert waiting[2].detail.startswith("retrying after a failed build on the next cycle; ")
    assert waiting[0].describe().startswith("FAILED: 0 events landed in 0.0 s, no build; retrying")
    assert results[7].detail == (
        "retrying after a failed build (attempt 4); dbt build failed: fct_x: still broken; "
        "4 builds in a row failed"
    )
    assert results[7].retry_in == 5


def test_new_events_during_the_back_off_are_built_at_once() -> None:
    build = FakeBuild("a: broken", "a: broken", "a: broken", None)
    builds = Builds()
    _cycles(builds, build, [1, 0, 0])  # builds on cycles 1 and 2; cycle 3 waits (gap 2)
    assert build.calls == 2
    (landed,) = _cycles(builds, build, [7])
    assert landed.build_s is not None and landed.detail.startswith("retrying after a failed")
    (waits,) = _cycles(builds, build, [0])  # 3 failed now: the retry waits 4 cycles
    assert waits.build_s is None and waits.retry_in == 3
    (fixed,) = _cycles(builds, build, [2])
    assert fixed.ok and fixed.detail == "retrying after a failed build (attempt 4)"
    assert builds.failed == 0 and builds.retry_gap() == 0


def test_a_build_that_keeps_failing_says_so_on_each_failed_build() -> None:
    build = FakeBuild()
    results = _cycles(Builds(cap=10), build, [0] * 8)  # builds on cycles 1, 2, 4 and 8
    lines = [r.keeps_failing() for r in results]
    assert lines[: KEEPS_FAILING + 1] == [None, None, None, (
        "tidemark run: 3 builds in a row failed; the next retry is in 4 cycles or as soon as new "
        "events land; the errors are in tidemark status and tidemark.run_log"
    )]  # fmt: skip
    assert lines[4:7] == [None] * 3  # the cycles that wait say so in their own line
    assert lines[7] is not None and lines[7].startswith(
        "tidemark run: 4 builds in a row failed; the next retry is in 8 cycles"
    )


def test_problems_of_the_ingest_fail_the_cycle_and_come_first() -> None:
    builds = Builds()
    built = builds.cycle(3, 0.1, ["feed: no such file or folder"], FakeBuild(None))
    assert not built.ok and built.build_s is not None
    assert built.detail == "feed: no such file or folder"
    quiet = builds.cycle(0, 0.1, ["feed: no such file or folder"], FakeBuild())
    assert not quiet.ok and quiet.build_s is None and builds.failed == 0


def test_the_retry_cap_is_ten_minutes_of_cycles() -> None:
    assert [retry_cap(s) for s in (60, 2, 45, 600, 3600)] == [10, 300, 14, 1, 1]
    with pytest.raises(ValueError, match="the retry cap must be 1 cycle or more, got 0"):
        Builds(cap=0)


def test_the_loop_exits_1_when_its_last_cycle_waits_to_retry_a_failed_build() -> None:
    fake = FakeTime()
    builds, build = Builds(), FakeBuild("a: broken", "a: broken")
    printed: list[str] = []

    def cycle() -> CycleResult:
        fake.now += 1
        return builds.cycle(0, 0.0, [], build)

    def report(number: int, result: CycleResult, behind: bool) -> None:
        printed.append(result.describe())

    assert run_every(5, cycle, threading.Event(), report, 3, fake.clock, fake.wait) == 1
    assert build.calls == 2 and "no build; retrying after a failed build on the next" in printed[2]


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


def test_the_runs_dbt_commands_print_errors_only_and_the_users_dbt_options_win() -> None:
    """Issue 64: dbt's 150 lines a build drowned the cycle's line; `--no-quiet` in `--dbt` (the
    build's arguments come after the command) turns it back on: click takes the last."""
    from tidemark.schedule import build_args, quiet

    assert quiet(["run-operation", "tidemark_run_log_insert"]) == [
        "run-operation", "--quiet", "tidemark_run_log_insert",
    ]  # fmt: skip
    loud = quiet(build_args(1, 1, ["--no-quiet"]))
    assert loud[:2] == ["build", "--quiet"] and loud[-1] == "--no-quiet"


def test_the_service_maintains_between_cycles_at_most_every_n_seconds_and_survives_a_failure(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """tidemark.service composes the run: maintenance after a cycle when `--maintain-every` has
    passed since the last, a failed one said in a line while the cycles go on."""
    import tidemark.maintain
    from tidemark.lake import Lake
    from tidemark.service import RunOptions, maintained

    now = [0.0]
    calls: list[float] = []

    class Done:
        def describe(self) -> str:
            return "nothing to maintain"

    def fake_maintain(lake, retention, sql, keep_ms):
        calls.append(now[0])
        if len(calls) == 2:
            raise RuntimeError("disk full\nand a second line")
        return Done()

    monkeypatch.setattr(tidemark.maintain, "maintain", fake_maintain)
    options = RunOptions(paths=[tmp_path], maintain_every_s=100.0)
    cycle = maintained(
        lambda: CycleResult(0, 0.0, None, True), Lake.from_env(tmp_path / "lake"), options,
        lambda statement: [], clock=lambda: now[0],
    )  # fmt: skip
    for at in (0.0, 50.0, 100.0, 150.0, 200.0):
        now[0] = at
        assert cycle().ok
    assert calls == [0.0, 100.0, 200.0]
    assert capsys.readouterr().out.count("tidemark run: maintained in") == 2


def test_a_spell_of_cycles_with_nothing_new_says_its_first_then_one_line_every_ten_minutes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 64's log target: a cycle that landed and built nothing is one line when a quiet
    spell begins, then one every QUIET_LINE_S; a build, a failure or new events end the spell."""
    from tidemark.service import QUIET_LINE_S, reporter

    now = [0.0]
    report = reporter(20.0, clock=lambda: now[0])
    built, quiet = CycleResult(500, 0.1, 30.0, True), CycleResult(0, 0.1, None, True)
    waiting = CycleResult(0, 0.1, None, False, failed_builds=1, retry_in=2)
    cycles = [built, quiet, quiet, quiet, quiet, built, quiet, waiting, waiting, quiet]
    for number, (at, result) in enumerate(
        zip(
            [0, 20, 40, QUIET_LINE_S + 20, QUIET_LINE_S + 40, 700, 720, 740, 760, 780],
            cycles,
            strict=True,
        ),
        1,
    ):
        now[0] = at
        report(number, result, False)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[1].strip() for line in lines] == [
        "cycle 1", "cycle 2", "cycle 4", "cycle 6", "cycle 7", "cycle 8", "cycle 9", "cycle 10",
    ]  # fmt: skip
    assert lines[2].endswith("no build (nothing new); nothing new since cycle 2")
    assert "FAILED" in lines[5] and "FAILED" in lines[6]  # a failure is never quiet


def test_a_port_whose_killed_server_left_connections_in_time_wait_is_not_refused() -> None:
    """Issue 64: a restarted `tidemark run --serve` refused its port for a minute after a kill:
    the dead server's accepted connections sat in TIME_WAIT, which the Thrift server binds over
    (reuse on) and the start's own check did not. A listening port is still refused."""
    import socket

    from tidemark.serve import ServeError, ServeOptions, check_options

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    accepted.close()  # the server's side closes first: its end waits in TIME_WAIT
    with pytest.raises(ServeError, match="cannot listen"):
        check_options(ServeOptions(port=port))  # still listening
    server.close()
    client.close()
    check_options(ServeOptions(port=port))  # only TIME_WAIT left: the server could bind
