"""Write the live matrix's figures into docs/flink-versions.md: ``make test-live-all`` runs it.

    python -m tests.live.versions_table pairs                  the matrix, two releases a run
    python -m tests.live.versions_table table FIGURES STATUS DOC

FIGURES: the JSON lines the live session appends per release (``TIDEMARK_LIVE_FIGURES``,
tests/live/conftest.py); STATUS: one line per pair of releases run, ``VERSION,VERSION EXIT`` (the
pytest exit status of that pair). The table between DOC's ``<!-- live-figures -->`` and
``<!-- /live-figures -->`` is replaced by one row per release of :data:`MATRIX`: its figures, or
"not run in this session" for a release no pair ran. Nothing is made up: a column a failed run
did not reach stays empty.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

# Every minor release the capture supports, at the patch the matrix runs (the newest on PyPI's
# apache-flink-libraries when chosen); `make test-live-all` runs them two at a time in this order.
MATRIX = (
    "1.15.4",
    "1.16.3",
    "1.17.2",
    "1.18.1",
    "1.19.3",
    "1.20.5",
    "2.0.2",
    "2.1.3",
    "2.2.1",
    "2.3.0",
)
# How the SQL job was submitted (tests/live/flink_job.py, sql_api).
APIS = {"pyflink": "PyFlink", "java": "Java Table API"}
BEGIN, END = "<!-- live-figures -->", "<!-- /live-figures -->"
HEADER = (
    "| Flink | Java | live tests | gauge values matched / compared"
    " | valve outputs matched / compared | REST gauge readings equal / polled"
    " | REST watermark readings equal / polled |\n"
    "|---|---|---|---|---|---|---|\n"
)


def _pair(entry: dict, matched: str, compared: str) -> str:
    if compared not in entry:
        return ""
    return f"{entry.get(matched, 0):,} / {entry[compared]:,}"


def _straddles(entry: dict) -> str:
    """Readings of a dump taken as a round closed, mixing two consecutive rounds (allowed when
    rare: tests/live/matching.py)."""
    count = entry.get("rest_gauge_readings_straddling", 0)
    verb = "straddles" if count == 1 else "straddle"
    return f" ({count} {verb} two rounds)" if count else ""


def table(figures: list[dict], status: dict[str, int], when: str) -> str:
    """The DataStream job's row per release of the matrix, then the SQL job's table
    for the releases it ran on, if any."""
    jobs = _rows([f for f in figures if f.get("shape", "datastream") == "datastream"], status)
    sql = [f for f in figures if f.get("shape") == "sql"]
    text = f"{BEGIN}\nFrom `make test-live-all`, {when}.\n\n{HEADER}" + "\n".join(jobs)
    if sql:
        ran = [f["version"] for f in sql]
        rows = _rows(sql, status, tuple(v for v in MATRIX if v in ran))
        text += (
            "\n\nThe Flink SQL job (tests/live/job/live_sql_job.py through PyFlink's Table API,"
            " LiveSqlJob.java through the Java Table API where PyFlink has no Python 3.11"
            " wheel):\n\n" + HEADER
        )
        text += "\n".join(rows)
    return text + f"\n{END}"


def _rows(figures: list[dict], status: dict[str, int], versions: tuple[str, ...] = MATRIX) -> list:
    by_version = {entry["version"]: entry for entry in figures}
    rows = []
    for version in versions:
        java = "11" if version.startswith("1.") else "17"
        if version not in status:
            rows.append(f"| {version} | {java} | not run in this session | | | | |")
            continue
        entry = by_version.get(version, {})
        name = f"{version} ({APIS[entry['api']]})" if "api" in entry else version
        verdict = "passed" if status[version] == 0 else f"failed (pytest exit {status[version]})"
        rows.append(
            f"| {name} | {java} | {verdict}"
            f" | {_pair(entry, 'gauge_values_matched', 'gauge_values_compared')}"
            f" | {_pair(entry, 'valve_outputs_matched', 'valve_outputs_compared')}"
            f" | {_pair(entry, 'rest_gauge_readings_equal', 'rest_gauge_readings')}"
            f"{_straddles(entry)}"
            f" | {_pair(entry, 'rest_watermark_readings_equal', 'rest_watermark_readings')} |"
        )
    return rows


def pairs(versions: tuple[str, ...] = MATRIX) -> list[str]:
    """The matrix as the live session takes it (TIDEMARK_LIVE_VERSIONS), two releases a run."""
    return [",".join(versions[i : i + 2]) for i in range(0, len(versions), 2)]


def write_table(figures_path: str, status_path: str, doc_path: str) -> None:
    figures_file, status_file = Path(figures_path), Path(status_path)
    figures = [json.loads(line) for line in figures_file.read_text().splitlines() if line.strip()]
    status: dict[str, int] = {}
    for line in status_file.read_text().splitlines():
        if line.strip():
            pair, code = line.split()
            status.update(dict.fromkeys(pair.split(","), int(code)))
    doc = Path(doc_path)
    text = doc.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    doc.write_text(text[:start] + table(figures, status, when) + text[end:])


if __name__ == "__main__":
    if sys.argv[1:2] == ["pairs"]:
        print(" ".join(pairs()))
    else:
        write_table(*sys.argv[2:])
