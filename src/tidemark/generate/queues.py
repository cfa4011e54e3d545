"""Back pressure: the fluid queue model of the job and the TimerGauge events it gives.

The model advances in :data:`~tidemark.generate.plan.STEP_MS` steps and gives every task a code
per step (busy, idle or back-pressured milliseconds, or down); :func:`_add_timer_events` lays the
blocked time out inside each step and turns it into ``timer`` start/end events
(flink-semantics.md section 3, M9). See :mod:`tidemark.generate` for the whole model.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from tidemark.generate.plan import STEP_MS, _Plan, _Task

_SOURCE_CAPACITY: Final = 10_000.0  # records/s, whole vertex
_MAP_CAPACITY: Final = 15_000.0
_SINK_CAPACITY: Final = 12_000.0
_BUFFER_STEPS: Final = 2.0  # a vertex's input buffers hold 2 steps of full source output
_HARD_BACKPRESSURE_P: Final = 0.1

# Timer tail codes: 2 * name + action, action 0 = start, 1 = end.
_TIMER_NAMES: Final = ("idle", "soft_backpressured", "hard_backpressured", "backpressured")
_IDLE, _SOFT, _HARD, _LEGACY = 1, 2, 3, 4  # run kinds; 0 is busy

_DOWN: Final = -1  # step code of a task that is not running


def _smooth_noise(rng: np.random.Generator, n: int, sd: float, knot_steps: int) -> NDArray[Any]:
    """Slowly varying noise around 1: random knots every ``knot_steps``, linearly interpolated."""
    knots = 1.0 + sd * rng.standard_normal(n // knot_steps + 2)
    return np.interp(np.arange(n) / knot_steps, np.arange(knots.size), knots)


def _blocked_ms(p: NDArray[Any], c: NDArray[Any]) -> NDArray[np.int64]:
    """Milliseconds of a step not used when processing ``p`` of capacity ``c``."""
    return np.floor((1.0 - np.minimum(p / c, 1.0)) * STEP_MS + 0.5).astype(np.int64)


class _QueueModel:
    """The fluid model of the job, one :data:`STEP_MS` step at a time.

    Every channel holds a few steps of records at most. In a step the sinks consume from their
    channels, then the maps move records from theirs into the sinks' channels, then the sources
    read demand plus lag into the maps' channels. A task processes ``p = min(available,
    capacity, room downstream)``; the unused part of the step is idle if input was the limit and
    back-pressured if room downstream was.

    While nothing is congested (no lag, every task keeps up, no full channel) every task simply
    processes what arrived in the previous step, which :meth:`_free` computes with numpy for a
    whole block of steps; only congested stretches run through the exact per-step loop
    (:meth:`_exact`).
    """

    _FREE_BLOCK = 4096
    _CLEAN_STEPS = 20  # clean steps before the exact loop hands back to the vectorised one

    def __init__(self, plan: _Plan, rng: np.random.Generator) -> None:
        ps, pm, pk = plan.parallelism
        n = plan.n_steps
        dt = STEP_MS / 1000.0
        self.plan = plan
        self.n = n
        src_nominal = _SOURCE_CAPACITY / ps * dt  # records per step
        self.src_cap = src_nominal * np.clip(1 + 0.02 * rng.standard_normal((ps, n)), 0.95, 1.05)
        self.demand_rate = plan.load * src_nominal
        demand = np.empty((ps, n))
        for i in range(ps):
            noise = _smooth_noise(rng, n, 0.08, 20) * (1 + 0.1 * rng.standard_normal(n))
            demand[i] = self.demand_rate * np.clip(noise, 0.6, 1.4)
            if i == plan.stopped_source:
                demand[i, plan.stop_steps[0] : plan.stop_steps[1]] = 0.0
        self.demand = demand
        self.map_cap = (_MAP_CAPACITY / pm * dt) * np.clip(
            1 + 0.03 * rng.standard_normal((pm, n)), 0.9, 1.1
        )
        throttle = np.ones(n)
        for a, b in plan.throttle_windows:
            throttle[a:b] = plan.throttle_factor
        self.sink_cap = (_SINK_CAPACITY / pk * dt) * (
            throttle * np.clip(1 + 0.02 * rng.standard_normal((pk, n)), 0.95, 1.05)
        )
        self.map_up = np.ones((pm, n), dtype=bool)
        self.restart_step = -1
        if plan.failed_map is not None:
            self.map_up[plan.failed_map, plan.fail_steps[0] : plan.fail_steps[1]] = False
            self.restart_step = plan.fail_steps[1]
        # Who feeds whom: (map, channel) per source, (sink, channel) per map (plan.inputs_of).
        self.src_targets = _targets(plan.map_inputs, ps)
        self.map_targets = _targets(plan.sink_inputs, pm)
        self.fanout = np.array([len(t) for t in self.map_targets], dtype=np.float64)
        self.dense = plan.edges == "all-to-all"
        share = np.zeros((ps, pm))  # source i -> map j; a source splits its records evenly
        for i, targets in enumerate(self.src_targets):
            maps = [j for j, _ in targets]
            share[i, maps] = 1.0 / len(maps)
            if plan.hot_map in maps and len(maps) > 1:
                share[i, maps] = (1.0 - plan.hot_share) / (len(maps) - 1)
                share[i, plan.hot_map] = plan.hot_share
        self.share = share
        # One channel's room: the buffers hold 2 steps of full source output over all channels.
        n_map_ch = sum(len(c) for c in plan.map_inputs)
        n_sink_ch = sum(len(c) for c in plan.sink_inputs)
        self.q_map = _BUFFER_STEPS * _SOURCE_CAPACITY * dt / n_map_ch
        self.q_sink = _BUFFER_STEPS * _SOURCE_CAPACITY * dt / n_sink_ch
        self.src_code = np.zeros((ps, n), dtype=np.int64)
        self.map_code = np.zeros((pm, n), dtype=np.int64)
        self.sink_code = np.zeros((pk, n), dtype=np.int64)
        self.backlog = np.zeros((ps, n))

    def run(self) -> None:
        ps, pm, _ = self.plan.parallelism
        t = 0
        pushed_src = np.zeros(ps)  # what each source pushed in the previous step
        pushed_map = np.zeros(pm)  # what each map pushed in the previous step
        while t < self.n:
            t, pushed_src, pushed_map, congested = self._free(t, pushed_src, pushed_map)
            if congested:
                t, pushed_src, pushed_map = self._exact(t, pushed_src, pushed_map)

    def _free(
        self, t0: int, pushed_src: NDArray[Any], pushed_map: NDArray[Any]
    ) -> tuple[int, NDArray[Any], NDArray[Any], bool]:
        """Vectorised steps from ``t0`` until the first congested one (or a block end)."""
        pk = self.plan.parallelism[2]
        t1 = min(self.n, t0 + self._FREE_BLOCK)
        d = self.demand[:, t0:t1]
        prev_src = np.concatenate([pushed_src[:, None], d[:, :-1]], axis=1)
        a_map = self.share.T @ prev_src
        prev_map = np.concatenate([pushed_map[:, None], a_map[:, :-1]], axis=1)
        if self.dense:  # every sink gets the same: the sum's order of operations as ever
            a_sink = np.broadcast_to(prev_map.sum(axis=0) / pk, (pk, t1 - t0))
        else:
            a_sink = np.zeros((pk, t1 - t0))
            for j, targets in enumerate(self.map_targets):
                a_sink[[k for k, _ in targets]] += prev_map[j] / self.fanout[j]
        sc, mc, kc = self.src_cap[:, t0:t1], self.map_cap[:, t0:t1], self.sink_cap[:, t0:t1]
        ok = (d <= sc).all(axis=0)
        ok &= (d * self.share.max(axis=1)[:, None] <= self.q_map).all(axis=0)
        ok &= (a_map <= mc).all(axis=0) & self.map_up[:, t0:t1].all(axis=0)
        ok &= (a_map / self.fanout[:, None] <= self.q_sink).all(axis=0)
        ok &= (a_sink <= kc).all(axis=0)
        bad = np.flatnonzero(~ok)
        m = int(bad[0]) if bad.size else t1 - t0
        end = t0 + m
        self.src_code[:, t0:end] = _blocked_ms(d[:, :m], sc[:, :m])
        self.map_code[:, t0:end] = _blocked_ms(a_map[:, :m], mc[:, :m])
        self.sink_code[:, t0:end] = _blocked_ms(a_sink[:, :m], kc[:, :m])
        if bad.size:
            return end, prev_src[:, m], prev_map[:, m], True
        return end, d[:, -1].copy(), a_map[:, -1].copy(), False

    def _exact(
        self, t0: int, pushed_src: NDArray[Any], pushed_map: NDArray[Any]
    ) -> tuple[int, NDArray[Any], NDArray[Any]]:
        """The per-step loop from ``t0`` until the job has been uncongested for a while."""
        plan = self.plan
        ps, pm, pk = plan.parallelism
        rp, rm, rk = range(ps), range(pm), range(pk)
        step_ms = float(STEP_MS)
        share = self.share.tolist()
        q_map, q_sink = self.q_map, self.q_sink
        # Channel contents by channel index: qm[j][c] into map j, qs[k][c] into sink k.
        src_prev, map_prev = pushed_src.tolist(), pushed_map.tolist()  # Python floats: faster
        fanout = self.fanout.tolist()
        src_targets, map_targets = self.src_targets, self.map_targets
        qm = [[src_prev[i] * share[i][j] for i in plan.map_inputs[j]] for j in rm]
        qs = [[map_prev[j] / fanout[j] for j in plan.sink_inputs[k]] for k in rk]
        failed = plan.failed_map
        backlog = [0.0] * ps
        src_codes: list[list[int]] = [[] for _ in rp]
        map_codes: list[list[int]] = [[] for _ in rm]
        sink_codes: list[list[int]] = [[] for _ in rk]
        backlogs: list[list[float]] = [[] for _ in rp]
        t = t0
        clean_run = 0
        p_src = [0.0] * ps
        p_map = [0.0] * pm
        chunk = self._FREE_BLOCK
        while t < self.n and clean_run < self._CLEAN_STEPS:
            t_end = min(self.n, t + chunk)
            demand = self.demand[:, t:t_end].tolist()
            src_cap = self.src_cap[:, t:t_end].tolist()
            map_cap = self.map_cap[:, t:t_end].tolist()
            sink_cap = self.sink_cap[:, t:t_end].tolist()
            map_up = self.map_up[:, t:t_end].tolist()
            restart_u = self.restart_step - t
            for u in range(t_end - t):
                clean = True
                # Sinks consume what is buffered (no output, so never back-pressured).
                for k in rk:
                    col = qs[k]
                    a = sum(col)
                    c = sink_cap[k][u]
                    if a > c:
                        f = 1.0 - c / a
                        qs[k] = [x * f for x in col]
                        sink_codes[k].append(0)
                        clean = False
                    else:
                        qs[k] = [0.0] * len(col)
                        sink_codes[k].append(int((1.0 - a / c) * step_ms + 0.5))
                # Maps move records from their channels into the sinks' channels.
                for j in rm:
                    if not map_up[j][u]:
                        map_codes[j].append(_DOWN)
                        p_map[j] = 0.0
                        clean = False
                        continue
                    col = qm[j]
                    if u == restart_u and j == failed:
                        col = qm[j] = [0.0] * len(col)
                    a = sum(col)
                    fullest = 0.0
                    for k, c_in in map_targets[j]:
                        x = qs[k][c_in]
                        if x > fullest:
                            fullest = x
                    o = (q_sink - fullest) * fanout[j]
                    c = map_cap[j][u]
                    p = a if a < c else c
                    if o < p:
                        p = o if o > 0.0 else 0.0
                        code = 100 + int((1.0 - p / c) * step_ms + 0.5)
                    else:
                        code = int((1.0 - p / c) * step_ms + 0.5)
                    if p < a:
                        f = 1.0 - p / a
                        qm[j] = [x * f for x in col]
                        clean = False
                    else:
                        qm[j] = [0.0] * len(col)
                    add = p / fanout[j]
                    for k, c_in in map_targets[j]:
                        qs[k][c_in] += add
                    p_map[j] = p
                    map_codes[j].append(0 if code == 100 else code)
                # Sources read demand plus lag and push it into the maps' channels.
                for i in rp:
                    a = backlog[i] + demand[i][u]
                    sh = share[i]
                    o = a + 1.0
                    for j, c_in in src_targets[i]:
                        room = (q_map - qm[j][c_in]) / sh[j]
                        if room < o:
                            o = room
                    c = src_cap[i][u]
                    p = a if a < c else c
                    if o < p:
                        p = o if o > 0.0 else 0.0
                        code = 100 + int((1.0 - p / c) * step_ms + 0.5)
                    else:
                        code = int((1.0 - p / c) * step_ms + 0.5)
                    for j, c_in in src_targets[i]:
                        qm[j][c_in] += p * sh[j]
                    rest = a - p
                    if rest > 1e-9:
                        clean = False
                    else:
                        rest = 0.0
                    backlog[i] = rest
                    backlogs[i].append(rest)
                    p_src[i] = p
                    src_codes[i].append(0 if code == 100 else code)
                clean_run = clean_run + 1 if clean else 0
                if clean_run >= self._CLEAN_STEPS:
                    t_end = t + u + 1
                    break
            t = t_end
        self.src_code[:, t0:t] = src_codes
        self.map_code[:, t0:t] = map_codes
        self.sink_code[:, t0:t] = sink_codes
        self.backlog[:, t0:t] = backlogs
        return t, np.asarray(p_src), np.asarray(p_map)


def _targets(inputs: tuple[tuple[int, ...], ...], upstream: int) -> list[list[tuple[int, int]]]:
    """Per upstream subtask, the (downstream subtask, channel index) pairs it writes to."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(upstream)]
    for k, reads in enumerate(inputs):
        for c, j in enumerate(reads):
            out[j].append((k, c))
    return out


