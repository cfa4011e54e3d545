"""Where tidemark keeps its state: one folder, ``TIDEMARK_LAKE`` (contract §2).

Everything lives below it: the bronze Delta tables, the quarantine, the Spark warehouse and the
Hive metastore. Two different lakes never share state.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

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


# What ingest and `tidemark maintain` share: one writer of bronze at a time, and how far
# maintenance expired bronze (ingest quarantines an event older than that).


class IngestBusy(Exception):
    pass


@contextmanager
def ingest_lock(lake: Lake, wait: bool = True) -> Iterator[None]:
    """One writer of bronze at a time per lake: an ingest, or `tidemark maintain`."""
    lake.locks.mkdir(parents=True, exist_ok=True)
    with (lake.locks / "ingest.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise IngestBusy(f"another ingest is running on {lake.root}") from None
            log.info("waiting for another ingest on %s to finish", lake.root)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


class RetentionError(ValueError):
    pass


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def state_path(lake: Lake) -> Path:
    return lake.root / "_maintain" / "state.json"


def expired_before(lake: Lake) -> int | None:
    """Epoch ms before which bronze's events were expired (None: nothing ever was)."""
    path = state_path(lake)
    try:
        return int(json.loads(path.read_text())["bronze_expired_before_ms"])
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        raise RetentionError(
            f"{path} is not what `tidemark maintain` writes ({exc}); it says how far bronze was "
            "expired: run `tidemark maintain` again to write it"
        ) from exc


def too_old_reason(before_ms: int) -> str:
    """The quarantine reason of an event older than what bronze keeps."""
    return (
        f"older than bronze's retention: events before {iso(before_ms)} were expired "
        "(tidemark maintain --keep-bronze-days), so this one cannot join them"
    )
