"""Watermarks: the sources' event-time clocks, the channels, and the maps' valves.

Each source subtask sends its watermark (and ``IDLE`` / ``ACTIVE`` when it stops and resumes) on
a FIFO channel to every map subtask; each map attempt runs a StatusWatermarkValve (rules W1-W4,
S1-S3, flink-semantics.md section 4) over what it receives and forwards every emission to every
sink subtask. See :mod:`tidemark.generate` for the details.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from tidemark.generate.plan import (
    _ROLE_MAP,
    _ROLE_SINK,
    STEP_MS,
    WATERMARK_INTERVAL_MS,
    _Plan,
    _Task,
)
from tidemark.generate.queues import _smooth_noise, _targets
from udfs.valve import StatusWatermarkValve

_WATERMARK_BOUND_MS: Final = 2_000  # bounded out-of-orderness of the sources
_WATERMARK_JITTER_MS: Final = 800
_STALE_WATERMARK_P: Final = 0.003

# Channel event kinds; a status sent at the same tick as a watermark goes first.
_EV_IDLE, _EV_ACTIVE, _EV_WM = 0, 1, 2
_STATUS_NAMES: Final = ("IDLE", "ACTIVE")  # by channel event kind
_STATUS_KINDS: Final = {"IDLE": _EV_IDLE, "ACTIVE": _EV_ACTIVE}


@dataclass
class _ChannelEvents:
    """Events on one channel in channel (FIFO) order: receive times, kinds, values."""

    ts: NDArray[np.int64]
    kind: NDArray[np.int64]
    val: NDArray[np.int64]


def _deliver(
    sent_ts: NDArray[np.int64],
    kind: NDArray[np.int64],
    val: NDArray[np.int64],
    rng: np.random.Generator,
) -> _ChannelEvents:
    """What the downstream task receives for events sent in this order on one channel.

    Each event takes 1-19 ms, never overtaking an earlier one (channels are FIFO). Rarely a
    watermark is followed by a stale repeat of a lower value, which the valve ignores (W2).
    """
    ts = np.maximum.accumulate(sent_ts + rng.integers(1, 20, size=sent_ts.size))
    pick = (kind == _EV_WM) & (rng.random(sent_ts.size) < _STALE_WATERMARK_P)
    if pick.any():
        at = np.flatnonzero(pick) + 1
        stale = val[pick] - rng.integers(0, 1000, size=at.size)
        ts = np.insert(ts, at, ts[pick])
        kind = np.insert(kind, at, _EV_WM)
        val = np.insert(val, at, stale)
    return _ChannelEvents(ts, kind, val)


def _source_channels(
    plan: _Plan, lag_ms: list[NDArray[np.float64]], rng: np.random.Generator
) -> tuple[list[list[_ChannelEvents]], dict[str, int | None] | None]:
    """What each map subtask receives on each of its channels (``[map][channel]``).

    A source's watermark is its processing time minus a bounded random delay minus its lag; it
    is sent every :data:`WATERMARK_INTERVAL_MS` when it has advanced. A stopped source sends
    ``IDLE`` at its first tick after the stop and ``ACTIVE`` (then its watermark) at its first
    tick after the resume. Also returns the stop's ground truth.
    """
    ps, pm, _ = plan.parallelism
    out: list[list[_ChannelEvents]] = [[] for _ in range(pm)]
    truth: dict[str, int | None] | None = None
    targets = _targets(plan.map_inputs, ps)
    for i in range(ps):
        phase = int(rng.integers(0, WATERMARK_INTERVAL_MS))
        tick = np.arange(plan.start_ms + phase, plan.end_ms, WATERMARK_INTERVAL_MS, dtype=np.int64)
        step = (tick - plan.start_ms) // STEP_MS
        jitter = _WATERMARK_JITTER_MS * np.clip(_smooth_noise(rng, tick.size, 0.25, 25), 0.5, 1.5)
        wm = tick - _WATERMARK_BOUND_MS - np.round(jitter + lag_ms[i][step]).astype(np.int64)
        cur = np.maximum.accumulate(wm)
        send = np.ones(tick.size, dtype=bool)
        send[1:] = cur[1:] > cur[:-1]
        st_ts: list[int] = []
        st_kind: list[int] = []
        if i == plan.stopped_source:
            stop_ms, resume_ms = (plan.step_ms(s) for s in plan.stop_steps)
            idle_at = int(np.searchsorted(tick, stop_ms))
            active_at = int(np.searchsorted(tick, resume_ms))
            send[idle_at:active_at] = False
            st_ts.append(int(tick[idle_at]))
            st_kind.append(_EV_IDLE)
            if active_at < tick.size:
                send[active_at] = True
                st_ts.append(int(tick[active_at]))
                st_kind.append(_EV_ACTIVE)
            truth = {
                "stop_ms": stop_ms,
                "resume_ms": resume_ms,
                "idle_status_sent_ms": st_ts[0],
                "active_status_sent_ms": st_ts[1] if len(st_ts) > 1 else None,
            }
        sent_ts = np.concatenate([tick[send], np.asarray(st_ts, dtype=np.int64)])
        kind = np.concatenate(
            [np.full(int(send.sum()), _EV_WM), np.asarray(st_kind, dtype=np.int64)]
        )
        val = np.concatenate([cur[send], np.zeros(len(st_ts), dtype=np.int64)])
        order = np.lexsort((kind, sent_ts))
        sent_ts, kind, val = sent_ts[order], kind[order], val[order]
        for j, _ in targets[i]:  # sources in index order: each map's channels in order
            out[j].append(_deliver(sent_ts, kind, val, rng))
    return out, truth


def _merge_channels(
    channels: list[_ChannelEvents], lo: int, hi: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """The events of all channels received in ``[lo, hi)``, in the order a task takes them.

    By time, then channel index; a channel's own order is kept. Returns (ts, kind, val, channel).
    """
    ts, kind, val, ch, pos = [], [], [], [], []
    for c, ev in enumerate(channels):
        sel = (ev.ts >= lo) & (ev.ts < hi)
        ts.append(ev.ts[sel])
        kind.append(ev.kind[sel])
        val.append(ev.val[sel])
        ch.append(np.full(int(sel.sum()), c, dtype=np.int64))
        pos.append(np.flatnonzero(sel))
    order = np.lexsort((np.concatenate(pos), np.concatenate(ch), np.concatenate(ts)))
    return (
        np.concatenate(ts)[order],
        np.concatenate(kind)[order],
        np.concatenate(val)[order],
        np.concatenate(ch)[order],
    )


def _channel_codes(
    kind: NDArray[np.int64],
    ch: NDArray[np.int64],
    n_ch: int,
    status_base: dict[tuple[int, int, str], int],
    wm_base: dict[tuple[int, int], int],
) -> NDArray[np.int64]:
    """Line tail codes of channel events."""
    table = np.array(
        [
            [status_base[(n_ch, c, "IDLE")] for c in range(n_ch)],
            [status_base[(n_ch, c, "ACTIVE")] for c in range(n_ch)],
            [wm_base[(n_ch, c)] for c in range(n_ch)],
        ]
    )
    return table[kind, ch]


def _add_watermark_events(
    plan: _Plan,
    tasks: list[_Task],
    lag_ms: list[NDArray[np.float64]],
    rng: np.random.Generator,
    status_base: dict[tuple[int, int, str], int],
    wm_base: dict[tuple[int, int], int],
) -> dict[str, int | None] | None:
    """Append the maps' and sinks' watermark and status events; return the stop truth.

    Each map attempt runs a valve over what it receives and forwards every emission, in order,
    to every sink subtask.
    """
    _, pm, pk = plan.parallelism
    to_map, stop_truth = _source_channels(plan, lag_ms, rng)
    emitted: list[list[tuple[int, int, int]]] = [[] for _ in range(pm)]  # per map (ts, kind, val)
    for task in tasks:
        if task.role != _ROLE_MAP:
            continue
        j = task.subtask
        sources = plan.map_inputs[j]
        ts, kind, val, ch = _merge_channels(to_map[j], task.start_ms, task.end_ms)
        if task.attempt > 0 and plan.stopped_source in sources:
            # A restarted attempt learns which of its inputs are idle when it connects.
            a, b = (plan.step_ms(s) for s in plan.stop_steps)
            if a <= task.start_ms < b:
                ts = np.insert(ts, 0, task.start_ms)
                kind = np.insert(kind, 0, _EV_IDLE)
                val = np.insert(val, 0, 0)
                ch = np.insert(ch, 0, sources.index(plan.stopped_source))
        task.ts.append(ts)
        task.code.append(_channel_codes(kind, ch, len(sources), status_base, wm_base))
        task.val.append(np.where(kind == _EV_WM, val, 0))
        # The product's valve, default semantics: Flink 1.13 to 2.0, rules W1-W4 and S1-S3.
        valve = StatusWatermarkValve(len(sources))
        out = emitted[j]
        for t_ev, k_ev, v_ev, c_ev in zip(
            ts.tolist(), kind.tolist(), val.tolist(), ch.tolist(), strict=True
        ):
            if k_ev == _EV_WM:
                emissions = valve.input_watermark(c_ev, v_ev)
            else:
                emissions = valve.input_status(c_ev, _STATUS_NAMES[k_ev])
            for _, value in emissions:  # ("watermark", w) or ("status", "IDLE" | "ACTIVE")
                if isinstance(value, int):
                    out.append((t_ev, _EV_WM, value))
                else:
                    out.append((t_ev, _STATUS_KINDS[value], 0))

    to_sink: list[list[_ChannelEvents]] = [[] for _ in range(pk)]  # [sink][channel]
    for j, targets in enumerate(_targets(plan.sink_inputs, pm)):
        em = np.asarray(emitted[j], dtype=np.int64).reshape(-1, 3)
        for k, _ in targets:  # maps in index order: each sink's channels in order
            to_sink[k].append(_deliver(em[:, 0], em[:, 1], em[:, 2], rng))
    for task in tasks:
        if task.role != _ROLE_SINK:
            continue
        k = task.subtask
        ts, kind, val, ch = _merge_channels(to_sink[k], task.start_ms, task.end_ms)
        task.ts.append(ts)
        n_ch = len(plan.sink_inputs[k])
        task.code.append(_channel_codes(kind, ch, n_ch, status_base, wm_base))
        task.val.append(np.where(kind == _EV_WM, val, 0))
    return stop_truth
