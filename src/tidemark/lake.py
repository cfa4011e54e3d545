"""Where tidemark keeps its state: one folder, ``TIDEMARK_LAKE`` (contract §2).

Everything lives below it: the bronze Delta tables, the quarantine, the Spark warehouse and the
Hive metastore. Two different lakes never share state.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LAKE = "./lake"
BRONZE_TABLES = (
    "timer_events",
    "watermark_events",
    "valve_outputs",
    "capture_gaps",
    "vertices",
    "quarantine",
    "ingest_log",
)


@dataclass(frozen=True)
class Lake:
    """The folder layout of one lake. Paths are absolute so that Spark and Derby agree on them."""

    root: Path

    @classmethod
    def from_env(cls, override: str | os.PathLike[str] | None = None) -> Lake:
        raw = override if override is not None else os.environ.get("TIDEMARK_LAKE", DEFAULT_LAKE)
        if str(raw).strip() == "":
            raise ValueError("TIDEMARK_LAKE is set but empty: unset it or give a folder")
        return cls(Path(raw).expanduser().resolve())

    @property
    def bronze(self) -> Path:
        return self.root / "bronze"

    def bronze_table(self, name: str) -> Path:
        if name not in BRONZE_TABLES:
            raise KeyError(f"unknown bronze table {name!r}")
        return self.bronze / name

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def metastore(self) -> Path:
        return self.root / "metastore"

    @property
    def metastore_db(self) -> Path:
        """The embedded Hive metastore's Derby database, made by Spark's first start."""
        return self.metastore / "metastore_db"

    @property
    def locks(self) -> Path:
        return self.root / "_locks"

    @property
    def seen_files(self) -> Path:
        """What ``tidemark ingest`` knows of files it already landed (a cache: safe to delete)."""
        return self.root / "_ingest" / "seen-files.json"

    @property
    def bronze_summary(self) -> Path:
        """Per task, the highest seq and the channels bronze holds (a cache: safe to delete)."""
        return self.root / "_ingest" / "bronze-summary.arrow"

    @property
    def logs(self) -> Path:
        return self.root / "logs"
