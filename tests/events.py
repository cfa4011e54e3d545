"""Building contract events for tests: valid ones by default, broken ones by override."""

from __future__ import annotations

import json
from pathlib import Path

_DELETE = object()
DELETE = _DELETE  # pass as a value to drop the field


def _n(seq: object) -> int:
    return seq if isinstance(seq, int) else 0


def _apply(base: dict, overrides: dict) -> dict:
    record = {**base, **overrides}
    return {key: value for key, value in record.items() if value is not _DELETE}


def _task(kind: str, seq: object) -> dict:
    """The fields every task record has (contract §1), for task 0 of vertex `map` of `job`."""
    return {
        "type": kind,
        "job_id": "job",
        "vertex_id": "map",
        "subtask_index": 0,
        "attempt": 0,
        "seq": seq,
        "ts_ms": 1_000 + _n(seq),
    }


def timer(seq: object = 0, **overrides: object) -> dict:
    base = {
        **_task("timer", seq),
        "timer": "idle",
        "action": "start",
    }
    return _apply(base, overrides)


def watermark(seq: object = 0, **overrides: object) -> dict:
    base = {
        **_task("watermark", seq),
        "input_index": 0,
        "channel_index": 0,
        "num_channels": 2,
        "watermark_ms": 500 + _n(seq),
    }
    return _apply(base, overrides)


def status(seq: object = 0, **overrides: object) -> dict:
    base = {
        **_task("watermark_status", seq),
        "input_index": 0,
        "channel_index": 1,
        "num_channels": 2,
        "status": "IDLE",
    }
    return _apply(base, overrides)


def update(seq: object = 0, **overrides: object) -> dict:
    """A captured view round of a gauge (contract §1 `timer` `update`), with its published value."""
    return timer(seq, **{"action": "update", "published": 250, **overrides})


def valve_output(seq: object = 0, **overrides: object) -> dict:
    base = {
        **_task("valve_output", seq),
        "input_index": 0,
        "kind": "watermark",
        "watermark_ms": 400 + _n(seq),
    }
    return _apply(base, overrides)


def capture_gap(seq: object = 0, **overrides: object) -> dict:
    """tidemark's extension record (docs/decisions/0006): seq..to_seq were dropped."""
    base = {
        **_task("capture_gap", seq),
        "to_seq": _n(seq) + 2,
        "to_ts_ms": 1_002 + _n(seq),
        "dropped": 3,
        "reason": "queue full",
    }
    return _apply(base, overrides)


def vertex(**overrides: object) -> dict:
    base = {
        "type": "vertex",
        "job_id": "job",
        "vertex_id": "map",
        "vertex_name": "Map",
        "parallelism": 2,
        "busy_time_enabled": True,
        "upstream_vertex_ids": ["source"],
    }
    return _apply(base, overrides)


def line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False)


def write_jsonl(path: Path, records: list[dict | str | bytes]) -> Path:
    """Write records (dicts as JSON, str/bytes as they are) one per line."""
    with path.open("wb") as handle:
        for record in records:
            if isinstance(record, dict):
                record = line(record)
            if isinstance(record, str):
                record = record.encode("utf-8")
            handle.write(record + b"\n")
    return path
