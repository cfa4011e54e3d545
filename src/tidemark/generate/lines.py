"""Fast JSON Lines writing: the events' lines built as byte matrices with numpy.

A line is a head (type and task), ``seq``, ``"ts_ms"`` and a tail (the rest of the record, one of
a small table); :class:`_LineBuilder` assembles them column-wise and :func:`_write_events` orders
all lines by arrival and writes them, a second thread doing the disk writes.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Final

import numpy as np
from numpy.typing import NDArray

from tidemark.generate.plan import _Plan, _Task
from tidemark.generate.queues import _TIMER_NAMES

_ARRIVAL_JITTER_MS: Final = 300
_WRITE_CHUNK: Final = 100_000


def _tail_table(
    plan: _Plan,
) -> tuple[list[str], dict[tuple[int, int, str], int], dict[tuple[int, int], int], int]:
    """Line tails after ``"ts_ms":<ts>``: timers first, then statuses, then watermarks."""
    tails = [
        f',"timer":"{name}","action":"{action}"}}'
        for name in _TIMER_NAMES
        for action in ("start", "end")
    ]
    status_base: dict[tuple[int, int, str], int] = {}
    wm_base: dict[tuple[int, int], int] = {}
    channel_sets = sorted({len(reads) for reads in (*plan.map_inputs, *plan.sink_inputs)})
    for n_ch in channel_sets:
        for ch in range(n_ch):
            for st in ("IDLE", "ACTIVE"):
                status_base[(n_ch, ch, st)] = len(tails)
                tails.append(
                    f',"input_index":0,"channel_index":{ch},"num_channels":{n_ch},"status":"{st}"}}'
                )
    wm_start = len(tails)
    for n_ch in channel_sets:
        for ch in range(n_ch):
            wm_base[(n_ch, ch)] = len(tails)
            tails.append(
                f',"input_index":0,"channel_index":{ch},"num_channels":{n_ch},"watermark_ms":'
            )
    return tails, status_base, wm_base, wm_start


def _digit_tables() -> NDArray[np.uint32]:
    """Every 4-digit group as 4 ASCII bytes packed in a uint32, in three tables of 10,000.

    Table 0 keeps leading zeros ("0042"). Table 1 (a group whose higher groups are all zero)
    has NUL bytes instead of leading zeros and all NULs for 0; table 2 is the same for the last
    group, where 0 stays "0".
    """
    i = np.arange(10_000)
    full = np.stack([(i // 10**p) % 10 + ord("0") for p in (3, 2, 1, 0)], axis=1).astype(np.uint8)
    last = full.copy()
    for p, col in zip((3, 2, 1), range(3), strict=True):
        last[i < 10**p, col] = 0
    mid = last.copy()
    mid[0] = 0
    return np.ascontiguousarray(np.concatenate([full, mid, last])).view(np.uint32)[:, 0]


_DIGITS4: Final = _digit_tables()
_TS_MS_KEY: Final = np.frombuffer(b',"ts_ms":', dtype=np.uint8)


def _text_matrix(texts: list[str]) -> NDArray[np.uint8]:
    """ASCII strings as rows of a zero-padded byte matrix."""
    width = max(len(t) for t in texts)
    mat = np.zeros((len(texts), width), dtype=np.uint8)
    for row, text in enumerate(texts):
        mat[row, : len(text)] = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return mat


def _put_digits(block: NDArray[np.uint8], x: NDArray[np.int64]) -> None:
    """Write the non-negative ``x`` as decimal digits, right-aligned, into ``block`` (n x width).

    Leading positions become 0 bytes (dropped when the lines are assembled); ``width`` must be
    at least the number of digits of ``x.max()``.
    """
    width = block.shape[1]
    groups = -(-width // 4)
    packed = np.empty((x.size, groups), dtype=np.uint32)
    lead: NDArray[np.bool_] | None = None  # all higher groups are zero
    for g in range(groups):
        div = 10 ** (4 * (groups - 1 - g))
        part = x // div if g == 0 else (x // div) % 10_000
        table = 20_000 if g == groups - 1 else 10_000
        packed[:, g] = _DIGITS4[part + table if lead is None else part + lead * table]
        lead = (part == 0) if lead is None else (lead & (part == 0))
    block[:] = packed.view(np.uint8)[:, 4 * groups - width :]


class _LineBuilder:
    """Builds the JSON lines of a chunk of events column-wise in a reused byte matrix.

    A line is ``heads[head]`` ``seq`` ``,"ts_ms":`` ``ts`` ``tails[code]``, then for a watermark
    (``code >= wm_start``) its value and ``}``. Every column block is written for every row, with
    0 bytes for padding and leading zeros, which are dropped at the end. Numbers must be
    non-negative and no wider than the widths given (the generator never makes others).
    """

    def __init__(
        self,
        heads: list[str],
        tails: list[str],
        wm_start: int,
        *,
        max_seq: int,
        max_ts: int,
        max_val: int,
        rows: int,
    ) -> None:
        self.heads, self.tails, self.wm_start = _text_matrix(heads), _text_matrix(tails), wm_start
        self.w_seq, self.w_ts, self.w_val = (len(str(x)) for x in (max_seq, max_ts, max_val))
        lh, lt = self.heads.shape[1], self.tails.shape[1]
        width = lh + self.w_seq + _TS_MS_KEY.size + self.w_ts + lt + self.w_val + 2
        self.buf = np.empty((rows, width), dtype=np.uint8)
        c = np.cumsum([0, lh, self.w_seq, _TS_MS_KEY.size, self.w_ts, lt, self.w_val])
        self.cols = [slice(int(a), int(b)) for a, b in zip(c[:-1], c[1:], strict=True)]

    def build(
        self,
        head: NDArray[np.int64],
        seq: NDArray[np.int64],
        ts: NDArray[np.int64],
        code: NDArray[np.int64],
        val: NDArray[np.int64],
    ) -> NDArray[np.uint8]:
        """The lines' bytes (a new array, safe to hand to another thread)."""
        buf = self.buf[: head.size]
        c_head, c_seq, c_key, c_ts, c_tail, c_val = self.cols
        buf[:, c_head] = self.heads[head]
        _put_digits(buf[:, c_seq], seq)
        buf[:, c_key] = _TS_MS_KEY
        _put_digits(buf[:, c_ts], ts)
        buf[:, c_tail] = self.tails[code]
        is_wm = code >= self.wm_start
        _put_digits(buf[:, c_val], val)
        buf[:, c_val] *= is_wm[:, None]  # no value on the other lines
        buf[:, -2] = is_wm * ord("}")
        buf[:, -1] = ord("\n")
        flat = buf.ravel()
        return flat[flat != 0]


