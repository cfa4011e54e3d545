"""The per-line rules of contract §1, applied to a whole block at once.

Input is a ``PARSED`` table (every field typed, all nullable). Output is one reason per row, or
``None`` for a row that keeps every rule. The first rule a row breaks is the one reported, in the
order of the contract's tables. Rules that need other rows (duplicates, conflicts, ``num_channels``
constant per input) live in :mod:`tidemark.ingest.identity`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tidemark.lake import too_old_reason

EVENT_TYPES = ("timer", "watermark", "watermark_status", "valve_output", "vertex", "capture_gap")
# Every type with the task fields. `capture_gap` is tidemark's own extension (decision 0006).
TASK_TYPES = ("timer", "watermark", "watermark_status", "valve_output", "capture_gap")
TIMERS = ("idle", "soft_backpressured", "hard_backpressured", "backpressured")
ACTIONS = ("start", "end", "update")
OUTPUT_KINDS = ("watermark", "status")
STATUSES = ("IDLE", "ACTIVE")
PUBLISHED_MAX = 1000  # T6/T12: a TimerGauge publishes a value in [0, 1000]
# A `vertex` record's flink_version (contract §8): MAJOR.MINOR, then anything (1.15.4, 2.3.0,
# 1.20-SNAPSHOT): the models read the release's rules from the first two numbers.
RELEASE = r"^[0-9]+\.[0-9]+([.-].*)?$"

Rule = tuple[np.ndarray, Callable[[int], str]]


def _np(array: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False))


def _isnull(table: pa.Table, name: str) -> np.ndarray:
    return _np(pc.is_null(table[name]))


def _is_one_of(table: pa.Table, name: str, allowed: tuple[str, ...]) -> np.ndarray:
    """Whether each row's ``name`` is one of ``allowed`` (False where it is missing)."""
    return _np(pc.fill_null(pc.is_in(table[name], value_set=pa.array(allowed)), False))


def enum_codes(array: pa.ChunkedArray, allowed: tuple[str, ...]) -> np.ndarray:
    """Each row's index in ``allowed``; -1 where the value is missing or not allowed."""
    return _np(pc.fill_null(pc.index_in(array, value_set=pa.array(allowed)), -1))


def is_type(kind: np.ndarray, types: tuple[str, ...]) -> np.ndarray:
    """Whether each row's type, as ``enum_codes(table["type"], EVENT_TYPES)``, is in ``types``."""
    return np.isin(kind, [EVENT_TYPES.index(t) for t in types])


def _holds_null_or_empty(lists: pa.ChunkedArray, n: int) -> np.ndarray:
    """Whether each row's list of strings holds a null or an empty string (False for none)."""
    bad_rows = np.zeros(n, dtype=bool)
    flat = pc.list_flatten(lists)
    if len(flat):
        bad_items = pc.or_kleene(
            pc.is_null(flat), pc.fill_null(pc.equal(pc.utf8_length(flat), 0), False)
        )
        bad_rows[_np(pc.list_parent_indices(lists))[_np(bad_items)]] = True
    return bad_rows


def _less(table: pa.Table, name: str, bound: int) -> np.ndarray:
    return _np(pc.fill_null(pc.less(table[name], bound), False))


