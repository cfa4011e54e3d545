"""The fast (Arrow) and slow (json) parsers agree, and the slow one names each problem."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.ingest import parse
from tidemark.ingest.parse import Parsed, parse_block, parse_line
from tidemark.ingest.schema import PARSED

FIELDS = PARSED.names

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=5,
)
field_values = st.one_of(
    json_values,
    st.integers(min_value=-(2**31) - 2, max_value=2**31 + 2),
    st.sampled_from(["timer", "watermark", "idle", "start", "IDLE", ""]),
    st.lists(st.one_of(st.text(max_size=3), st.none()), max_size=3),
)
records = st.dictionaries(st.sampled_from(FIELDS + ["other"]), field_values, max_size=8)


@st.composite
def raw_lines(draw: st.DrawFn) -> bytes:
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(st.binary(min_size=1, max_size=20)).replace(b"\n", b" ") or b"x"
    if choice == 1:
        return json.dumps(draw(json_values)).encode()
    text = json.dumps(draw(records), ensure_ascii=draw(st.booleans()))
    return text.encode("utf-8", errors="surrogatepass")


def _parse(lines: list[bytes]) -> Parsed:
    return parse_block(b"\n".join(lines), len(lines), lambda: lines)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(raw_lines(), min_size=1, max_size=30), st.sampled_from([16, 64, 4 << 20]))
def test_fast_path_accepts_only_what_the_slow_path_accepts_with_equal_values(
    lines: list[bytes], arrow_block_bytes: int
) -> None:
    """Arrow's blocks as small as a line, or holding the whole buffer, type the same rows."""
    lines = [ln for ln in lines if ln.strip()] or [b"{}"]
    saved, parse.ARROW_BLOCK_BYTES = parse.ARROW_BLOCK_BYTES, arrow_block_bytes
    try:
        fast = parse._fast(b"\n".join(lines), len(lines))
    finally:
        parse.ARROW_BLOCK_BYTES = saved
    slow = [parse_line(ln) for ln in lines]
    if fast is None:
        return  # the block goes down the slow path: nothing to compare
    assert all(isinstance(r, dict) for r in slow), "Arrow accepted a line json refuses"
    assert fast.to_pylist() == slow


@pytest.mark.parametrize(
    "line",
    [
        b'{"upstream_vertex_ids": [null, ""]}',
        b'{"upstream_vertex_ids": [null, "a"]}',
        b'{"type": "vertex", "upstream_vertex_ids": [null, null, "a", "b"]}',
    ],
)
def test_a_list_arrow_infers_wrongly_is_read_strictly(line: bytes) -> None:
    """pyarrow 26's inference drops a list's leading nulls (an invalid array): the block is
    read again with every field explicit, with the values json gives, instead of failing."""
    lines = [json.dumps({"type": "timer", "seq": i}).encode() for i in range(300)] + [line]
    result = _parse(lines)
    assert result.failures == [] and result.table.num_rows == len(lines)
    assert result.table.slice(300).to_pylist() == [parse_line(line)]


def test_blocks_with_a_bad_line_are_split_and_only_that_line_fails(monkeypatch) -> None:
    monkeypatch.setattr(parse, "SLOW_PATH_BELOW", 4)
    good = json.dumps({"type": "timer", "seq": 1}).encode()
    lines = [good] * 40 + [b'{"seq": 1.5}'] + [good] * 40
    result = _parse(lines)
    assert result.failures == [(40, "field 'seq' must be an integer, got number 1.5")]
    assert result.rows == [i for i in range(81) if i != 40]
    assert result.table.num_rows == 80


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"not json", "malformed JSON: Expecting value at column 1"),
        (b'{"seq": 1', "malformed JSON: Expecting ',' delimiter at column 10"),
        (b"[1, 2]", "line is a JSON array, not an object"),
        (b'"text"', "line is a JSON string, not an object"),
        (b'{"seq": 1} {"seq": 2}', "malformed JSON: Extra data at column 12"),
        (b'{"seq": "1"}', "field 'seq' must be an integer, got string \"1\""),
        (b'{"seq": true}', "field 'seq' must be an integer, got boolean true"),
        (b'{"seq": 2.0}', "field 'seq' must be an integer, got number 2.0"),
        (
            b'{"seq": 9223372036854775808}',
            "field 'seq' is out of range for a signed 64-bit integer: 9223372036854775808",
        ),
        (
            b'{"subtask_index": 2147483648}',
            "field 'subtask_index' is out of range for a signed 32-bit integer: 2147483648",
        ),
        (b'{"job_id": 7}', "field 'job_id' must be a string, got number 7"),
        (b'{"job_id": "\\ud800"}', "field 'job_id' is not valid unicode (lone surrogate escape)"),
        (
            b'{"busy_time_enabled": "yes"}',
            "field 'busy_time_enabled' must be true or false, got string \"yes\"",
        ),
        (
            b'{"upstream_vertex_ids": "a"}',
            "field 'upstream_vertex_ids' must be an array of strings, got string \"a\"",
        ),
        (
            b'{"upstream_vertex_ids": [1]}',
            "field 'upstream_vertex_ids' must be an array of strings, has number 1",
        ),
        (b'{"seq": 1, "seq": 2}', "field 'seq' appears more than once"),
        (b"\xff\xfe{}", "line is not valid UTF-8 (byte 1)"),
    ],
)
def test_slow_path_reasons(raw: bytes, reason: str) -> None:
    assert parse_line(raw) == reason


