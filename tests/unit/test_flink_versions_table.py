"""`make test-live-all`'s table in docs/flink-versions.md: a row per release of the matrix, with
the figures of the releases run, the pytest outcome of their pair, and nothing for the others."""

from __future__ import annotations

import json
from pathlib import Path

from tests.live.versions_table import BEGIN, END, MATRIX, pairs, write_table

ROOT = Path(__file__).resolve().parents[2]


def test_the_matrix_runs_every_minor_release_from_1_15_to_2_3_two_at_a_time() -> None:
    minors = [v.rsplit(".", 1)[0] for v in MATRIX]
    assert minors == ["1.15", "1.16", "1.17", "1.18", "1.19", "1.20", "2.0", "2.1", "2.2", "2.3"]
    assert pairs() == [f"{a},{b}" for a, b in zip(MATRIX[::2], MATRIX[1::2], strict=True)]
    assert pairs(("1.15.4", "1.16.3", "2.3.0")) == ["1.15.4,1.16.3", "2.3.0"]


def test_the_table_shows_what_ran_and_marks_the_rest_not_run(tmp_path: Path) -> None:
    figures = tmp_path / "figures.jsonl"
    figures.write_text(
        json.dumps(
            {
                "version": "1.15.4",
                "gauge_values_compared": 345,
                "gauge_values_matched": 345,
                "valve_outputs_compared": 930,
                "valve_outputs_matched": 930,
                "rest_gauge_readings": 612,
                "rest_gauge_readings_equal": 609,
                "rest_gauge_readings_straddling": 3,
                "rest_watermark_readings": 1293,
                "rest_watermark_readings_equal": 1276,
            }
        )
        + "\n"
    )
    status = tmp_path / "status"
    # 1.16.3's job failed: the session wrote no figures for it.
    status.write_text("1.15.4,1.16.3 1\n")
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n\n{BEGIN}\nold table\n{END}\n\nafter\n")
    write_table(str(figures), str(status), str(doc))
    text = doc.read_text()
    assert text.startswith("intro\n\n") and text.endswith("\n\nafter\n")
    assert "old table" not in text
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if "| 1." in line
            or "| 2." in line}  # fmt: skip
    assert set(rows) == set(MATRIX)
    assert rows["1.15.4"] == (
        "| 1.15.4 | 11 | failed (pytest exit 1) | 345 / 345 | 930 / 930"
        " | 609 / 612 (3 straddle two rounds) | 1,276 / 1,293 |"
    )
    assert rows["1.16.3"] == "| 1.16.3 | 11 | failed (pytest exit 1) |  |  |  |  |"
    for version in MATRIX[2:]:
        assert "not run in this session" in rows[version], rows[version]


def test_the_docs_page_has_the_tables_place() -> None:
    text = (ROOT / "docs" / "flink-versions.md").read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert text.index(BEGIN) < text.index(END)


def test_the_sql_jobs_figures_get_a_table_of_their_own(tmp_path: Path) -> None:
    figures = tmp_path / "figures.jsonl"
    entries = [
        {"version": "2.3.0", "gauge_values_compared": 370, "gauge_values_matched": 370},
        {"version": "2.3.0", "shape": "sql", "api": "pyflink", "gauge_values_compared": 40,
         "gauge_values_matched": 40},
        {"version": "1.18.1", "shape": "sql", "api": "java", "gauge_values_compared": 41,
         "gauge_values_matched": 41, "rest_gauge_readings": 80, "rest_gauge_readings_equal": 79,
         "rest_gauge_readings_straddling": 1},
    ]  # fmt: skip
    figures.write_text("".join(json.dumps(e) + "\n" for e in entries))
    status = tmp_path / "status"
    status.write_text("1.17.2,1.18.1 0\n2.2.1,2.3.0 0\n")
    doc = tmp_path / "doc.md"
    doc.write_text(f"{BEGIN}\n{END}\n")
    write_table(str(figures), str(status), str(doc))
    jobs, sql = doc.read_text().split("The Flink SQL job")
    assert "| 2.3.0 | 17 | passed | 370 / 370 |" in jobs
    assert "| 2.3.0 (PyFlink) | 17 | passed | 40 / 40 |" in sql  # the API it ran through
    assert "| 1.18.1 (Java Table API) | 11 | passed | 41 / 41 |  | 79 / 80 (1 straddles" in sql
    assert "1.15.4" in jobs and "1.15.4" not in sql  # only the releases the SQL job ran on