def check_rows(table: pa.Table, expired_before_ms: int | None = None) -> dict[int, str]:
    """The rows that break a per-line rule, each with the first rule's reason; with
    ``expired_before_ms``, a task event older than that is refused too (`tidemark maintain`
    expired bronze's events before it: tidemark.maintain.retention)."""
    n = table.num_rows
    if n == 0:
        return {}
    col = {name: table[name] for name in table.column_names}
    # The enumerated fields as codes (their index in the allowed values, -1 for any other value
    # or none): comparing strings row by row took most of this function's time.
    kind = enum_codes(col["type"], EVENT_TYPES)
    of_type = {name: kind == code for code, name in enumerate(EVENT_TYPES)}
    is_task = is_type(kind, TASK_TYPES)
    is_timer, is_vertex = of_type["timer"], of_type["vertex"]
    is_channel = of_type["watermark"] | of_type["watermark_status"]
    is_output, is_gap = of_type["valve_output"], of_type["capture_gap"]
    output_kind = enum_codes(col["kind"], OUTPUT_KINDS)
    output_watermark = is_output & (output_kind == OUTPUT_KINDS.index("watermark"))
    output_status = is_output & (output_kind == OUTPUT_KINDS.index("status"))
    not_update = enum_codes(col["action"], ACTIONS) != ACTIONS.index("update")
    has_published = is_timer & ~_isnull(table, "published")

    def value(name: str) -> Callable[[int], object]:
        return lambda i: col[name][i].as_py()

    def missing(name: str, where: np.ndarray) -> Rule:
        return where & _isnull(table, name), lambda i: f"missing field '{name}'"

    def empty(name: str) -> Rule:
        mask = _np(pc.fill_null(pc.equal(pc.utf8_length(col[name]), 0), False))
        return mask, lambda i: f"field '{name}' is empty"

    def negative(name: str, where: np.ndarray, floor: int = 0) -> Rule:
        show = value(name)
        word = "negative" if floor == 0 else f"below {floor}"
        return where & _less(table, name, floor), lambda i: f"field '{name}' is {word}: {show(i)}"

    def enum(name: str, where: np.ndarray, allowed: tuple[str, ...]) -> Rule:
        show = value(name)
        bad = where & ~_isnull(table, name) & ~_is_one_of(table, name, allowed)
        expected = ", ".join(allowed)
        return bad, lambda i: f"field '{name}' is {show(i)!r}: expected one of {expected}"

    channel_beyond = is_channel & _np(
        pc.fill_null(pc.greater_equal(col["channel_index"], col["num_channels"]), False)
    )
    upstream_nulls = is_vertex & _holds_null_or_empty(col["upstream_vertex_ids"], n)
    strategies = col["input_ship_strategies"]
    has_strategies = is_vertex & ~_isnull(table, "input_ship_strategies")
    strategies_nulls = has_strategies & _holds_null_or_empty(strategies, n)
    strategies_count = has_strategies & _np(
        pc.fill_null(
            pc.not_equal(
                pc.list_value_length(strategies),
                pc.list_value_length(
                    pc.fill_null(col["upstream_vertex_ids"], pa.scalar([], pa.list_(pa.string())))
                ),
            ),
            False,
        )
    )
    bad_release = (
        is_vertex
        & ~_isnull(table, "flink_version")
        & ~_np(pc.fill_null(pc.match_substring_regex(col["flink_version"], RELEASE), False))
    )

    rules: list[Rule] = [
        missing("type", np.ones(n, dtype=bool)),
        enum("type", np.ones(n, dtype=bool), EVENT_TYPES),
        missing("job_id", np.ones(n, dtype=bool)),
        empty("job_id"),
        missing("vertex_id", np.ones(n, dtype=bool)),
        empty("vertex_id"),
        missing("subtask_index", is_task),
        negative("subtask_index", is_task),
        negative("attempt", is_task),
        missing("seq", is_task),
        negative("seq", is_task),
        missing("ts_ms", is_task),
        missing("timer", is_timer),
        enum("timer", is_timer, TIMERS),
        missing("action", is_timer),
        enum("action", is_timer, ACTIONS),
        (
            has_published & not_update,
            lambda i: (
                "field 'published' is only allowed on action 'update', not "
                f"{col['action'][i].as_py() or ''!r}"
            ),
        ),
        (
            has_published
            & (_less(table, "published", 0) | ~_less(table, "published", PUBLISHED_MAX + 1)),
            lambda i: (
                f"field 'published' is {col['published'][i].as_py()}: a TimerGauge publishes "
                f"0 to {PUBLISHED_MAX}"
            ),
        ),
        missing("input_index", is_channel | is_output),
        negative("input_index", is_channel | is_output),
        missing("channel_index", is_channel),
        negative("channel_index", is_channel),
        missing("num_channels", is_channel),
        negative("num_channels", is_channel, floor=1),
        (
            channel_beyond,
            lambda i: (
                f"field 'channel_index' is {col['channel_index'][i].as_py()}: must be below "
                f"num_channels ({col['num_channels'][i].as_py()})"
            ),
        ),
        missing("watermark_ms", of_type["watermark"]),
        missing("status", of_type["watermark_status"]),
        enum("status", of_type["watermark_status"], STATUSES),
        missing("kind", is_output),
        enum("kind", is_output, OUTPUT_KINDS),
        missing("watermark_ms", output_watermark),
        missing("status", output_status),
        enum("status", output_status, STATUSES),
        missing("to_seq", is_gap),
        (
            is_gap & _np(pc.fill_null(pc.less(col["to_seq"], col["seq"]), False)),
            lambda i: (
                f"field 'to_seq' is {col['to_seq'][i].as_py()}: below seq ({col['seq'][i].as_py()})"
            ),
        ),
        missing("to_ts_ms", is_gap),
        missing("dropped", is_gap),
        negative("dropped", is_gap, floor=1),
        missing("reason", is_gap),
        missing("parallelism", is_vertex),
        negative("parallelism", is_vertex, floor=1),
        (upstream_nulls, lambda i: "field 'upstream_vertex_ids' holds a null or empty id"),
        (
            bad_release,
            lambda i: (
                f"field 'flink_version' is {col['flink_version'][i].as_py()!r}: expected a Flink "
                "release like 1.15.4 or 2.3.0"
            ),
        ),
        negative("max_parallelism", is_vertex, floor=1),
        (strategies_nulls, lambda i: "field 'input_ship_strategies' holds a null or empty name"),
        (
            strategies_count,
            lambda i: (
                f"field 'input_ship_strategies' has {len(strategies[i].as_py())} names for "
                f"{len(col['upstream_vertex_ids'][i].as_py() or [])} upstream vertices: one per "
                "entry of upstream_vertex_ids"
            ),
        ),
    ]
    if expired_before_ms is not None:
        reason = too_old_reason(expired_before_ms)
        rules.append((is_task & _less(table, "ts_ms", expired_before_ms), lambda i: reason))
    reasons: dict[int, str] = {}
    for mask, describe in rules:
        for i in np.flatnonzero(mask).tolist():
            if i not in reasons:
                reasons[i] = describe(i)
    return reasons