def test_unicode_values_and_bom_are_kept() -> None:
    row = parse_line('\ufeff{"job_id": "jöb-数据", "vertex_id": "v\\u00e9"}'.encode())
    assert isinstance(row, dict)
    assert row["job_id"] == "jöb-数据" and row["vertex_id"] == "vé"


def test_null_means_absent_and_unknown_fields_are_ignored() -> None:
    row = parse_line(b'{"attempt": null, "extra": {"deep": [1, 2]}}')
    assert isinstance(row, dict)
    assert row["attempt"] is None and "extra" not in row


def test_lines_that_are_not_objects_never_reach_arrow() -> None:
    # A line holding only `null` crashes pyarrow 26's JSON reader; the block must be screened.
    lines = [b'{"seq": 1}'] * 300 + [b"null", b"  null  ", b"\xef\xbb\xbfnull"]
    result = _parse(lines)
    assert result.table.num_rows == 300
    assert [reason for _, reason in result.failures] == [
        "line is a JSON null, not an object"
    ] * 2 + ["line is a JSON null, not an object"]


def _fast_rows(lines: list[bytes]) -> list[dict] | None:
    fast = parse._fast(b"\n".join(lines), len(lines))
    return None if fast is None else fast.to_pylist()


@pytest.mark.parametrize(
    "line",
    [
        # Fields outside the common ones are inferred by Arrow; where Arrow's type carries other
        # values than PARSED's (a date string as a timestamp, a float, a huge integer as a
        # double), the block is read again strictly and typed as the slow path types it.
        b'{"type": "capture_gap", "reason": "2024-01-01T00:00:00"}',
        b'{"type": "vertex", "vertex_name": "2024-01-01", "parallelism": 4}',
        b'{"type": "vertex", "upstream_vertex_ids": [], "busy_time_enabled": false}',
        b'{"type": "capture_gap", "to_seq": 12, "to_ts_ms": null, "dropped": 3}',
        # An escaped key names the same field as the plain one.
        b'{"type": "capture_gap", "re\\u0061son": "full", "\\u0074o_seq": 2}',
        # Unknown fields are ignored, whatever their types from line to line.
        b'{"type": "timer", "other": 1}',
        b'{"type": "timer", "other": "x", "more": {"deep": [1.5]}}',
    ],
)
def test_fields_outside_the_common_ones_are_typed_as_the_slow_path_types_them(line: bytes) -> None:
    lines = [line, b'{"type": "timer", "seq": 1}']
    assert _fast_rows(lines) == [parse_line(ln) for ln in lines]


@pytest.mark.parametrize(
    "line",
    [
        b'{"type": "vertex", "parallelism": 2147483648}',  # int64 to Arrow, too big for int32
        b'{"type": "capture_gap", "dropped": 1.5}',
        b'{"type": "capture_gap", "to_seq": 99999999999999999999}',
        b'{"type": "capture_gap", "reason": 7}',
        b'{"type": "vertex", "upstream_vertex_ids": [1]}',
        b'{"type": "capture_gap", "reason": "a", "reason": "b"}',
    ],
)
def test_a_rare_field_of_the_wrong_type_is_refused_as_before(line: bytes) -> None:
    assert _fast_rows([line, b'{"type": "timer", "seq": 1}']) is None
    assert isinstance(parse_line(line), str)