def _write_events(
    plan: _Plan,
    tasks: list[_Task],
    tails: list[str],
    wm_start: int,
    out_dir: Path,
    rng: np.random.Generator,
    *,
    per_file: int,
    span_ms: int | None = None,
) -> tuple[list[Path], dict[str, int], list[int]]:
    """Number each task's events (``seq``), order all lines by arrival and write the files.

    At most ``per_file`` lines go into one ``events-NNNNN.jsonl`` file. With ``span_ms``, a
    new file also starts at every ``span_ms`` of arrival time from the run's start, as a capture
    that rolls its file on time would write them; lines arriving after the run's end go into
    the last span. Returns the files, the lines per record type and each file's span (0 without
    ``span_ms``).
    """
    n_tasks = len(tasks)
    heads: list[str] = []
    for type_name in ("timer", "watermark_status", "watermark"):
        for task in tasks:
            heads.append(
                f'{{"type":"{type_name}","job_id":"{plan.job_id}",'
                f'"vertex_id":"{plan.vertex_ids[task.role]}","subtask_index":{task.subtask},'
                f'"attempt":{task.attempt},"seq":'
            )
    all_ts, all_code, all_val, all_seq, all_head = [], [], [], [], []
    for t_idx, task in enumerate(tasks):
        if not task.ts:
            continue
        ts = np.concatenate(task.ts)
        code = np.concatenate(task.code).astype(np.int32)
        val = np.concatenate(task.val)
        task.ts, task.code, task.val = [], [], []  # free as we go
        order = np.argsort(ts, kind="stable")  # timers first at equal ms, each part in order
        ts, code, val = ts[order], code[order], val[order]
        kind = np.where(code < 2 * len(_TIMER_NAMES), 0, np.where(code < wm_start, 1, 2))
        all_ts.append(ts)
        all_code.append(code)
        all_val.append(val)
        all_seq.append(np.arange(ts.size, dtype=np.int64))
        all_head.append((kind * n_tasks + t_idx).astype(np.int32))
    ts = np.concatenate(all_ts)
    code = np.concatenate(all_code)
    val = np.concatenate(all_val)
    seq = np.concatenate(all_seq)
    head = np.concatenate(all_head)
    del all_ts, all_code, all_val, all_seq, all_head
    arrival = ts + rng.integers(0, _ARRIVAL_JITTER_MS, size=ts.size)
    order = np.argsort(arrival, kind="stable")
    ranges = _file_ranges(arrival[order], plan, per_file, span_ms)
    del arrival

    n_timer = int(np.count_nonzero(code < 2 * len(_TIMER_NAMES)))
    n_wm = int(np.count_nonzero(code >= wm_start))
    counts = {"timer": n_timer, "watermark": n_wm, "watermark_status": ts.size - n_timer - n_wm}

    builder = _LineBuilder(
        heads,
        tails,
        wm_start,
        max_seq=int(seq.max()),
        max_ts=int(ts.max()),
        max_val=int(val.max()),
        rows=min(_WRITE_CHUNK, ts.size),
    )
    files: list[Path] = []
    # One writer thread overlaps the disk writes with building the next chunk; the writes keep
    # their order, so the bytes do not depend on timing.
    with ThreadPoolExecutor(max_workers=1) as writer:
        for f_no, (f_start, f_end, _) in enumerate(ranges):
            path = out_dir / f"events-{f_no:05d}.jsonl"
            files.append(path)
            with path.open("wb") as fh:
                pending: Future[int] | None = None
                try:
                    for c_start in range(f_start, f_end, _WRITE_CHUNK):
                        idx = order[c_start : min(c_start + _WRITE_CHUNK, f_end)]
                        data = builder.build(head[idx], seq[idx], ts[idx], code[idx], val[idx])
                        if pending is not None:
                            pending.result()
                        pending = writer.submit(fh.write, memoryview(data))
                finally:
                    if pending is not None:
                        pending.result()
    return files, counts, [span for _, _, span in ranges]


def _file_ranges(
    arrival: NDArray[np.int64], plan: _Plan, per_file: int, span_ms: int | None
) -> list[tuple[int, int, int]]:
    """``(first line, end line, span)`` of each file, for lines sorted by ``arrival``."""
    n = arrival.size
    if span_ms is None:
        return [(a, min(a + per_file, n), 0) for a in range(0, n, per_file)]
    n_spans = -(-(plan.end_ms - plan.start_ms) // span_ms)
    cuts = np.searchsorted(arrival, plan.start_ms + span_ms * np.arange(1, n_spans))
    bounds = [0, *cuts.tolist(), n]
    return [
        (a, min(a + per_file, hi), span)
        for span, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False))
        for a in range(lo, hi, per_file)
    ]
