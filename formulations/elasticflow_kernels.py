"""Compiled loops of the batched leftover-GPU hand-out (:class:`formulations.elasticflow_leftover.Candidates`):
making the candidate plans of many jobs, and updating the jobs' handed-back profiles after one job
takes its level. Each loop runs the published one-job-at-a-time arithmetic
(:mod:`formulations.elasticflow_events`) in its order, operation for operation, so every value
equals the published one to the last bit; one compiled call a round replaces the many small
array operations a round would otherwise make (their per-call cost was the hand-out's time).

The arrays are the candidates' buffers: columns past ``size`` are spare capacity, never read.
Compiled on first use and cached on disk (numba ``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .elasticflow_compiled_plan import plan
from .elasticflow_events import MAXSIZE


@njit(cache=True)
def align(start: float, t: float, slot: float) -> float:
    """:func:`~formulations.elasticflow_events.align` (numba's float ``//`` and ``%`` are Python's)."""
    k = (t - start) // slot
    if (t - start) % slot > 0:
        k += 1
    return start + k * slot


@njit(cache=True)
def make(rows, ups, grid, size, free, moves, levels, rates, nlev, fit, top, A, deadline, need, now, slot,
         up, cost, kind, fresh, end, real_end, reach, length, stop, starts, gpus):
    """The candidates of ``rows`` with ``ups`` GPUs fixed now, one row at a time, stored per row:
    ``kind`` 1 where the job finishes in its first period (to the row's next breakpoint ``nxt``,
    or A), 2 where a level's backward walk over the row's periods in [nxt, A) reaches its need and
    the forward plan meets it in a period (``length`` periods from ``starts``, each period's
    ``gpus``, met in period ``stop``), else 0 (left to ``plan_job``, ``cost`` NaN); the GPU·s,
    end, real end and the last time the candidate read (``reach``); ``fresh`` where kind > 0."""
    fits = np.empty(size, np.int64)
    seconds = np.empty(size)
    hi_all = np.searchsorted(grid[:size], A)
    for k in range(rows.size):
        r, u = rows[k], ups[k]
        first = size
        for c in range(size):
            if moves[r, c]:
                first = c
                break
        a, dl = A[r], deadline[r]
        nxt = grid[first] if first < size else a
        p = 0
        while levels[r, p] < u:
            p += 1
        rate = rates[r, p]
        re = np.ceil(now + need[r] / rate)
        e = align(now, re, slot)
        up[r], end[r], real_end[r], kind[r], cost[r], fresh[r] = u, e, re, 0, np.nan, False
        if nxt >= e and dl >= re:
            cost[r], kind[r], reach[r], fresh[r] = u * (e - now), 1, nxt, True
            continue
        reach[r] = max(nxt, a)
        left = need[r] - ((nxt - now) if nxt != a else (dl - now)) * rate
        n = 0
        for c in range(first, hi_all[r]):
            if moves[r, c]:
                starts[r, n] = grid[c]
                f = min(max(free[r, c], -1), top)
                fits[n] = fit[r, f + 1]
                n += 1
        if n == 0:
            continue
        for c in range(n - 1):
            seconds[c] = starts[r, c + 1] - starts[r, c]
        seconds[n - 1] = dl - starts[r, n - 1]
        # level walk: the first level whose backward walk reaches the need, and where
        found, point = -1, -1
        for q in range(nlev[r]):
            back = 0.0
            for c in range(n - 1, -1, -1):
                f = fits[c]
                if f >= 0:
                    back += seconds[c] * rates[r, q if q < f else f]
                    if back >= left:
                        point = c
                        break
            if point >= 0:
                found = q
                break
        if found < 0:
            continue
        # forward plan: the level below before the point, the level from it, capped by the fit
        s, rest, last_rate = -1, 0.0, 0.0
        for c in range(n):
            j = min(found if c >= point else found - 1, fits[c])
            g = levels[r, j] if j >= 0 else 0
            gpus[r, c] = g
            if s < 0 and g > 0:
                iters = seconds[c] * rates[r, j]
                if c >= point and iters >= left:
                    s, rest, last_rate = c, left, rates[r, j]
                else:
                    left -= iters
        if s < 0:
            continue
        steps = np.ceil(rest / last_rate)
        e = starts[r, s] + align(0.0, steps, slot)
        # GPU·s: ``u`` from now, each period's GPUs to the period meeting the need, 0 after, equal
        # neighbours merged, summed in time order
        total, held, since, previous = 0.0, u, now, u
        for c in range(n):
            value = gpus[r, c] if c <= s else 0
            if value != previous:
                total += held * (starts[r, c] - since)
                held, since = value, starts[r, c]
            previous = value
        total += held * (e - since)
        cost[r], kind[r], end[r], real_end[r], length[r], stop[r] = total, 2, e, starts[r, s] + steps, n, s
        fresh[r] = True


@njit(cache=True)
def marginal(has, ups, spare, held, value, grid, size, free, moves, levels, count, rates, nlev, fit, top, A, deadline,
             need, now, slot, total, up, cost, kind, fresh, end, real_end, reach, length, stop, starts, gpus):
    """Each job's marginal GPU time into ``value``: −∞ where its next level ``ups`` is no more than
    the GPUs it ``has`` or adds more than the ``spare`` ones, +∞ where it has none, else (GPU·s of
    its candidate − GPU·s ``held`` by its plan) / added GPUs, the candidates not fresh made again
    (:func:`make`; those it leaves by the compiled ``plan_job`` on the row's profile)."""
    rows, stale = np.empty(has.size, np.int64), np.empty(has.size, np.int64)
    n, m = 0, 0
    for r in range(has.size):
        if ups[r] > has[r] and ups[r] - has[r] <= spare:
            if has[r] == 0:
                value[r] = MAXSIZE
            else:
                rows[n] = r
                n += 1
                if not fresh[r]:
                    stale[m] = r
                    m += 1
        else:
            value[r] = -MAXSIZE
    if m:
        make(stale[:m], ups[stale[:m]], grid, size, free, moves, levels, rates, nlev, fit, top, A, deadline, need,
             now, slot, up, cost, kind, fresh, end, real_end, reach, length, stop, starts, gpus)
    for r in rows[:n]:
        new = cost[r]
        if kind[r] == 0:
            keys, vals = row(grid, size, free, moves, r)
            new = plan(keys, vals, now, levels[r], count[r], rates[r], need[r], deadline[r], slot, total, ups[r])[4]
        value[r] = (new - held[r]) / (ups[r] - has[r])


@njit(cache=True)
def row(grid, size, free, moves, r):
    """Row ``r``'s profile (its first time and every change)."""
    keep = moves[r, :size].copy()
    keep[0] = True
    return grid[:size][keep], free[r, :size][keep]


@njit(cache=True)
def update(grid, size, free, moves, base, times, values, total, i, plan_times, plan_values, plan_end,
           fresh, reach, fit, top):
    """Job ``i`` took a plan (``plan_times``/``plan_values`` until ``plan_end``), leaving the base
    profile ``times``/``values`` (``total`` before the first): the grid gains the profile's times
    and the end where new (:func:`widen`; the buffers have room for them), every row gains the
    base profile's change, and row ``i`` becomes the new base with its new plan handed back; a
    fresh row goes stale where, up to its ``reach``, one of its breakpoints appears or goes (the
    change turns where the row was flat or becomes flat) or its fit changes. Returns the grid's
    new size."""
    size = widen(grid, size, free, moves, base, times, plan_end)
    delta = np.empty(size, np.int64)
    j = 0
    for t in range(size):
        while j < times.size and times[j] <= grid[t]:
            j += 1
        new = values[j - 1] if j > 0 else total
        delta[t] = new - base[t]
        base[t] = new
    turns = np.empty(size, np.int64)
    nt = 0
    for t in range(1, size):
        if delta[t] != delta[t - 1]:
            turns[nt] = t
            nt += 1
    shift = np.flatnonzero(delta[:size])
    for r in range(free.shape[0]):
        if fresh[r]:
            read = reach[r]
            for k in range(nt):
                t = turns[k]
                if grid[t] > read:
                    break
                step = free[r, t] - free[r, t - 1]
                if step == 0 or step == delta[t - 1] - delta[t]:
                    fresh[r] = False
                    break
            if fresh[r]:
                for t in shift:
                    if grid[t] > read:
                        break
                    old = free[r, t]
                    if fit[r, min(max(old, -1), top) + 1] != fit[r, min(max(old + delta[t], -1), top) + 1]:
                        fresh[r] = False
                        break
        for t in shift:
            free[r, t] += delta[t]
        for k in range(nt):
            t = turns[k]
            moves[r, t] = free[r, t] != free[r, t - 1]
    j = 0
    for t in range(size):
        while j < plan_times.size and plan_times[j] <= grid[t]:
            j += 1
        free[i, t] = base[t] + (plan_values[j - 1] if j > 0 and grid[t] < plan_end else 0)
        moves[i, t] = t > 0 and free[i, t] != free[i, t - 1]
    fresh[i] = False
    return size


@njit(cache=True)
def widen(grid, size, free, moves, base, times, end):
    """Insert the sorted ``times`` and ``end`` not in ``grid[:size]`` (each after ``grid[0]``) into
    the buffers in place: a new column copies the free counts of the column before it and does
    not move. Returns the new size."""
    new = np.empty(times.size + 1)
    m, j = 0, 0
    for t in times:
        while j < size and grid[j] < t:
            j += 1
        if not (j < size and grid[j] == t):
            new[m] = t
            m += 1
    j = np.searchsorted(grid[:size], end)
    if not (j < size and grid[j] == end):
        new[m] = end
        m += 1
    new = np.unique(new[:m])
    if not new.size:
        return size
    # each column's source column, the first new one's place on: every row in place from the right
    src, fresh = np.empty(size + new.size, np.int64), np.zeros(size + new.size, np.bool_)
    old = grid[:size].copy()
    i, k, low = 0, 0, size + new.size
    for w in range(size + new.size):
        if k < new.size and (i >= size or new[k] < old[i]):
            src[w], fresh[w], grid[w] = i - 1, True, new[k]
            low = min(low, w)
            k += 1
        else:
            src[w], grid[w] = i, old[i]
            i += 1
    for w in range(size + new.size - 1, low - 1, -1):
        base[w] = base[src[w]]
    for r in range(free.shape[0]):
        for w in range(size + new.size - 1, low - 1, -1):
            free[r, w] = free[r, src[w]]
            moves[r, w] = False if fresh[w] else moves[r, src[w]]
    return size + new.size


@njit(cache=True)
def outcome(i, grid, size, free, moves, now, A, up, end, real_end, kind, length, stop, starts, gpus):
    """Job ``i``'s fresh candidate (``kind`` 1 or 2, as :func:`make` left it): its plan (times,
    GPUs), end and real end, and the profile it leaves (times, free GPUs): the row's profile with
    the candidate's end added, less ``up`` on [now, end) for kind 1 (not on A to the row's next
    change where A is no change of the row), else less ``up`` to the first period, each period's
    GPUs to the next period (to A after the last), the last one's only to the end where the end
    falls inside it; equal neighbours merged."""
    at = np.searchsorted(grid[:size], end)
    add = not (at < size and grid[at] == end)
    m = size + 1 if add else size
    times, taken = np.empty(m), np.zeros(m, np.int64)
    free_row = np.empty(m, np.int64)
    for c in range(m):
        src = c if not add or c < at else c - 1
        times[c] = end if add and c == at else grid[src]
        free_row[c] = free[i, src]
    if kind == 1:
        for c in range(m):
            if times[c] < end:
                taken[c] = up
        a = np.searchsorted(grid[:size], A)
        if now < A < end and a and not moves[i, a]:
            after = a
            while after < size and not moves[i, after]:
                after += 1
            hi = grid[after] if after < size else np.inf
            for c in range(m):
                if A <= times[c] < hi:
                    taken[c] = 0
        plan_times, plan_gpus = np.full(1, now), np.full(1, up)
    else:
        n, s = length, stop
        after = starts[i, s + 1] if s + 1 < n else A
        keys, held = np.empty(s + 3), np.zeros(s + 3, np.int64)
        keys[0], held[0] = now, up
        keys[1:s + 2] = starts[i, :s + 1]
        held[1:s + 2] = gpus[i, :s + 1]
        keys[s + 2] = end if starts[i, s] < end < after else after
        k = 0
        for c in range(m):
            while k < keys.size and keys[k] <= times[c]:
                k += 1
            taken[c] = held[k - 1]
        plan_times, plan_gpus = np.empty(n + 1), np.zeros(n + 1, np.int64)
        plan_times[0], plan_gpus[0] = now, up
        plan_times[1:] = starts[i, :n]
        plan_gpus[1:s + 2] = gpus[i, :s + 1]
        plan_times, plan_gpus = merged(plan_times, plan_gpus)
    left_times, left_free = merged(times, free_row - taken)
    return plan_times, plan_gpus, end, real_end, left_times, left_free


@njit(cache=True)
def merged(times, values):
    """Without the times whose value equals the previous one's (published ``merge_dict``)."""
    keep = np.ones(values.size, np.bool_)
    keep[1:] = values[1:] != values[:-1]
    return times[keep], values[keep]


@njit(cache=True)
def fits(levels, top):
    """fit[i, f + 1]: the position of row i's largest level <= f (-1 if none), f from -1 to ``top``
    (``levels`` ascending, padded with values above ``top``)."""
    out = np.empty((levels.shape[0], top + 2), np.int64)
    for i in range(levels.shape[0]):
        p = -1
        for f in range(-1, top + 1):
            while p + 1 < levels.shape[1] and levels[i, p + 1] <= f:
                p += 1
            out[i, f + 1] = p
    return out


@njit(cache=True)
def held(grid, base, plan_times, plan_values, starts, ends, free):
    """Each row of ``free``: ``base`` plus the GPUs its plan holds (``plan_times``/``plan_values``
    from ``starts[i]`` to ``starts[i + 1]``) from its first change to its end."""
    for i in range(free.shape[0]):
        j, lo, hi = starts[i], starts[i], starts[i + 1]
        for t in range(grid.size):
            while j < hi and plan_times[j] <= grid[t]:
                j += 1
            free[i, t] = base[t] + (plan_values[j - 1] if j > lo and grid[t] < ends[i] else 0)
