"""bench/soak.py's pure parts (issue 64): the service's cycle lines, when a batch is built, how
each BI answer is judged, the JVM's heap from jcmd, and the report's verdicts."""

from __future__ import annotations

import math

import pytest

from bench.serve import MARTS, figures_query
from bench.soak import (
    DOWN,
    MISSING,
    NOT_BUILT,
    ON_PURPOSE,
    RIGHT,
    UNEXPECTED,
    WRONG,
    Answer,
    BatchWait,
    SoakResult,
    comparable_query,
    error_kind,
    error_text,
    heap_used_kib,
    judge,
    line_kind,
    line_shape,
    parse_cycle,
    slope,
)


def test_cycle_lines_parse_with_or_without_a_build_and_with_details_after_them() -> None:
    built = parse_cycle("tidemark run: cycle 7: ok: 781 events landed in 0.4 s, build 18.2 s\n")
    assert built is not None
    assert (built.number, built.ok, built.landed, built.ingest_s, built.build_s) == (
        7, True, 781, 0.4, 18.2,
    )  # fmt: skip
    assert not built.nothing_new
    idle = parse_cycle(
        "tidemark run: cycle 8: ok: 0 events landed in 0.1 s, no build (nothing new)"
    )
    assert idle is not None and idle.build_s is None and idle.nothing_new
    later = parse_cycle(
        "tidemark run: cycle 9: FAILED: 5 events landed in 0.2 s, build 3.0 s; dbt build failed: "
        "x; 41 models, 3 tests (took longer than --every 1 s)"
    )
    assert later is not None and not later.ok and later.build_s == 3.0
    assert later.text.endswith("(took longer than --every 1 s)")
    waiting = parse_cycle(
        "tidemark run: cycle 10: FAILED: 0 events landed in 0.1 s, no build; retrying after a "
        "failed build in 2 cycles"
    )
    assert waiting is not None and waiting.build_s is None and not waiting.nothing_new
    assert parse_cycle("tidemark run: listening on 127.0.0.1:10000 (lake /x)") is None
    assert parse_cycle("12:00:01  1 of 41 OK created sql table model tidemark.x") is None


def _cycle(landed: int, build_s: float | None, ok: bool = True, nothing_new: bool = False):
    build = f"build {build_s} s" if build_s is not None else "no build"
    line = f"tidemark run: cycle 1: {'ok' if ok else 'FAILED'}: {landed} events landed in 0.1 s, "
    line += build + (" (nothing new)" if nothing_new else "")
    parsed = parse_cycle(line)
    assert parsed is not None
    return parsed


def test_a_batch_is_built_by_the_cycle_that_lands_all_of_it_and_builds() -> None:
    wait = BatchWait(lines=100)
    assert not wait.done(_cycle(0, None, nothing_new=True))  # began before the batch came
    assert not wait.done(_cycle(60, 20.0, ok=False))  # failed: its retry comes
    assert not wait.done(_cycle(60, 20.0))  # part of it
    assert wait.done(_cycle(40, 20.0))
    duplicates = BatchWait(lines=100)  # some lines were duplicates: fewer events landed
    assert not duplicates.done(_cycle(90, 20.0))
    assert duplicates.done(_cycle(0, None, nothing_new=True))
    restarted = BatchWait(lines=100, after_restart=True)  # the killed process landed it
    assert restarted.done(_cycle(0, 25.0))


def test_errors_read_as_hiveserver2_message_or_the_exceptions_first_line() -> None:
    class Status:
        errorMessage = "Error running query: [TABLE_OR_VIEW_NOT_FOUND] The table `x` ...\nstack"

    class Response:
        status = Status()

    text = error_text(Exception(Response()))
    assert text == "Error running query: [TABLE_OR_VIEW_NOT_FOUND] The table `x` ..."
    assert error_kind(text) == "TABLE_OR_VIEW_NOT_FOUND"
    assert error_kind("[PARSE_SYNTAX_ERROR] Syntax error at or near 'selec'.") == (
        "PARSE_SYNTAX_ERROR"
    )
    assert error_kind("[INCOMPATIBLE_DATA_FOR_TABLE.CANNOT_SAFELY_CAST] x") == (
        "INCOMPATIBLE_DATA_FOR_TABLE"
    )
    refused = error_text(ConnectionRefusedError(111, "Connection refused"))
    assert refused.startswith("ConnectionRefusedError") and error_kind(refused) == "connection"
    assert error_kind("TTransportException: TSocket read 0 bytes") == "connection"
    assert error_kind("java.lang.NullPointerException") == "unclear"


