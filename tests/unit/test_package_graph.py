"""tidemark's packages import each other without cycles (issue 65): a cycle, even hidden in an
import inside a function, means neither side can be read or changed without the other. What two
packages share lives in a module both import (tidemark.lake, tidemark.cycles)."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "tidemark"


def unit_of(path: Path) -> str:
    """A sub-package's name (``ingest``), or a top-level module's (``schedule``)."""
    relative = path.relative_to(SOURCE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def package_imports(root: Path = SOURCE) -> dict[str, set[str]]:
    """Each unit of tidemark with the other units it imports, anywhere in its code."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        unit = unit_of(path)
        targets = graph.setdefault(unit, set())
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "tidemark" and len(parts) > 1 and parts[1] != unit:
                    targets.add(parts[1])
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle of ``graph``, each once, as the path that closes it."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def walk(path: list[str]) -> None:
        for target in sorted(graph.get(path[-1], ())):
            if target == path[0]:
                if frozenset(path) not in seen:
                    seen.add(frozenset(path))
                    found.append([*path, target])
            elif target not in path and target > path[0]:
                walk([*path, target])

    for unit in sorted(graph):
        walk([unit])
    return found


def test_the_cycle_finder_finds_a_cycle_through_three_packages() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_tidemarks_packages_import_each_other_without_cycles() -> None:
    graph = package_imports()
    assert {"cli", "ingest", "maintain", "health", "schedule", "spark"} <= set(graph)
    assert cycles(graph) == []
