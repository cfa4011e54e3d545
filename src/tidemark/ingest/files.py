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
from functools import cached_property
from pathlib import Path

import numpy as np

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


class Block:
    """Non-blank lines of one stretch of a file, with their 1-based line numbers.

    The lines are held as one buffer, joined by ``\\n`` (a line never holds one), because that is
    what Arrow's JSON reader takes; :attr:`lines` splits it only when a line is needed alone.
    """

    def __init__(
        self, data: bytes, numbers: np.ndarray, starts: np.ndarray, lines_seen: int
    ) -> None:
        self.data = data
        self.numbers = numbers
        self.starts = starts  # where each line starts in data
        self.lines_seen = lines_seen  # all lines of the stretch, blank ones included

    def __len__(self) -> int:
        return len(self.numbers)

    @cached_property
    def lines(self) -> list[bytes]:
        return self.data.split(b"\n") if len(self.numbers) else []


@dataclass
class _Kept:
    """The non-blank lines of one read, joined, with each one's number and offset in ``data``."""

    data: bytes
    numbers: np.ndarray
    starts: np.ndarray
    seen: int  # lines in the read, blank ones included

    def span(self, first: int, stop: int) -> bytes:
        end = self.starts[stop] - 1 if stop < len(self.starts) else len(self.data)
        return self.data[self.starts[first] : end]


def _kept_lines(body: bytes, first_number: int) -> _Kept:
    """The non-blank lines of ``body`` (whole lines joined by ``\\n``), a trailing CR dropped.

    A line that starts with ``{`` and does not end in CR is kept as it is, found with NumPy; only
    the others (blank, CRLF, leading white space) are looked at one by one, in Python.
    """
    raw = np.frombuffer(body, dtype=np.uint8)
    breaks = np.flatnonzero(raw == 0x0A)
    starts = np.concatenate(([0], breaks + 1))
    ends = np.concatenate((breaks, [raw.size]))
    numbers = np.arange(first_number, first_number + len(starts), dtype=np.int64)
    nonempty = ends > starts
    regular = nonempty.copy()
    regular[nonempty] = (raw[starts[nonempty]] == 0x7B) & (raw[ends[nonempty] - 1] != 0x0D)
    if regular.all():
        return _Kept(body, numbers, starts, len(starts))
    keep = regular.copy()
    pieces: dict[int, bytes] = {}
    for i in np.flatnonzero(~regular).tolist():
        piece = body[starts[i] : ends[i]]
        if piece.endswith(b"\r"):
            piece = piece[:-1]
        if piece.strip():
            keep[i] = True
            pieces[i] = piece
    kept = np.flatnonzero(keep)
    lines = [pieces[i] if i in pieces else body[starts[i] : ends[i]] for i in kept.tolist()]
    data = b"\n".join(lines)
    lengths = np.fromiter((len(line) + 1 for line in lines), dtype=np.int64, count=len(lines))
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])) if len(lines) else lengths
    return _Kept(data, numbers[kept], offsets, len(starts))


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
            number = 0  # lines seen so far
            block_first = 1  # line number where the current block starts
            parts: list[bytes] = []
            numbers: list[np.ndarray] = []
            starts: list[np.ndarray] = []
            held = 0  # lines in parts
            size = 0  # bytes in parts, with a line break after each
            position = 0
            while True:
                data = stream.read(READ_BYTES)
                now = raw.tell()
                on_bytes(now - position)
                position = now
                if data:
                    buffer = carry + data
                    cut = buffer.rfind(b"\n")
                    if cut < 0:
                        carry = buffer
                        continue
                    body, carry = buffer[:cut], buffer[cut + 1 :]
                elif carry:
                    body, carry = carry, b""
                else:
                    body = None
                if body is not None:
                    kept = _kept_lines(body, number + 1)
                    number += kept.seen
                    start = 0
                    while start < len(kept.numbers):
                        take = min(lines_per_block - held, len(kept.numbers) - start)
                        part = kept.span(start, start + take)
                        parts.append(part)
                        numbers.append(kept.numbers[start : start + take])
                        starts.append(kept.starts[start : start + take] - kept.starts[start] + size)
                        held += take
                        size += len(part) + 1
                        start += take
                        if held >= lines_per_block:
                            last = int(numbers[-1][-1])
                            yield Block(
                                b"\n".join(parts),
                                np.concatenate(numbers),
                                np.concatenate(starts),
                                last - block_first + 1,
                            )
                            block_first = last + 1
                            parts, numbers, starts, held, size = [], [], [], 0, 0
                if not data:
                    break
            lines_seen = number - block_first + 1
            if lines_seen > 0 and (held or block_first <= number):
                none = np.zeros(0, dtype=np.int64)
                yield Block(
                    b"\n".join(parts),
                    np.concatenate(numbers) if numbers else none,
                    np.concatenate(starts) if starts else none,
                    lines_seen,
                )
    except (OSError, EOFError, zlib.error) as exc:
        raise UnreadableFile(f"{path}: {exc}") from exc
