"""Reading event files: finding them, fingerprinting their content, streaming their lines.

A file is read twice. The first pass hashes the bytes as stored (the content's identity for
"exactly once per file content") and, for gzip, decompresses to the end so that a corrupt or
truncated archive is refused before anything of it lands. The second pass streams the lines in
bounded blocks, so memory does not grow with the file.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = (".jsonl", ".jsonl.gz")
READ_BYTES = 8 << 20
_GZIP_MAGIC = b"\x1f\x8b"


class UnreadableFile(Exception):
    """The file cannot be read at all (missing, not permitted, corrupt archive)."""


def find_files(paths: list[Path]) -> list[Path]:
    """Expand folders to the event files in them (sorted); keep named files as they are."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
            )
        else:
            found.append(path)
    return found


def is_gzip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(2) == _GZIP_MAGIC


@dataclass(frozen=True)
class Fingerprint:
    sha256: str
    stored_bytes: int


def fingerprint(path: Path, on_bytes: Callable[[int], None] = lambda n: None) -> Fingerprint:
    """Hash the stored bytes; for gzip, also prove the archive decompresses to its end."""
    digest = hashlib.sha256()
    total = 0
    try:
        inflater = _Inflater() if is_gzip(path) else None
        with path.open("rb") as handle:
            while block := handle.read(READ_BYTES):
                digest.update(block)
                total += len(block)
                on_bytes(len(block))
                if inflater is not None:
                    inflater.feed(block)
        if inflater is not None and inflater.mid_member:
            raise UnreadableFile(f"{path}: gzip archive is truncated (ends mid-stream)")
    except zlib.error as exc:
        raise UnreadableFile(f"{path}: corrupt gzip archive ({exc})") from exc
    except OSError as exc:
        raise UnreadableFile(f"{path}: {exc.strerror or exc}") from exc
    return Fingerprint(digest.hexdigest(), total)


class _Inflater:
    """Decompresses a gzip stream of one or more members, keeping nothing but its position."""

    def __init__(self) -> None:
        self._member = zlib.decompressobj(wbits=31)
        self.mid_member = False

    def feed(self, data: bytes) -> None:
        while data:
            self.mid_member = True
            self._member.decompress(data)
            if not self._member.eof:
                return
            data = self._member.unused_data
            self._member = zlib.decompressobj(wbits=31)
            self.mid_member = False


@dataclass
class Block:
    """Non-blank lines of one stretch of a file, with their 1-based line numbers."""

    lines: list[bytes]
    numbers: list[int]
    lines_seen: int  # all lines of the stretch, blank ones included


def read_blocks(
    path: Path, lines_per_block: int, on_bytes: Callable[[int], None] = lambda n: None
) -> Iterator[Block]:
    """Stream ``path`` (plain or gzip) as blocks of at most ``lines_per_block`` non-blank lines.

    Block boundaries depend only on the content, so a re-run after a crash cuts the same blocks.
    """
    try:
        raw = path.open("rb")
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if is_gzip(path) else raw
        with raw, stream:
            carry = b""
            number = 0
            seen_until = 0
            block_first = 1  # line number where the current block starts
            block = Block([], [], 0)
            position = 0
            while True:
                data = stream.read(READ_BYTES)
                now = raw.tell()
                on_bytes(now - position)
                position = now
                if data:
                    pieces = (carry + data).split(b"\n")
                    carry = pieces.pop()
                else:
                    pieces = [carry] if carry else []
                if any(p.endswith(b"\r") for p in pieces):
                    pieces = [p[:-1] if p.endswith(b"\r") else p for p in pieces]
                kept = [(i, p) for i, p in enumerate(pieces, number + 1) if p.strip()]
                number += len(pieces)
                seen_until = number  # lines counted so far
                start = 0
                while start < len(kept):
                    room = lines_per_block - len(block.lines)
                    take = kept[start : start + room]
                    block.lines.extend(p for _, p in take)
                    block.numbers.extend(i for i, _ in take)
                    start += len(take)
                    if len(block.lines) >= lines_per_block:
                        last = block.numbers[-1]
                        block.lines_seen = last - block_first + 1
                        yield block
                        block_first = last + 1
                        block = Block([], [], 0)
                if not data:
                    break
            block.lines_seen = seen_until - block_first + 1
            if block.lines_seen > 0 and (block.lines or block_first <= seen_until):
                yield block
    except (OSError, EOFError, zlib.error) as exc:
        raise UnreadableFile(f"{path}: {exc}") from exc
