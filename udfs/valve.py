"""Pure-Python core of Flink's ``StatusWatermarkValve`` (flink-semantics.md section 4).

A valve combines the watermarks and watermark statuses of the ``num_channels`` inputs of one task
input into the task's own watermark and status. ``tidemark.fct_valve_emissions`` lists every output
of a valve fed one input's ``watermark`` / ``watermark_status`` events in ``seq`` order; the Spark
adapter calls ``input_watermark`` / ``input_status`` once per event and keeps the valve between
batches with ``to_state`` / ``from_state`` (JSON-serialisable). This module never imports pyspark.

State (section 4.1)
-------------------
Per channel: ``watermark`` (starts at Long.MIN_VALUE), ``status`` (starts ACTIVE) and ``aligned``
(starts true; "aligned" = caught up with ``lastOut`` and taking part in the min). Per valve:
``lastOut`` (the last emitted watermark, starts at Long.MIN_VALUE) and the valve status (the last
emitted status, starts ACTIVE).

Semantics ``flink-1.13-2.0`` (the default; Flink 1.13 up to and including 2.0)
------------------------------------------------------------------------------
Watermark ``w`` on channel ``ch``:

* **W1** ignored (neither stored nor emitted) if the valve or the channel is idle;
* **W2** ignored unless ``w > ch.watermark`` (strictly);
* **W3** stored; an unaligned channel becomes aligned iff ``w >= lastOut`` (else it is in
  catch-up mode: stored, still unaligned);
* **W4** min step: if some channel is aligned and ``m = min(aligned watermarks) > lastOut``, then
  ``lastOut = m`` and ``m`` is emitted. At most one watermark per call. The min step runs after
  every stored watermark, even one that leaves its channel unaligned.

Status on channel ``ch``:

* **S1** IDLE on an active channel: the channel becomes idle and unaligned, then
  (a) if no channel is active any more: if ``ch.watermark == lastOut`` flush, i.e. emit
  ``M = max(watermark over all channels)`` if ``M > lastOut``; then the valve becomes IDLE and
  emits IDLE (the watermark, if any, first); (b) else if ``ch.watermark == lastOut`` run the min
  step; (c) else nothing;
* **S2** ACTIVE on an idle channel: the channel becomes active, aligned iff
  ``ch.watermark >= lastOut``; the min step does **not** run; if the valve was idle it becomes
  ACTIVE and emits ACTIVE;
* **S3** IDLE on an idle channel and ACTIVE on an active channel do nothing (echo suppression);
* **S4** (shared channels, batch only) does not arise: one channel is one subpartition here.

Consequences tested in ``tests/unit/test_valve.py`` (E1-E10): emitted watermarks strictly
increase and are never Long.MIN_VALUE (E3); a reactivated channel at or above ``lastOut`` is
aligned but can stall the output until another min step (E6, the FLINK-40475 "stall"); when the
last active channel goes idle while unaligned, the flush is skipped and only IDLE is emitted even
if an idle channel holds a higher watermark (E7 exception, the FLINK-40475 "skipped flush").

Semantics ``flink-40475`` (section 4.6; reported change, not verified against Flink source)
------------------------------------------------------------------------------------------
Flink PR #29024 (FLINK-40475) is described as changing two things, both opt-in here with
``ValveSemantics.FLINK_40475``:

1. at the end of the IDLE->ACTIVE branch of S2 (after ACTIVE is emitted, if it is) the valve runs
   the min step (W4), so a reactivated aligned channel no longer stalls the output (E6);
2. in S1(a) the max is flushed unconditionally, not only when ``ch.watermark == lastOut``, so the
   final watermark no longer depends on which channel goes idle last (E7 exception).

Everything else is as in the default semantics. Two consequences worth knowing: under the default
semantics the stall and the skipped flush can combine so that a watermark is never emitted at all
(a channel reactivates above ``lastOut``, then every channel goes idle with the last one below
it); and under FLINK-40475 a reactivation that ends the valve's idleness never emits a watermark
after ACTIVE, because the unconditional flush has already raised ``lastOut`` to the max.

Cost
----
O(log channels) amortised per event, like Flink >= 1.17's heap (FLINK-30544):

* the aligned channels' watermarks live in a binary min-heap (:mod:`heapq`) with lazy deletion.
  An entry is one int encoding ``(watermark, channel)``; it is live iff its channel is aligned and
  the entry equals the channel's current key. A store pushes a new entry, unaligning pushes
  nothing, and the min step pops dead entries off the top. Each entry is pushed once and popped at
  most once, and the heap is rebuilt from the aligned channels (O(n)) when it holds more than
  ``2 * num_channels + 32`` entries, so memory stays O(n) and the cost stays amortised O(log n);
* the flush needs the max over *all* channels: a running max is exact because a channel's
  watermark only ever increases (W2).
"""

