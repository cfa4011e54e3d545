"""Arrow schemas of the bronze tables (contract §3) and of a parsed line before validation.

The parsed schema holds every field of contract §1, all nullable: the fast parser (Arrow's JSON
reader) and the slow one (``json`` per line) both produce it, so one validation serves both.
"""

from __future__ import annotations

import pyarrow as pa

INT32_FIELDS = (
    "subtask_index",
    "attempt",
    "input_index",
    "channel_index",
    "num_channels",
    "parallelism",
    "max_parallelism",
)
INT64_FIELDS = ("seq", "ts_ms", "watermark_ms", "published", "to_seq", "to_ts_ms", "dropped")
STRING_FIELDS = (
    "type",
    "job_id",
    "vertex_id",
    "timer",
    "action",
    "status",
    "vertex_name",
    "kind",
    "reason",
    "flink_version",
)
BOOL_FIELDS = ("busy_time_enabled",)
STRING_LIST_FIELDS = ("upstream_vertex_ids", "input_ship_strategies")

PARSED = pa.schema(
    [(name, pa.string()) for name in STRING_FIELDS]
    + [(name, pa.int32()) for name in INT32_FIELDS]
    + [(name, pa.int64()) for name in INT64_FIELDS]
    + [(name, pa.bool_()) for name in BOOL_FIELDS]
    + [(name, pa.list_(pa.string())) for name in STRING_LIST_FIELDS]
)

# Lineage carried by every bronze row: which file and line it came from, and which ingest commit
# landed it. ``ingest_id`` grows with every commit, so incremental models can ask "what is new".
LINEAGE = [
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_sha256", pa.string(), nullable=False),
    pa.field("line_number", pa.int64(), nullable=False),
    pa.field("ingest_id", pa.int64(), nullable=False),
    pa.field("ingested_at", pa.timestamp("us", tz="UTC"), nullable=False),
]

_TASK = [
    pa.field("job_id", pa.string(), nullable=False),
    pa.field("vertex_id", pa.string(), nullable=False),
    pa.field("subtask_index", pa.int32(), nullable=False),
    pa.field("attempt", pa.int32(), nullable=False),
    pa.field("seq", pa.int64(), nullable=False),
    pa.field("ts_ms", pa.int64(), nullable=False),
]

TIMER_EVENTS = pa.schema(
    _TASK
    + [
        pa.field("timer", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        # Only on `update` records of a capture (contract §1): the value Flink published.
        pa.field("published", pa.int64()),
    ]
    + LINEAGE
)

# What a StatusWatermarkValve really emitted, as captured inside Flink (contract §1).
VALVE_OUTPUTS = pa.schema(
    _TASK
    + [
        pa.field("input_index", pa.int32(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("watermark_ms", pa.int64()),
        pa.field("status", pa.string()),
    ]
    + LINEAGE
)

# tidemark's extension record (docs/decisions/0006): events a capture dropped, per task.
CAPTURE_GAPS = pa.schema(
    _TASK
    + [
        pa.field("to_seq", pa.int64(), nullable=False),
        pa.field("to_ts_ms", pa.int64(), nullable=False),
        pa.field("dropped", pa.int64(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
    ]
    + LINEAGE
)

WATERMARK_EVENTS = pa.schema(
    _TASK
    + [
        pa.field("event_type", pa.string(), nullable=False),
        pa.field("input_index", pa.int32(), nullable=False),
        pa.field("channel_index", pa.int32(), nullable=False),
        pa.field("num_channels", pa.int32(), nullable=False),
        pa.field("watermark_ms", pa.int64()),
        pa.field("status", pa.string()),
    ]
    + LINEAGE
)

VERTICES = pa.schema(
    [
        pa.field("job_id", pa.string(), nullable=False),
        pa.field("vertex_id", pa.string(), nullable=False),
        pa.field("vertex_name", pa.string()),
        pa.field("parallelism", pa.int32(), nullable=False),
        pa.field("busy_time_enabled", pa.bool_(), nullable=False),
        pa.field("upstream_vertex_ids", pa.list_(pa.string()), nullable=False),
        # Contract §8, optional: the release the job ran on, the vertex's key groups, and how
        # each input (in upstream_vertex_ids' order) ships records. Added after the lake's first
        # release: ensure_tables adds them to an older lake's table (NULL in its rows).
        pa.field("flink_version", pa.string()),
        pa.field("max_parallelism", pa.int32()),
        pa.field("input_ship_strategies", pa.list_(pa.string())),
    ]
    + LINEAGE
)

QUARANTINE = pa.schema(
    [
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("source_sha256", pa.string(), nullable=False),
        pa.field("line_number", pa.int64(), nullable=False),
        # The line as text; bytes that are not UTF-8 appear as U+FFFD here and exactly in raw_bytes.
        pa.field("raw_line", pa.string(), nullable=False),
        pa.field("raw_bytes", pa.binary()),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("ingest_id", pa.int64(), nullable=False),
        pa.field("ingested_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)

INGEST_LOG = pa.schema(
    [
        pa.field("source_sha256", pa.string(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("lines_read", pa.int64(), nullable=False),
        pa.field("accepted", pa.int64(), nullable=False),
        pa.field("duplicates", pa.int64(), nullable=False),
        pa.field("quarantined", pa.int64(), nullable=False),
        pa.field("ingest_id", pa.int64(), nullable=False),
        pa.field("ingested_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)

BRONZE_SCHEMAS: dict[str, pa.Schema] = {
    "timer_events": TIMER_EVENTS,
    "watermark_events": WATERMARK_EVENTS,
    "valve_outputs": VALVE_OUTPUTS,
    "capture_gaps": CAPTURE_GAPS,
    "vertices": VERTICES,
    "quarantine": QUARANTINE,
    "ingest_log": INGEST_LOG,
}