BEFORE, AFTER = (10, 5), (12, 6)
REFERENCES = [
    (-math.inf, dict.fromkeys(MARTS, MISSING)),
    (100.0, {**dict.fromkeys(MARTS, (0, None))}),
    (200.0, {**dict.fromkeys(MARTS, BEFORE)}),
    (300.0, {**dict.fromkeys(MARTS, AFTER)}),
]
DOWN_SPANS = [(0.0, 50.0), (250.0, 280.0)]
MART = MARTS[0]


def _judge(kind: str, started: float, answer=None, error=None, mart=MART) -> str:
    return judge(Answer(0, kind, mart, started, started + 1, answer, error), REFERENCES, DOWN_SPANS)


def test_answers_are_the_figures_before_or_after_their_cycle() -> None:
    assert _judge("figures", 250.0, answer=BEFORE) == RIGHT
    assert _judge("figures", 250.0, answer=AFTER) == RIGHT
    assert _judge("figures", 350.0, answer=AFTER) == RIGHT  # after the last reference
    assert _judge("figures", 350.0, answer=BEFORE) == WRONG
    assert _judge("figures", 150.0, answer=AFTER) == WRONG  # two cycles ahead
    assert _judge("figures", 150.0, answer=(0, None)) == RIGHT


def test_not_found_is_right_only_while_the_mart_was_not_built() -> None:
    not_found = "Error running query: [TABLE_OR_VIEW_NOT_FOUND] The table or view ..."
    assert _judge("figures", 60.0, error=not_found) == NOT_BUILT  # the first build's cycle
    assert _judge("figures", 150.0, error=not_found) == WRONG  # built (empty) by then
    assert _judge("figures", 250.0, error=not_found) == WRONG  # a built mart went missing


def test_bad_queries_must_fail_with_their_own_clear_error() -> None:
    assert _judge("bad table", 250.0, error="[TABLE_OR_VIEW_NOT_FOUND] x", mart=None) == ON_PURPOSE
    assert _judge("bad syntax", 250.0, error="[PARSE_SYNTAX_ERROR] x", mart=None) == ON_PURPOSE
    assert _judge("bad syntax", 250.0, error="[INTERNAL_ERROR] x", mart=None) == UNEXPECTED
    assert _judge("bad table", 250.0, answer=(1,), mart=None) == WRONG


def test_connections_may_fail_only_while_the_service_is_down() -> None:
    refused = "ConnectionRefusedError: [Errno 111] Connection refused"
    assert _judge("connect", 10.0, error=refused, mart=None) == DOWN
    assert _judge("figures", 249.5, error="TTransportException: TSocket read 0 bytes") == DOWN
    assert _judge("connect", 150.0, error=refused, mart=None) == UNEXPECTED
    assert _judge("figures", 150.0, error="[INTERNAL_ERROR] boom") == UNEXPECTED


def test_heap_is_the_generations_in_use_not_metaspace() -> None:
    parallel = """12345:
 PSYoungGen      total 611840K, used 31457K [0x00000007d5580000, 0x0000000800000000)
  eden space 524800K, 5% used [0x00000007d5580000,0x00000007d7440000,0x00000007f5600000)
 ParOldGen       total 1398272K, used 123456K [0x0000000780000000, 0x00000007d5580000)
 Metaspace       used 150000K, committed 151000K, reserved 1179648K
  class space    used 20000K, committed 21000K, reserved 1048576K
"""
    assert heap_used_kib(parallel) == 31457 + 123456
    g1 = " garbage-first heap   total 262144K, used 81920K [0x1, 0x2)\n Metaspace  used 9K, ..."
    assert heap_used_kib(g1) == 81920
    assert heap_used_kib("12345:\nnothing") == 0


def test_line_shapes_blur_numbers_and_paths() -> None:
    assert line_shape("tidemark run: cycle 12: ok: 781 events landed in 0.4 s, build 18.2 s") == (
        "tidemark run: cycle #: ok: # events landed in # s, build # s"
    )
    assert line_shape("WARN reading /tmp/a/b/c.parquet: 3 rows") == "WARN reading /...: # rows"


def test_line_kinds_tell_cycles_failed_bi_queries_and_java_stacks_apart() -> None:
    assert line_kind("tidemark run: cycle 3: ok: 5 events landed in 0.1 s, build 2.0 s") == (
        "cycles"
    )
    assert line_kind("05:01:02 WARN bi: BI query failed (PARSE_SYNTAX_ERROR): selec") == (
        "failed BI queries"
    )
    assert line_kind("\tat org.apache.spark.sql.Dataset.ofRows(Dataset.scala:99)") == "Java stacks"
    assert line_kind("org.apache.spark.sql.AnalysisException: [X] y") == "Java stacks"
    assert line_kind("tidemark run: listening on 127.0.0.1:1 (lake /l)") == "start and stop"
    assert line_kind("12:00:01  1 of 41 OK created sql table model tidemark.x") == "other"


