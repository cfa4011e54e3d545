"""read_blocks (tidemark.ingest.files) against reading the file one line at a time."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.ingest import files

LINES = [b"", b"\r", b"  ", b"\t\r", b'{"a":1}', b'{"b":22}\r', b' {"c":3}', b'{"d":4} ', b"x\ry"]


def _by_line(content: bytes, per_block: int) -> list[tuple[list[bytes], list[int], int]]:
    """What read_blocks must give: (lines, numbers, lines_seen) per block, read one line at a time.

    A line is what lies between line breaks (the piece after a final break is no line); one
    trailing CR is dropped; a line of white space only is blank and skipped, but counted.
    """
    pieces = content.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    kept = [
        (number, piece[:-1] if piece.endswith(b"\r") else piece)
        for number, piece in enumerate(pieces, 1)
    ]
    kept = [(number, piece) for number, piece in kept if piece.strip()]
    blocks, first = [], 1
    for at in range(0, len(kept), per_block):
        chunk = kept[at : at + per_block]
        if len(chunk) < per_block:
            break
        blocks.append(([p for _, p in chunk], [n for n, _ in chunk], chunk[-1][0] - first + 1))
        first = chunk[-1][0] + 1
    rest = [(n, p) for n, p in kept if n >= first]
    if len(pieces) - first + 1 > 0:
        blocks.append(([p for _, p in rest], [n for n, _ in rest], len(pieces) - first + 1))
    return blocks


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.sampled_from(LINES), max_size=40),
    final_break=st.booleans(),
    per_block=st.integers(1, 7),
    read_bytes=st.sampled_from([1, 3, 16, 1 << 20]),
    compressed=st.booleans(),
)
def test_blocks_hold_the_non_blank_lines_with_their_numbers(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    lines: list[bytes],
    final_break: bool,
    per_block: int,
    read_bytes: int,
    compressed: bool,
) -> None:
    content = b"\n".join(lines) + (b"\n" if final_break and lines else b"")
    path = tmp_path / ("events.jsonl.gz" if compressed else "events.jsonl")
    path.write_bytes(gzip.compress(content) if compressed else content)
    monkeypatch.setattr(files, "READ_BYTES", read_bytes)

    blocks = list(files.read_blocks(path, per_block))

    assert [(b.lines, b.numbers.tolist(), b.lines_seen) for b in blocks] == _by_line(
        content, per_block
    )
    for block in blocks:  # each line starts where the block says, in the joined buffer
        assert len(block.starts) == len(block)
        for line, start in zip(block.lines, block.starts.tolist(), strict=True):
            assert block.data[start : start + len(line)] == line
