"""Pure-Python core of a task's event-time clock: its inputs' valves and their combination.

A Flink task has one :class:`~udfs.valve.StatusWatermarkValve` per input (``input_index`` 0, or 0
and 1 for a two-input operator, more for a multiple-input one). Each valve combines the channels of
its input (flink-semantics.md section 4); the operator then combines the valves' outputs into the
task's own clock. :class:`TaskWatermarks` holds all of that for one task and can be saved and
restored as JSON, so the Spark adapter (``udfs.spark``) can resume a task where the last dbt run
left it. This module never imports pyspark.

Combining the inputs (:class:`WatermarkCombiner`)
-------------------------------------------------
Flink's ``AbstractStreamOperator`` feeds each input's watermarks and statuses into
``IndexedCombinedWatermarkStatus``, i.e. ``CombinedWatermarkStatus`` of flink-core (section 4.7),
with one partial per input:

* **C1** every partial starts at Long.MIN_VALUE and not idle; the combined watermark starts at
  Long.MIN_VALUE and the combined status ACTIVE;
* **C2** a watermark ``w`` on input ``i`` makes partial ``i`` not idle and raises its watermark to
  ``max(current, w)`` (a valve's output only rises anyway);
* **C3** a status on input ``i`` sets that partial's idle flag;
* **C4** after each update the combined watermark is the min over the **non-idle** partials; it
  is emitted only if it is above the last combined watermark (it never goes back and is never
  Long.MIN_VALUE). If every partial is idle the combined status is IDLE and nothing else happens
  (no flush of the max, unlike the valve's E7; FLINK-38454 reportedly adds one later, not
  reproduced here);
* **C5** on a status update the watermark (if any) is emitted first, then the combined status if
  it changed (IDLE when the last non-idle input goes idle, ACTIVE when the first comes back).

So for a one-input task the clock mirrors the valve's outputs exactly, and a two-input task stands
still until both inputs have a watermark unless one of them is idle. The set of inputs is fixed
when the task starts (a partial that has not received anything holds the clock at
Long.MIN_VALUE, as in Flink), so callers pass every ``input_index`` the task ever uses.

Outputs have the valve's shape, :data:`udfs.valve.Emission`: ``("watermark", value)`` or
``("status", "IDLE" | "ACTIVE")``.
"""

from __future__ import annotations

from typing import Any

from udfs.valve import (
    LONG_MAX,
    LONG_MIN,
    Emission,
    StatusWatermarkValve,
    ValveInputError,
    ValveSemantics,
)

__all__ = [
    "TASK_STATE_FORMAT",
    "TaskWatermarks",
    "WatermarkCombiner",
]

TASK_STATE_FORMAT = "tidemark.task_watermarks/1"
"""Value of the ``format`` key of :meth:`TaskWatermarks.to_state`."""

_IDLE: Emission = ("status", "IDLE")
_ACTIVE: Emission = ("status", "ACTIVE")


