"""The dbt project's YAML as the tests read it, without dbt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def yaml_entries(kind: str) -> Iterator[tuple[Path, dict]]:
    """Each entry of ``kind`` (``models``, ``unit_tests``, ...) in the models' YAML files, with
    the file it is in."""
    for path in sorted(MODELS.rglob("*.yml")):
        for entry in (yaml.safe_load(path.read_text()) or {}).get(kind, []):
            yield path, entry
