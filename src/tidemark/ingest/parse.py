"""Lines of JSON to a typed Arrow table (the ``PARSED`` schema), or a reason per line.

Two parsers with one meaning:

* the fast path hands a whole block of lines to Arrow's JSON reader with an explicit schema
  for the fields most lines have, keeps the rest Arrow infers where its type is PARSED's,
  and reads the block again with all of PARSED explicit where it is not;
* the slow path parses one line at a time with :mod:`json` and checks every contract field's type.

Arrow's reader is strict (it rejects floats, strings or booleans where an int is expected, out of
range numbers, repeated keys), so a block it accepts holds only lines the slow path accepts too,
with
the same values: ``tests/unit/test_parse.py`` checks that on generated lines. A block Arrow rejects
is split in halves and retried, down to small blocks that go through the slow path, so one bad line
costs little and is reported with its own reason.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from tidemark.ingest.schema import (
    BOOL_FIELDS,
    INT32_FIELDS,
    INT64_FIELDS,
    PARSED,
    STRING_FIELDS,
    STRING_LIST_FIELDS,
)

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_BOM = "\ufeff"
SLOW_PATH_BELOW = 256  # lines; a failing block smaller than this is parsed line by line

_KIND: dict[str, str] = {
    **{name: "string" for name in STRING_FIELDS},
    **{name: "int32" for name in INT32_FIELDS},
    **{name: "int64" for name in INT64_FIELDS},
    **{name: "bool" for name in BOOL_FIELDS},
    **{name: "string_list" for name in STRING_LIST_FIELDS},
}


@dataclass
class Parsed:
    """The outcome for a block of lines: typed rows, and the lines that could not be typed."""

    table: pa.Table  # PARSED schema, one row per line in ``rows``
    rows: list[int] = field(default_factory=list)  # index (into the block) of each table row
    failures: list[tuple[int, str]] = field(default_factory=list)  # (index, reason)


def parse_block(
    data: bytes,
    count: int,
    lines: Callable[[], Sequence[bytes]],
    starts: np.ndarray | None = None,
) -> Parsed:
    """Parse ``count`` non-blank lines joined by ``\\n`` as ``data``.

    ``lines`` gives them one by one, and is only called when Arrow refuses the whole block;
    ``starts`` (each line's offset in ``data``) saves finding the line breaks again.
    """
    out = Parsed(table=PARSED.empty_table())
    tables: list[pa.Table] = []
    _parse_block(lines, 0, count, tables, out, data, starts)
    if tables:
        out.table = pa.concat_tables(tables)
    return out


def _parse_block(
    lines: Callable[[], Sequence[bytes]],
    start: int,
    stop: int,
    tables: list[pa.Table],
    out: Parsed,
    data: bytes | None = None,  # the lines from start to stop, joined, when at hand
    starts: np.ndarray | None = None,  # and where each of them starts in data
) -> None:
    if stop <= start:
        return
    if stop - start >= SLOW_PATH_BELOW:
        if data is None:
            data = b"\n".join(lines()[start:stop])
        table = _fast(data, stop - start, starts)
        if table is not None:
            tables.append(table)
            out.rows.extend(range(start, stop))
            return
        middle = (start + stop) // 2
        _parse_block(lines, start, middle, tables, out)
        _parse_block(lines, middle, stop, tables, out)
        return
    typed: list[dict[str, object]] = []
    every = lines()
    for index in range(start, stop):
        result = parse_line(every[index])
        if isinstance(result, str):
            out.failures.append((index, result))
        else:
            typed.append(result)
            out.rows.append(index)
    if typed:
        tables.append(pa.Table.from_pylist(typed, schema=PARSED))


# Arrow's reader must only see lines that are one JSON object each: a line holding just `null`
# crashes pyarrow 26's JSON reader (segmentation fault). A block is screened first: every line
# must start with `{` and end with `}`, give or take white space and a byte-order mark.
def _looks_like_objects(data: bytes, starts: np.ndarray | None) -> int | None:
    """The length of the longest line, or None when a line is not one JSON object."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if raw.size == 0:
        return None
    if starts is None:
        starts = np.concatenate(([0], np.flatnonzero(raw == 0x0A) + 1))
    ends = np.concatenate((starts[1:] - 2, [raw.size - 1]))
    if (ends < starts).any():
        return None  # an empty line
    odd = np.flatnonzero((raw[starts] != 0x7B) | (raw[ends] != 0x7D))
    for k in odd.tolist():  # rare: white space or a BOM around the object, or not an object
        text = data[starts[k] : ends[k] + 1].strip()
        if text.startswith(b"\xef\xbb\xbf"):
            text = text[3:].lstrip()
        if not (text.startswith(b"{") and text.endswith(b"}")):
            return None
    return int((ends - starts).max()) + 1


# Arrow parses a buffer in blocks of this size on its own threads; a block must hold the longest
# line whole, so a block of longer lines gets blocks to match.
ARROW_BLOCK_BYTES = 4 << 20


# The fields of the lines a capture writes most (timer, watermark, watermark status and valve
# output records). Arrow's reader costs per field of its schema, absent or not: parsing with these
# and inferring the rest costs about a quarter less than parsing with all of PARSED.
_COMMON = pa.schema(
    [
        PARSED.field(name)
        for name in (
            "type", "job_id", "vertex_id", "subtask_index", "attempt", "seq", "ts_ms", "timer",
            "action", "published", "input_index", "channel_index", "num_channels",
            "watermark_ms", "status", "kind",
        )
    ]
)  # fmt: skip


def _fast(data: bytes, count: int, starts: np.ndarray | None = None) -> pa.Table | None:
    longest = _looks_like_objects(data, starts)
    if longest is None:
        return None
    block_size = max(ARROW_BLOCK_BYTES, 2 * longest + 2)
    table = _read(data, block_size, _COMMON, "infer")
    table = None if table is None else _conform(table)
    if table is None:  # a rare field Arrow typed its own way, or inferring failed: read strictly
        table = _read(data, block_size, PARSED, "ignore")
        table = None if table is None else table.select(PARSED.names).cast(PARSED)
    # Arrow reads two objects on one line as two rows; only a one-to-one block is trusted.
    if table is None or table.num_rows != count:
        return None
    return table


def _read(data: bytes, block_size: int, schema: pa.Schema, others: str) -> pa.Table | None:
    try:
        return pa_json.read_json(
            io.BytesIO(data),
            read_options=pa_json.ReadOptions(block_size=block_size),
            parse_options=pa_json.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior=others
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None


def _conform(table: pa.Table) -> pa.Table | None:
    """``table`` (read with ``_COMMON``, other fields inferred) in the PARSED schema, or None
    when an inferred field of PARSED is not exactly what reading it as PARSED gives.

    Inferred types that carry the same values: the field's own type, ``null`` (absent
    everywhere), a list of nulls for a list, and int64 for an int32 field when every value fits.
    Anything else (a date string typed as a timestamp, a float, a huge integer as a double) is
    left to the strict read, which accepts or refuses it as before. So is an inferred column that
    is not a valid array: pyarrow 26 infers ``[null, ""]`` as a list of strings whose values lost
    the null, and building the table from it raised instead of refusing.
    """
    columns = []
    for wanted in PARSED:
        if wanted.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, wanted.type))
            continue
        column = table[wanted.name]
        if wanted.name not in _COMMON.names and not _valid(column):
            return None
        if column.type == wanted.type:  # so is every field of _COMMON, read explicitly
            columns.append(column)
        elif column.type == pa.null() or (
            pa.types.is_list(wanted.type) and column.type == pa.list_(pa.null())
        ):
            columns.append(column.cast(wanted.type))
        elif wanted.type == pa.int32() and column.type == pa.int64():
            try:
                columns.append(column.cast(pa.int32()))
            except pa.ArrowInvalid:
                return None
        else:
            return None
    return pa.Table.from_arrays(columns, schema=PARSED)


