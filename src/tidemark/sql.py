"""``tidemark sql``: run one Spark SQL statement against the lake and print the result."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import json
import sys
from collections.abc import Iterable, Sequence
from typing import IO

FORMATS = ("table", "csv", "jsonl")


def _plain(value: object) -> object:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return _plain(value.asDict(recursive=True))
    return value


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    plain = _plain(value)
    if isinstance(plain, list | dict):
        return json.dumps(plain, ensure_ascii=False)
    return str(plain)


def write_rows(
    columns: Sequence[str], rows: Iterable[Sequence[object]], fmt: str, out: IO[str] = sys.stdout
) -> int:
    """Print ``rows`` in ``fmt``; returns how many were printed."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    count = 0
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if v is None else _cell(v) for v in row])
            count += 1
    elif fmt == "jsonl":
        for row in rows:
            record = {c: _plain(v) for c, v in zip(columns, row, strict=True)}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    else:
        cells = [[_cell(v) for v in row] for row in rows]
        count = len(cells)
        widths = [len(c) for c in columns]
        for row in cells:
            widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
        line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        out.write(line + "\n")
        out.write("| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
        out.write(" |\n" + line + "\n")
        for row in cells:
            out.write("| " + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
            out.write(" |\n")
        out.write(line + "\n")
        out.write(f"({count} row{'s' if count != 1 else ''})\n")
    return count


def run_sql(spark, query: str, fmt: str = "table", out: IO[str] = sys.stdout) -> int:
    """Run ``query`` on ``spark`` and print its rows; returns the row count."""
    frame = spark.sql(query)
    columns = frame.columns
    return write_rows(columns, (tuple(r) for r in frame.toLocalIterator()), fmt, out)