class WatermarkCombiner:
    """``CombinedWatermarkStatus`` over a fixed set of inputs (rules C1-C5 above)."""

    __slots__ = ("_inputs", "_position", "_watermarks", "_idle", "_combined", "_is_idle")

    def __init__(self, inputs: list[int] | tuple[int, ...]) -> None:
        keys = sorted({_check_input(i) for i in inputs})
        if not keys:
            raise ValveInputError("a task needs at least one input")
        self._inputs = keys
        self._position = {key: pos for pos, key in enumerate(keys)}
        self._watermarks = [LONG_MIN] * len(keys)  # C1
        self._idle = [False] * len(keys)
        self._combined = LONG_MIN
        self._is_idle = False

    @property
    def inputs(self) -> list[int]:
        """The task's input indexes, ascending."""
        return list(self._inputs)

    @property
    def combined_watermark(self) -> int:
        """The last emitted combined watermark (Long.MIN_VALUE before the first)."""
        return self._combined

    @property
    def is_idle(self) -> bool:
        """Whether every input is idle (the combined status)."""
        return self._is_idle

    def update(self, input_index: int, emissions: list[Emission]) -> list[Emission]:
        """Feed one valve's outputs (in order) for ``input_index``; returns the task's outputs."""
        pos = self._position.get(input_index)
        if pos is None:
            raise ValveInputError(
                f"input {input_index!r} is not one of the task's inputs {self._inputs}"
            )
        out: list[Emission] = []
        for kind, value in emissions:
            if kind == "watermark":
                self._idle[pos] = False  # C2
                if value > self._watermarks[pos]:
                    self._watermarks[pos] = value
                self._step(out)
            else:
                self._idle[pos] = value == "IDLE"  # C3
                was_idle = self._is_idle
                self._step(out)
                if was_idle != self._is_idle:  # C5: the status after the watermark
                    out.append(_IDLE if self._is_idle else _ACTIVE)
        return out

    def _step(self, out: list[Emission]) -> None:
        """C4: the min over non-idle partials, emitted when it rises; idle when all are idle."""
        low = LONG_MAX
        all_idle = True
        for watermark, idle in zip(self._watermarks, self._idle, strict=True):
            if not idle:
                all_idle = False
                if watermark < low:
                    low = watermark
        self._is_idle = all_idle
        if not all_idle and low > self._combined:
            self._combined = low
            out.append(("watermark", low))

    def to_state(self) -> dict[str, Any]:
        return {
            "inputs": list(self._inputs),
            "watermarks": list(self._watermarks),
            "idle": list(self._idle),
            "combined_watermark": self._combined,
            "is_idle": self._is_idle,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> WatermarkCombiner:
        if not isinstance(state, dict):
            raise ValveInputError(f"combiner state {state!r} is not a dict")
        try:
            combiner = cls(state["inputs"])
            n = len(combiner._inputs)
            watermarks = [int(w) for w in state["watermarks"]]
            idle = [bool(v) for v in state["idle"]]
            combined = int(state["combined_watermark"])
            is_idle = bool(state["is_idle"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValveInputError(f"malformed combiner state: {exc!r}") from None
        if len(watermarks) != n or len(idle) != n:
            raise ValveInputError("combiner state: one watermark and idle flag per input needed")
        combiner._watermarks = watermarks
        combiner._idle = idle
        combiner._combined = combined
        combiner._is_idle = is_idle
        return combiner


class TaskWatermarks:
    """One task's valves (one per input, made at its first event) and their combination.

    The adapter feeds each event to :meth:`valve` ``(input_index, num_channels)`` and passes what
    the valve emits to :meth:`combine`; :attr:`last_seq`, :attr:`first_ms` and
    :attr:`effective_ms` track how far the task has been fed (the largest ``seq``, the smallest
    ``ts_ms`` and the largest ``ts_ms`` so far: the latter is the time axis of the task's
    watermark timeline, which stays monotonic when the task's clock steps back).
    """

    __slots__ = (
        "_semantics",
        "_valves",
        "_sizes",
        "_combiner",
        "last_seq",
        "first_ms",
        "effective_ms",
    )

    def __init__(
        self,
        inputs: list[int] | tuple[int, ...],
        semantics: ValveSemantics | str = ValveSemantics.FLINK_1_13_TO_2_0,
    ) -> None:
        # Validates the semantics once, here, rather than at the first valve.
        self._semantics = StatusWatermarkValve(1, semantics).semantics
        self._valves: dict[int, StatusWatermarkValve] = {}
        self._sizes: dict[int, int] = {}
        self._combiner = WatermarkCombiner(inputs)
        self.last_seq: int | None = None
        self.first_ms: int | None = None
        self.effective_ms: int | None = None

    @property
    def semantics(self) -> ValveSemantics:
        return self._semantics

    @property
    def inputs(self) -> list[int]:
        return self._combiner.inputs

    @property
    def combiner(self) -> WatermarkCombiner:
        return self._combiner

    def valve(self, input_index: int, num_channels: int) -> StatusWatermarkValve:
        """The valve of ``input_index``, made with ``num_channels`` at the input's first event.

        Raises :class:`ValveInputError` when the input is not one of the task's, or when
        ``num_channels`` differs from the valve's (contract: constant per task and input).
        """
        valve = self._valves.get(input_index)
        if valve is None:
            if input_index not in self._combiner._position:
                raise ValveInputError(
                    f"input_index {input_index!r} is not one of the task's inputs "
                    f"{self._combiner.inputs}"
                )
            valve = StatusWatermarkValve(num_channels, self._semantics)
            self._valves[input_index] = valve
            self._sizes[input_index] = valve.num_channels
        elif num_channels != self._sizes[input_index]:
            raise ValveInputError(
                f"num_channels {num_channels!r} differs from the valve's {self._sizes[input_index]}"
                " (it must be constant per task and input)"
            )
        return valve

    def combine(self, input_index: int, emissions: list[Emission]) -> list[Emission]:
        """The task clock's outputs caused by ``emissions`` of the valve of ``input_index``."""
        return self._combiner.update(input_index, emissions)

    def to_state(self) -> dict[str, Any]:
        """The complete state as JSON-serialisable plain data (valve states per input)."""
        return {
            "format": TASK_STATE_FORMAT,
            "semantics": self._semantics.value,
            "last_seq": self.last_seq,
            "first_ms": self.first_ms,
            "effective_ms": self.effective_ms,
            "valves": {str(i): v.to_state() for i, v in sorted(self._valves.items())},
            "combiner": self._combiner.to_state(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TaskWatermarks:
        """Restore a task saved by :meth:`to_state` (also after a JSON round trip)."""
        if not isinstance(state, dict):
            raise ValveInputError(f"task state {state!r} is not a dict")
        if state.get("format") != TASK_STATE_FORMAT:
            raise ValveInputError(
                f"task state format {state.get('format')!r} is not {TASK_STATE_FORMAT!r}"
            )
        try:
            combiner = WatermarkCombiner.from_state(state["combiner"])
            task = cls(combiner.inputs, state["semantics"])
            task._combiner = combiner
            for key, valve_state in state["valves"].items():
                valve = StatusWatermarkValve.from_state(valve_state)
                if valve.semantics is not task._semantics:
                    raise ValveInputError("task state: a valve's semantics differ from the task's")
                task._valves[int(key)] = valve
                task._sizes[int(key)] = valve.num_channels
            task.last_seq = _optional_int(state["last_seq"], "last_seq")
            task.first_ms = _optional_int(state["first_ms"], "first_ms")
            task.effective_ms = _optional_int(state["effective_ms"], "effective_ms")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, ValveInputError):
                raise
            raise ValveInputError(f"malformed task state: {exc!r}") from None
        return task


def _optional_int(value: object, what: str) -> int | None:
    if value is not None and type(value) is not int:
        raise ValveInputError(f"task state: {what} {value!r} is not an integer")
    return value


def _check_input(value: object) -> int:
    if type(value) is not int or value < 0:
        raise ValveInputError(f"input_index {value!r} is not an integer >= 0")
    return value