def _valid(column: pa.ChunkedArray) -> bool:
    try:
        column.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


class _Object(dict):  # type: ignore[type-arg]
    repeated: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, object]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.repeated = tuple(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    return obj


def parse_line(raw: bytes) -> dict[str, object] | str:
    """One line to a dict of the ``PARSED`` fields, or the reason it cannot be typed."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"line is not valid UTF-8 (byte {exc.start + 1})"
    if text.startswith(_BOM):
        text = text[1:]
    try:
        obj = json.loads(text, object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        return f"malformed JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return "malformed JSON: nested too deeply"
    if not isinstance(obj, dict):
        return f"line is a JSON {_json_type(obj)}, not an object"
    for name in getattr(obj, "repeated", ()):
        if name in _KIND:
            return f"field '{name}' appears more than once"
    row: dict[str, object] = {}
    for name, kind in _KIND.items():
        value = obj.get(name)
        if value is None:
            row[name] = None
            continue
        problem = _type_problem(kind, value)
        if problem is not None:
            return f"field '{name}' {problem}"
        row[name] = value
    return row


def _type_problem(kind: str, value: object) -> str | None:
    if kind in ("int32", "int64"):
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer, got {_json_type(value)} {_show(value)}"
        low, high = _INT32 if kind == "int32" else _INT64
        if not low <= value <= high:
            bits = 32 if kind == "int32" else 64
            return f"is out of range for a signed {bits}-bit integer: {_show(value)}"
        return None
    if kind == "string":
        if not isinstance(value, str):
            return f"must be a string, got {_json_type(value)} {_show(value)}"
        return _unicode_problem(value)
    if kind == "bool":
        if not isinstance(value, bool):
            return f"must be true or false, got {_json_type(value)} {_show(value)}"
        return None
    if not isinstance(value, list):
        return f"must be an array of strings, got {_json_type(value)} {_show(value)}"
    for item in value:
        if item is not None and not isinstance(item, str):
            return f"must be an array of strings, has {_json_type(item)} {_show(item)}"
        if isinstance(item, str) and _unicode_problem(item):
            return "holds a string that is not valid unicode"
    return None


def _unicode_problem(value: str) -> str | None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid unicode (lone surrogate escape)"
    return None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _show(value: object, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