def _simulate_queues(
    plan: _Plan, rng: np.random.Generator
) -> tuple[dict[tuple[int, int], NDArray[np.int64]], list[NDArray[np.float64]]]:
    """Run the fluid model; return per (role, subtask) step codes and per source lag (ms).

    A step code is ``b`` (0..STEP_MS) for a step with ``b`` idle ms, ``100 + b`` for a step with
    ``b`` back-pressured ms, or ``-1`` while the task is down.
    """
    model = _QueueModel(plan, rng)
    model.run()
    steps: dict[tuple[int, int], NDArray[np.int64]] = {}
    for role, codes in enumerate((model.src_code, model.map_code, model.sink_code)):
        for sub in range(codes.shape[0]):
            steps[(role, sub)] = codes[sub]
    lag_ms = [row / model.demand_rate * STEP_MS for row in model.backlog]
    return steps, lag_ms


# --------------------------------------------------------------------------------------------
# Timer events
# --------------------------------------------------------------------------------------------


def _compose(
    totals: NDArray[np.int64],
    counts: NDArray[np.int64],
    mins: NDArray[np.int64],
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """Split each ``totals[g]`` into ``counts[g] >= 1`` random integer parts ``>= mins``.

    ``mins`` has one entry per part (groups laid out one after the other); the parts of a group
    sum to its total. Requires ``totals[g] >= sum of its mins``.
    """
    ends = np.cumsum(counts)
    starts = ends - counts
    rem = totals - np.add.reduceat(mins, starts)
    w = rng.random(int(ends[-1])) + 0.05
    cw = np.cumsum(w)
    before = cw[starts] - w[starts]
    gsum = cw[ends - 1] - before
    frac = (cw - np.repeat(before, counts)) / np.repeat(gsum, counts)
    rem_rep = np.repeat(rem, counts)
    cut = np.minimum(np.floor(rem_rep * frac).astype(np.int64), rem_rep)
    cut[ends - 1] = rem
    prev = np.empty_like(cut)
    prev[0] = 0
    prev[1:] = cut[:-1]
    prev[starts] = 0
    return cut - prev + mins


def _add_timer_events(
    task: _Task, step_codes: NDArray[np.int64], plan: _Plan, rng: np.random.Generator
) -> None:
    """Lay out the task's blocked time inside each step and append its TimerGauge events."""
    codes = step_codes[task.first_step : task.last_step]
    n = codes.size
    if n == 0:
        return
    bp = codes >= 100
    blocked = np.where(bp, codes - 100, codes)
    kind = np.where(bp, _SOFT, _IDLE)
    busy = STEP_MS - blocked
    pieces = rng.integers(1, 4, size=n)
    pieces = np.minimum(pieces, np.minimum(blocked, busy + 1))  # parts >= 1 ms, inner gaps >= 1
    n_runs = 2 * pieces + 1  # busy, blocked, busy, ..., blocked, busy
    run_first = np.cumsum(n_runs) - n_runs
    total = int(n_runs.sum())
    pos = np.arange(total) - np.repeat(run_first, n_runs)
    step_of = np.repeat(np.arange(n), n_runs)
    even = pos % 2 == 0

    lengths = np.empty(total, dtype=np.int64)
    q = pos[even] // 2
    k_even = pieces[step_of[even]]
    busy_mins = ((q > 0) & (q < k_even)).astype(np.int64)
    lengths[even] = _compose(busy, pieces + 1, busy_mins, rng)
    has = pieces > 0
    if has.any():
        lengths[~even] = _compose(
            blocked[has], pieces[has], np.ones(int(pieces.sum()), np.int64), rng
        )
    kinds = np.zeros(total, dtype=np.int64)
    odd_kind = kind[step_of[~even]]
    hard = (odd_kind == _SOFT) & (rng.random(odd_kind.size) < _HARD_BACKPRESSURE_P)
    kinds[~even] = np.where(hard, _HARD, odd_kind)
    if (task.role, task.subtask) == plan.legacy_task:
        kinds[kinds >= _SOFT] = _LEGACY

    nz = lengths > 0
    lengths, kinds = lengths[nz], kinds[nz]
    starts = task.start_ms + np.cumsum(lengths) - lengths
    keep = np.ones(kinds.size, dtype=bool)
    keep[1:] = kinds[1:] != kinds[:-1]
    k_run, t_run = kinds[keep], starts[keep]
    prev = np.zeros_like(k_run)
    prev[1:] = k_run[:-1]
    # At every change: end the previous state (if timed), then start the new one (if timed).
    ev_ts = np.repeat(t_run, 2)
    ev_code = np.column_stack([2 * (prev - 1) + 1, 2 * (k_run - 1)]).ravel()
    mask = np.column_stack([prev != 0, k_run != 0]).ravel()
    task.ts.append(ev_ts[mask])
    task.code.append(ev_code[mask])
    task.val.append(np.zeros(int(mask.sum()), dtype=np.int64))