def test_slope_is_zero_for_a_flat_count_and_the_step_of_a_growing_one() -> None:
    assert slope([5, 5, 5, 5]) == 0
    assert slope([1, 3, 5, 7]) == pytest.approx(2.0)
    assert slope([4]) == 0


def _result(**changed) -> SoakResult:
    equal = dict.fromkeys(MARTS, True)
    figures = dict(
        cycles=60, clients=4, every_s=20.0, kill_at=30, batches_built=60, service_cycles=62,
        failed_cycles=[], answers={RIGHT: 900, NOT_BUILT: 40, ON_PURPOSE: 100, DOWN: 60},
        answers_by_kind={"figures": 940, "bad table": 50, "bad syntax": 50, "connect": 60},
        wrong=[], unexpected=[], expected_errors={}, cold_start_s=100.0, cold_listening_s=40.0,
        restart_s=110.0, restart_listening_s=45.0, restart_attempts=1, killed_in_build_s=9.0,
        killed_mid_build=True, after_kill_equal=equal, final_equal=equal, log_lines=250,
        log_shapes=[("tidemark run: cycle #: ok", 62)], log_kinds={"cycles": 62},
        heap_kib={"after cycle 10": 400_000, "at the end": 440_000},
        files=[{"bronze": 100 + 4 * i, "warehouse": 900} for i in range(60)],
        cycle_s=[20.0] * 60,
    )  # fmt: skip
    return SoakResult(**{**figures, **changed})


def test_a_clean_soak_meets_the_correctness_targets_and_reports_each_other_one() -> None:
    result = _result()
    assert result.correct()
    report = result.report()
    assert "0 failed of 62  [met]" in report
    assert "900 of 900 answers with rows" in report
    assert (
        "restart to serving <= 1.2x a cold start: 45.0 against 40.0 (1.12x, listening); "
        "110.0 against 100.0 (1.10x, first ok cycle)  [met]"
    ) in report
    assert "log <= 5 lines per cycle on average: 4.2 (250 lines over 60 cycles; 4.0 per" in report
    assert "heap after the soak <= 1.2x after cycle 10: 429.7 against 390.6 (1.10x" in report
    # bronze grows four files a cycle (a file and its log entry per table): not met, not hard
    assert "growing: bronze +4.0/cycle  [NOT MET]" in report


@pytest.mark.parametrize(
    "changed",
    [
        {"batches_built": 59},
        {"failed_cycles": ["process 1: tidemark run: cycle 9: FAILED: ..."]},
        {"wrong": ["client 1 ..."], "answers": {RIGHT: 899, WRONG: 1}},
        {"unexpected": ["client 2 ..."]},
        {"after_kill_equal": {**dict.fromkeys(MARTS, True), MARTS[3]: False}},
        {"final_equal": {}},
    ],
)
def test_any_correctness_failure_fails_the_soak(changed: dict) -> None:
    assert not _result(**changed).correct()


def test_timing_log_heap_and_files_are_reported_but_do_not_fail_the_soak() -> None:
    result = _result(
        restart_listening_s=50.0, log_lines=2_000, heap_kib={"after cycle 10": 1, "at the end": 2}
    )
    assert result.correct()
    met = {v.target: v.met for v in result.verdicts()}
    assert met["restart to serving <= 1.2x a cold start"] is False
    assert met["log <= 5 lines per cycle on average"] is False
    assert met["heap after the soak <= 1.2x after cycle 10"] is False
    flat = _result(files=[{"bronze": 100, "warehouse": 900}] * 60)
    assert {v.target: v.met for v in flat.verdicts()}["no file count that grows per cycle"]


def test_without_a_kill_there_is_no_restart_target() -> None:
    result = _result(kill_at=None, after_kill_equal={}, restart_s=None)
    targets = [v.target for v in result.verdicts()]
    assert not any("restart" in t or "kill" in t for t in targets)
    assert result.correct()


def test_the_full_build_comparison_leaves_out_when_rows_were_ingested() -> None:
    assert comparable_query("fct_subtask_seconds") == figures_query("fct_subtask_seconds")
    assert comparable_query("dim_vertices") == (
        "select count(*), bit_xor(xxhash64(*)) from (from tidemark.dim_vertices |> drop updated_at)"
    )


def test_a_restart_that_waited_for_its_port_says_so_beside_its_ratio() -> None:
    report = _result(restart_s=170.0, restart_refused_s=60.0, restart_attempts=13).report()
    assert "170.0 against 100.0 (1.70x, first ok cycle); 1.10x without the 60 s" in report
    assert "restarted by the same command (13 start(s))" in report
