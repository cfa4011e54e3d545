"""bench/scale.py's report: issue 11 asks for ten kept minutes in a row, the last no slower."""

from __future__ import annotations

import json
from pathlib import Path

from bench.scale import Minute, ScaleBench, longest_kept_run, model_seconds


def _minutes(totals: list[float]) -> list[Minute]:
    return [Minute(k + 1, 1000, 10.0, total - 10.0, 0, 0.0, {}) for k, total in enumerate(totals)]


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


def test_model_seconds_reads_models_from_run_results_and_leaves_tests_out(tmp_path: Path) -> None:
    results = [
        {"unique_id": "model.tidemark.fct_task_watermarks", "execution_time": 5.5},
        {"unique_id": "test.tidemark.not_null_fct_task_watermarks_task.abc", "execution_time": 9.0},
        {"unique_id": "model.tidemark.int_valve_outputs_computed", "execution_time": 2.25},
    ]
    path = tmp_path / "run_results.json"
    path.write_text(json.dumps({"results": results}))
    assert model_seconds(path) == {"fct_task_watermarks": 5.5, "int_valve_outputs_computed": 2.25}


def test_models_report_lists_the_slowest_models_by_their_sum_one_column_a_minute() -> None:
    minutes = _minutes([60.0, 50.0])
    minutes[0].models.update({"a": 1.0, "b": 9.0, "c": 4.0})
    minutes[1].models.update({"a": 2.0, "c": 4.5})  # b did not run in the second minute
    lines = ScaleBench("1", 1.0, 10, 2.0, minutes).models_report(2).splitlines()
    assert [line.split() for line in lines] == [
        ["model", "1", "2"],
        ["b", "9.0", "-"],
        ["c", "4.0", "4.5"],
    ]
