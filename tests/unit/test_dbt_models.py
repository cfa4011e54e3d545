"""The dbt layer's house rules that need no dbt: read from the files, in seconds."""

from __future__ import annotations

import re

from tests.dbt_files import MODELS, ROOT, yaml_entries

MAX_LINES = 150
# Issue 65: no model over this, reason or not.
HARD_MAX_LINES = 250


def _model_entries() -> dict[str, dict]:
    """Each model's entry in the project's YAML files, by name."""
    return {entry["name"]: entry for _, entry in yaml_entries("models")}


def test_a_model_over_150_lines_says_why_in_its_yaml() -> None:
    """Issue 43: a model does one job, in at most ~150 lines unless its YAML says why
    (`config.meta.over_150_lines`); a reason stays only while the model is that long."""
    entries = _model_entries()
    missing, stale = [], []
    for sql in sorted(MODELS.rglob("*.sql")):
        lines = len(sql.read_text().splitlines())
        assert sql.stem in entries, f"{sql.relative_to(ROOT)} has no YAML entry"
        reason = entries[sql.stem].get("config", {}).get("meta", {}).get("over_150_lines")
        if lines > MAX_LINES and not reason:
            missing.append(f"{sql.relative_to(ROOT)} ({lines} lines)")
        if lines <= MAX_LINES and reason:
            stale.append(f"{sql.relative_to(ROOT)} ({lines} lines)")
    assert not missing, f"say why in config.meta.over_150_lines, or split: {missing}"
    assert not stale, f"no longer over {MAX_LINES} lines, drop over_150_lines: {stale}"


def test_no_model_is_over_250_lines() -> None:
    """Issue 65: whatever its reason, a model over 250 lines does more than one job."""
    long = {
        str(sql.relative_to(ROOT)): n
        for sql in sorted(MODELS.rglob("*.sql"))
        if (n := len(sql.read_text().splitlines())) > HARD_MAX_LINES
    }
    assert not long, f"split these (at most {HARD_MAX_LINES} lines): {long}"


def test_sql_fixtures_of_several_rows_are_inline_tables() -> None:
    """A unit test's SQL fixture of several rows is one inline table (`select * from values (...),
    (...) as fixture(...)`), as macros/get_fixture_sql.sql makes of the others: Spark folds it
    into one local relation, where `select ... union all select ...` is a branch per row that
    the model's plan repeats wherever it reads the input (a watermark test: 15.6 s against
    6.5 s; decision 0014)."""
    unions = []
    for path, test in yaml_entries("unit_tests"):
        for fixture in [*test.get("given", []), test.get("expect", {})]:
            rows = fixture.get("rows")
            if fixture.get("format") == "sql" and "union all" in str(rows).lower():
                unions.append(f"{path.relative_to(ROOT)}: {test['name']}")
    assert not unions, f"write these fixtures as one inline table: {unions}"


def test_no_model_or_macro_writes_other_sql_under_unit_tests() -> None:
    """Issue 43, decision 0022: a compile-time question returns its answer as data, which a unit
    test gives (`overrides: macros:`), so the tested SQL is a run's. Branching on being under a
    unit test (`this` is a string there, the node's resource_type is `unit_test`) would test
    other SQL. dbt's own unit materialization is the exception."""
    branches = []
    for sql in sorted([*MODELS.rglob("*.sql"), *(ROOT / "macros").rglob("*.sql")]):
        if sql.parent.name == "materializations":
            continue
        for number, line in enumerate(sql.read_text().splitlines(), 1):
            if re.search(r"this is string|this is not string|unit_test['\"]", line):
                branches.append(f"{sql.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not branches, f"give the answer in the unit tests instead: {branches}"