from __future__ import annotations

import operator
from enum import StrEnum
from heapq import heapify, heappop, heappush
from typing import Any

__all__ = [
    "LONG_MAX",
    "LONG_MIN",
    "STATE_FORMAT",
    "Emission",
    "StatusWatermarkValve",
    "ValveInputError",
    "ValveSemantics",
]

LONG_MIN = -(2**63)
"""Java's ``Long.MIN_VALUE``: every channel's initial watermark and the initial ``lastOut``."""
LONG_MAX = 2**63 - 1
"""Java's ``Long.MAX_VALUE``: a valid watermark like any other (E3)."""

STATE_FORMAT = "tidemark.valve/1"
"""Value of the ``format`` key of :meth:`StatusWatermarkValve.to_state`."""

IDLE = "IDLE"
ACTIVE = "ACTIVE"

Emission = tuple[str, int | str]
"""One valve output: ``("watermark", value)`` or ``("status", "IDLE" | "ACTIVE")``."""

_EMIT_IDLE: Emission = ("status", IDLE)
_EMIT_ACTIVE: Emission = ("status", ACTIVE)

# The heap functions are looked up as module globals on purpose: tests count heap operations
# by replacing them (a non-timing check of the O(log n) cost).
_heappush = heappush
_heappop = heappop
_heapify = heapify

_HEAP_SLACK = 32
"""The heap is rebuilt once it holds more than ``2 * num_channels + _HEAP_SLACK`` entries."""


class ValveInputError(ValueError):
    """An input the valve cannot take: bad channel, status, watermark, size, semantics or state."""


class ValveSemantics(StrEnum):
    """Which Flink valve code to reproduce (see the module docstring); a ``str`` and an ``Enum``."""

    FLINK_1_13_TO_2_0 = "flink-1.13-2.0"
    """Flink 1.13 to 2.0 (rules W1-W4, S1-S3); the default."""
    FLINK_40475 = "flink-40475"
    """The change reported for FLINK-40475 (section 4.6): min step on reactivation, and an
    unconditional flush when all channels are idle."""


def _parse_semantics(value: object) -> ValveSemantics:
    if isinstance(value, ValveSemantics):
        return value
    if isinstance(value, str):
        for member in ValveSemantics:
            if member.value == value:
                return member
    expected = ", ".join(repr(m.value) for m in ValveSemantics)
    raise ValveInputError(f"unknown valve semantics {value!r}; expected one of {expected}")


def _as_int(value: object, what: str) -> int:
    """``value`` as a Python int (accepting ``__index__`` types such as numpy ints, not bools)."""
    if isinstance(value, bool):
        raise ValveInputError(f"{what} {value!r} is a bool, not an integer")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValveInputError(
            f"{what} {value!r} is not an integer (got {type(value).__name__})"
        ) from None


def _as_long(value: object, what: str) -> int:
    number = _as_int(value, what)
    if not LONG_MIN <= number <= LONG_MAX:
        raise ValveInputError(f"{what} {value!r} is outside the signed 64-bit range")
    return number


