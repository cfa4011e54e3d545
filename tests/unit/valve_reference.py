"""A plain O(n) transcription of the valve rules, for differential tests only.

This follows Flink 1.13's ``StatusWatermarkValve`` line by line (linear scans, no heap, no input
checks), with rule ids from flink-semantics.md section 4, so that ``udfs.valve`` (heap, running
max, lazy deletion) can be checked against something obviously right. ``flink-40475`` switches on
the reported change of section 4.6.
"""

from __future__ import annotations

LONG_MIN = -(2**63)


class ReferenceValve:
    """Linear-scan valve; same calls and accessors as ``udfs.valve.StatusWatermarkValve``."""

    def __init__(self, num_channels: int, semantics: str = "flink-1.13-2.0") -> None:
        assert num_channels >= 1
        assert semantics in ("flink-1.13-2.0", "flink-40475")
        self.new_code = semantics == "flink-40475"
        # 4.1 State
        self.watermarks = [LONG_MIN] * num_channels
        self.active = [True] * num_channels
        self.aligned = [True] * num_channels
        self.last_out = LONG_MIN
        self.valve_active = True

    def input_watermark(self, channel: int, watermark: int) -> list[tuple[str, int | str]]:
        out: list[tuple[str, int | str]] = []
        # W1 (valve and channel active) and W2 (strictly greater)
        if self.valve_active and self.active[channel] and watermark > self.watermarks[channel]:
            # W3
            self.watermarks[channel] = watermark
            if not self.aligned[channel] and watermark >= self.last_out:
                self.aligned[channel] = True
            # W4
            self._min_step(out)
        return out

    def input_status(self, channel: int, status: str) -> list[tuple[str, int | str]]:
        out: list[tuple[str, int | str]] = []
        if status == "IDLE" and self.active[channel]:
            # S1
            self.active[channel] = False
            self.aligned[channel] = False
            if not any(self.active):
                # S1(a)
                if self.new_code or self.watermarks[channel] == self.last_out:
                    top = max(self.watermarks)
                    if top > self.last_out:
                        self.last_out = top
                        out.append(("watermark", top))
                self.valve_active = False
                out.append(("status", "IDLE"))
            elif self.watermarks[channel] == self.last_out:
                # S1(b)
                self._min_step(out)
            # S1(c): nothing
        elif status == "ACTIVE" and not self.active[channel]:
            # S2
            self.active[channel] = True
            if self.watermarks[channel] >= self.last_out:
                self.aligned[channel] = True
            if not self.valve_active:
                self.valve_active = True
                out.append(("status", "ACTIVE"))
            if self.new_code:
                self._min_step(out)
        # S3: anything else is an echo and does nothing
        return out

    def _min_step(self, out: list[tuple[str, int | str]]) -> None:
        # W4 as in Flink 1.13 (after FLINK-7721): only aligned channels, and only if there is one.
        candidates = [w for w, a in zip(self.watermarks, self.aligned, strict=True) if a]
        if candidates:
            low = min(candidates)
            if low > self.last_out:
                self.last_out = low
                out.append(("watermark", low))

    # accessors with the core's names
    @property
    def last_output_watermark(self) -> int:
        return self.last_out

    @property
    def is_idle(self) -> bool:
        return not self.valve_active

    def channel_watermark(self, channel: int) -> int:
        return self.watermarks[channel]

    def channel_is_idle(self, channel: int) -> bool:
        return not self.active[channel]

    def channel_is_aligned(self, channel: int) -> bool:
        return self.aligned[channel]