class StatusWatermarkValve:
    """Flink's ``StatusWatermarkValve`` for ``num_channels`` channels, one subpartition each.

    Feed it events in processing order; each call returns the outputs that event causes, in
    emission order (a flush emits the watermark before IDLE). Every call returns a new list.
    Invalid input raises :class:`ValveInputError` and leaves the valve unchanged.
    """

    __slots__ = (
        "_n",
        "_semantics",
        "_reactivation_min_step",
        "_unconditional_flush",
        "_wm",
        "_key",
        "_idle",
        "_aligned",
        "_num_active",
        "_last_out",
        "_valve_idle",
        "_max",
        "_heap",
        "_heap_limit",
        "_shift",
        "_mask",
    )

    def __init__(
        self,
        num_channels: int,
        semantics: ValveSemantics | str = ValveSemantics.FLINK_1_13_TO_2_0,
    ) -> None:
        n = _as_int(num_channels, "num_channels")
        if n < 1:
            raise ValveInputError(f"num_channels {num_channels!r} must be at least 1")
        sem = _parse_semantics(semantics)
        self._n = n
        self._semantics = sem
        self._reactivation_min_step = sem is ValveSemantics.FLINK_40475
        self._unconditional_flush = sem is ValveSemantics.FLINK_40475
        # Heap keys: ((watermark - LONG_MIN) << shift) | channel, so ints order by watermark.
        self._shift = max(1, (n - 1).bit_length())
        self._mask = (1 << self._shift) - 1
        self._heap_limit = 2 * n + _HEAP_SLACK
        # Section 4.1: every channel ACTIVE, aligned, at Long.MIN_VALUE; lastOut = MIN, ACTIVE.
        self._wm: list[int] = [LONG_MIN] * n
        self._key: list[int] = list(range(n))  # key of LONG_MIN is 0 | channel
        self._idle: list[bool] = [False] * n
        self._aligned: list[bool] = [True] * n
        self._num_active = n
        self._last_out = LONG_MIN
        self._valve_idle = False
        self._max = LONG_MIN
        self._heap: list[int] = list(range(n))  # sorted, hence already a heap

    # ------------------------------------------------------------------ inputs

    def input_watermark(self, channel: int, watermark: int) -> list[Emission]:
        """Feed ``watermark`` on ``channel`` (rules W1-W4); returns at most one watermark."""
        if type(channel) is not int or not 0 <= channel < self._n:
            channel = self._check_channel(channel)
        if type(watermark) is not int or not LONG_MIN <= watermark <= LONG_MAX:
            watermark = _as_long(watermark, "watermark")
        # W1: ignored, and not remembered, while the valve or the channel is idle.
        if self._valve_idle or self._idle[channel]:
            return []
        # W2: only a strictly higher watermark counts (this also drops Long.MIN_VALUE, E3/E4).
        wm = self._wm
        if watermark <= wm[channel]:
            return []
        # W3: store. The running max over all channels is exact since watermarks only rise.
        wm[channel] = watermark
        if watermark > self._max:
            self._max = watermark
        shift = self._shift
        key = ((watermark - LONG_MIN) << shift) | channel
        keys = self._key
        keys[channel] = key
        aligned = self._aligned
        heap = self._heap
        last_out = self._last_out
        if aligned[channel]:
            _heappush(heap, key)
            if len(heap) > self._heap_limit:
                self._rebuild_heap()
        elif watermark >= last_out:
            # W3: an unaligned channel that caught up with lastOut is aligned again (E5).
            aligned[channel] = True
            _heappush(heap, key)
            if len(heap) > self._heap_limit:
                self._rebuild_heap()
        # else W3 catch-up mode: stored, stays unaligned; the min step still runs (W4), which
        # matters after a reactivation that skipped it (E6).
        # W4, the min step, inlined from _min_step for speed (this is the hot path).
        mask = self._mask
        while heap:
            top = heap[0]
            owner = top & mask
            if aligned[owner] and keys[owner] == top:
                low = (top >> shift) + LONG_MIN
                if low > last_out:
                    self._last_out = low
                    return [("watermark", low)]
                return []
            _heappop(heap)  # a dead entry
        return []

    def input_status(self, channel: int, status: str) -> list[Emission]:
        """Feed a watermark status, ``"IDLE"`` or ``"ACTIVE"``, on ``channel`` (rules S1-S3)."""
        if type(channel) is not int or not 0 <= channel < self._n:
            channel = self._check_channel(channel)
        if status == IDLE:
            if self._idle[channel]:
                return []  # S3: echo
            # S1: the channel becomes idle and unaligned (its heap entry dies lazily).
            self._idle[channel] = True
            self._aligned[channel] = False
            self._num_active -= 1
            channel_wm = self._wm[channel]
            if self._num_active == 0:
                # S1(a): all channels idle. Flush the max (E7) when the channel was at lastOut,
                # or always under FLINK-40475; then the valve goes IDLE, watermark first.
                out: list[Emission] = []
                if (
                    self._unconditional_flush or channel_wm == self._last_out
                ) and self._max > self._last_out:
                    self._last_out = self._max
                    out.append(("watermark", self._max))
                self._valve_idle = True
                out.append(_EMIT_IDLE)
                return out
            if channel_wm == self._last_out:
                return self._min_step()  # S1(b)
            return []  # S1(c), E9
        if status == ACTIVE:
            if not self._idle[channel]:
                return []  # S3: echo
            # S2: active again; aligned iff its (unchanged) watermark is >= lastOut (E5, E6).
            self._idle[channel] = False
            self._num_active += 1
            if self._wm[channel] >= self._last_out:
                self._aligned[channel] = True
                self._push(self._key[channel])
            if self._valve_idle:
                self._valve_idle = False
                if self._reactivation_min_step:
                    out = [_EMIT_ACTIVE]
                    out.extend(self._min_step())
                    return out
                return [_EMIT_ACTIVE]
            if self._reactivation_min_step:
                return self._min_step()  # FLINK-40475 (1): re-derive the min, after ACTIVE
            return []  # S2: no min step (E6 stall)
        raise ValveInputError(f"status {status!r} is not 'IDLE' or 'ACTIVE'")

    # ------------------------------------------------------------------ accessors

    @property
    def num_channels(self) -> int:
        """The number of channels."""
        return self._n

    @property
    def semantics(self) -> ValveSemantics:
        """Which Flink behaviour this valve reproduces."""
        return self._semantics

    @property
    def last_output_watermark(self) -> int:
        """``lastOut``: the last emitted watermark, Long.MIN_VALUE before the first."""
        return self._last_out

    @property
    def is_idle(self) -> bool:
        """Whether the last emitted status is IDLE (the valve starts ACTIVE)."""
        return self._valve_idle

    def channel_watermark(self, channel: int) -> int:
        """The channel's stored watermark (Long.MIN_VALUE until it stores one)."""
        return self._wm[self._check_channel(channel)]

    def channel_is_idle(self, channel: int) -> bool:
        """Whether the channel's status is IDLE."""
        return self._idle[self._check_channel(channel)]

    def channel_is_aligned(self, channel: int) -> bool:
        """Whether the channel takes part in the min (caught up with ``lastOut`` and active)."""
        return self._aligned[self._check_channel(channel)]

    def __repr__(self) -> str:
        return (
            f"StatusWatermarkValve(num_channels={self._n}, semantics={self._semantics.value!r}, "
            f"last_output_watermark={self._last_out}, is_idle={self._valve_idle})"
        )

    # ------------------------------------------------------------------ state

    def to_state(self) -> dict[str, Any]:
        """The complete valve state as JSON-serialisable plain data.

        ``from_state(to_state())`` behaves exactly like this valve from here on. The heap is not
        saved: it is derived from the aligned channels on restore.
        """
        return {
            "format": STATE_FORMAT,
            "semantics": self._semantics.value,
            "num_channels": self._n,
            "last_output_watermark": self._last_out,
            "is_idle": self._valve_idle,
            "channel_watermarks": list(self._wm),
            "channel_idle": list(self._idle),
            "channel_aligned": list(self._aligned),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> StatusWatermarkValve:
        """Restore a valve saved by :meth:`to_state` (also after a JSON round trip).

        Raises :class:`ValveInputError` for a malformed or inconsistent state.
        """
        if not isinstance(state, dict):
            raise ValveInputError(f"valve state {state!r} is not a dict")
        expected = {
            "format",
            "semantics",
            "num_channels",
            "last_output_watermark",
            "is_idle",
            "channel_watermarks",
            "channel_idle",
            "channel_aligned",
        }
        missing = sorted(expected - state.keys())
        if missing:
            raise ValveInputError(f"valve state lacks {missing!r}")
        unknown = sorted(str(k) for k in state.keys() - expected)
        if unknown:
            raise ValveInputError(f"valve state has unknown keys {unknown!r}")
        if state["format"] != STATE_FORMAT:
            raise ValveInputError(f"valve state format {state['format']!r} is not {STATE_FORMAT!r}")
        valve = cls(_strict_int(state["num_channels"], "num_channels"), state["semantics"])
        n = valve._n
        last_out = _strict_long(state["last_output_watermark"], "last_output_watermark")
        valve_idle = _strict_bool(state["is_idle"], "is_idle")
        wms = _strict_list(state["channel_watermarks"], "channel_watermarks", n)
        idles = _strict_list(state["channel_idle"], "channel_idle", n)
        aligneds = _strict_list(state["channel_aligned"], "channel_aligned", n)
        wms = [_strict_long(w, f"channel_watermarks[{i}]") for i, w in enumerate(wms)]
        idles = [_strict_bool(v, f"channel_idle[{i}]") for i, v in enumerate(idles)]
        aligneds = [_strict_bool(v, f"channel_aligned[{i}]") for i, v in enumerate(aligneds)]
        # Invariants of every reachable state (a state breaking one was not made by a valve).
        for i in range(n):
            if aligneds[i] and idles[i]:
                raise ValveInputError(f"valve state: channel {i} is both idle and aligned")
            if aligneds[i] and wms[i] < last_out:
                raise ValveInputError(
                    f"valve state: channel {i} is aligned but its watermark {wms[i]} is below "
                    f"last_output_watermark {last_out}"
                )
        num_active = idles.count(False)
        if valve_idle != (num_active == 0):
            raise ValveInputError(
                f"valve state: is_idle {valve_idle!r} but {num_active} of {n} channels are active"
            )
        top = max(wms)
        if last_out > top:
            raise ValveInputError(
                f"valve state: last_output_watermark {last_out} is above every channel's "
                f"watermark (max {top})"
            )
        shift = valve._shift
        keys = [((w - LONG_MIN) << shift) | i for i, w in enumerate(wms)]
        heap = [keys[i] for i in range(n) if aligneds[i]]
        _heapify(heap)
        valve._wm = wms
        valve._key = keys
        valve._idle = idles
        valve._aligned = aligneds
        valve._num_active = num_active
        valve._last_out = last_out
        valve._valve_idle = valve_idle
        valve._max = top
        valve._heap = heap
        return valve

    # ------------------------------------------------------------------ internals

    def _check_channel(self, channel: object) -> int:
        index = _as_int(channel, "channel")
        if not 0 <= index < self._n:
            raise ValveInputError(f"channel {channel!r} is outside [0, {self._n})")
        return index

    def _push(self, key: int) -> None:
        """Add a live heap entry; rebuild the heap when dead entries dominate (amortised O(1))."""
        heap = self._heap
        _heappush(heap, key)
        if len(heap) > self._heap_limit:
            self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        """Drop all dead entries: O(n), after at least n + 32 pushes since the last rebuild."""
        aligned = self._aligned
        keys = self._key
        heap = self._heap
        heap[:] = [keys[c] for c in range(self._n) if aligned[c]]
        _heapify(heap)

    def _min_step(self) -> list[Emission]:
        """W4: emit the min over aligned channels if it is above ``lastOut`` (E3, E8)."""
        heap = self._heap
        aligned = self._aligned
        keys = self._key
        mask = self._mask
        while heap:
            top = heap[0]
            channel = top & mask
            if aligned[channel] and keys[channel] == top:
                low = (top >> self._shift) + LONG_MIN
                if low > self._last_out:
                    self._last_out = low
                    return [("watermark", low)]
                return []
            _heappop(heap)  # a dead entry: the channel moved on or is unaligned
        return []  # E8: no aligned channel, no output (never Long.MAX_VALUE)


def _strict_int(value: object, what: str) -> int:
    if type(value) is not int:
        raise ValveInputError(f"valve state: {what} {value!r} is not an integer")
    return value


def _strict_long(value: object, what: str) -> int:
    number = _strict_int(value, what)
    if not LONG_MIN <= number <= LONG_MAX:
        raise ValveInputError(f"valve state: {what} {value!r} is outside the signed 64-bit range")
    return number


def _strict_bool(value: object, what: str) -> bool:
    if type(value) is not bool:
        raise ValveInputError(f"valve state: {what} {value!r} is not a bool")
    return value


def _strict_list(value: object, what: str, length: int) -> list[Any]:
    if not isinstance(value, list):
        raise ValveInputError(f"valve state: {what} is not a list (got {type(value).__name__})")
    if len(value) != length:
        raise ValveInputError(
            f"valve state: {what} has {len(value)} entries, expected num_channels {length}"
        )
    return value
