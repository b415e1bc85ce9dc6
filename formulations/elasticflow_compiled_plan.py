"""ElasticFlow's published plan of one job (:func:`formulations.elasticflow_events.plan_job`),
compiled: the same rules on a profile given as arrays, operation for operation as the Python
code, so that every plan, end and profile equals it to the last bit (real ends come back as
floats of the same value). :func:`plan_all` plans the jobs of a decision with it; the
leftover-GPU hand-out's candidates that ``make`` leaves (kind 0) are made with it
(:mod:`formulations.elasticflow_kernels`).

A profile is ``keys`` (ascending times, ``now`` the first) and ``vals`` (free GPUs from each key
on); a job is its ``levels`` (ascending GPU counts, ``count`` of them; more may follow as
padding above every free count) and ``rates``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .elasticflow_events import PlanJob


@njit(cache=True)
def align(start, t, slot):
    """:func:`~formulations.elasticflow_events.align` (numba's float ``//`` and ``%`` are Python's)."""
    k = (t - start) // slot
    if (t - start) % slot > 0:
        k += 1
    return start + k * slot


@njit(cache=True)
def _fit(levels, count, ceiling):
    """The largest of the first ``count`` levels <= ceiling (0 if none)."""
    i = np.searchsorted(levels[:count], ceiling, side="right") - 1
    return levels[i] if i >= 0 else 0


@njit(cache=True)
def _put(pk, pv, po, m, t, v):
    """P[t] = v on the profile's first ``m`` keys (a new key is no original one); the new ``m``."""
    p = np.searchsorted(pk[:m], t)
    if p < m and pk[p] == t:
        pv[p] = v
        return m
    for k in range(m, p, -1):
        pk[k], pv[k], po[k] = pk[k - 1], pv[k - 1], po[k - 1]
    pk[p], pv[p], po[p] = t, v, False
    return m + 1


@njit(cache=True)
def _in(keys, t):
    p = np.searchsorted(keys, t)
    return p < keys.size and keys[p] == t


@njit(cache=True)
def _merged(times, values):
    keep = np.ones(values.size, np.bool_)
    keep[1:] = values[1:] != values[:-1]
    return times[keep], values[keep]


@njit(cache=True)
def plan(keys, vals, now, levels, count, rates, need, deadline, slot, total, assigned):
    """The published plan of a job on the profile ``keys``/``vals`` from ``now`` (``assigned`` GPUs
    fixed for the first period where > 0), as :func:`~formulations.elasticflow_events.plan_job`.
    Returns the plan (times, GPUs; equal neighbours merged), its end and real end, its GPU·s
    (the published sum, in time order) and the profile it leaves (merged)."""
    n = keys.size
    pk, pv, po = np.empty(n + 2), np.empty(n + 2, np.int64), np.zeros(n + 2, np.bool_)
    pk[:n], pv[:n], po[:n] = keys, vals, True
    m = n
    A = align(now, deadline, slot)
    if A >= now and not _in(pk[:m], A):
        p = np.searchsorted(pk[:m], A)
        m = _put(pk, pv, po, m, A, pv[p - 1] if p > 0 else total)
    aset, aval = np.zeros(n + 2, np.bool_), np.zeros(n + 2, np.int64)
    aset[np.searchsorted(pk[:m], now)] = True
    start, end, real_end, done = now, 0.0, 0.0, False
    nlev = np.searchsorted(levels[:count], total, side="right")
    if assigned:
        nxt = A
        p = np.searchsorted(keys, now, side="right")
        if p < n:
            nxt = keys[p]
        rate = rates[np.searchsorted(levels[:count], assigned)]
        real_end = np.ceil(now + need / rate)
        end = align(now, real_end, slot)
        i_now = np.searchsorted(pk[:m], now)
        aval[i_now] = assigned
        if nxt >= end and deadline >= real_end:
            last = total
            for k in range(m):
                if po[k] and now <= pk[k] < end:
                    last = pv[k]
                    pv[k] -= assigned
            times, gpus = _merged(pk[:m][aset[:m]], aval[:m][aset[:m]])
            if not _in(keys, end):
                m = _put(pk, pv, po, m, end, last)
            return _out(times, gpus, end, real_end, pk, pv, m)
        need -= ((nxt - now) if nxt != A else deadline - now) * rate
        pv[i_now] -= assigned
        start = nxt
        i_nxt = np.searchsorted(pk[:m], nxt)
        aset[i_nxt], aval[i_nxt] = True, 0
    lo, hi = np.searchsorted(pk[:m], start), np.searchsorted(pk[:m], A)
    top = np.searchsorted(pk[:m], A, side="right")
    aset[lo:hi] = True  # every window period's count, 0 unless set
    # level walk: the first level whose backward walk over the window reaches the need
    found, q, q_prev, point = False, 0, 0, 0.0
    if hi > lo:
        w = hi - lo
        fits, seconds = np.empty(w, np.int64), np.empty(w)
        for i in range(w):
            fits[i] = np.searchsorted(levels[:count], pv[lo + i], side="right") - 1
            seconds[i] = (pk[lo + i + 1] if i < w - 1 else deadline) - pk[lo + i]
        for qi in range(nlev):
            back = 0.0
            for i in range(w - 1, -1, -1):
                f = fits[i]
                j = qi if qi < f else f
                if j >= 0:
                    back += seconds[i] * rates[j]
                    if back >= need:
                        found, point = True, pk[lo + i]
                        break
            if found:
                q = levels[qi]
                break
            q_prev = levels[qi]
    if found:  # the forward plan: q_prev before the point, q from it, capped by the fit
        before = np.searchsorted(levels[:count], q_prev, side="right") - 1
        after = np.searchsorted(levels[:count], q, side="right") - 1
        for i in range(lo + 1, top):
            lat, e = pk[i - 1], pk[i]
            c = after if lat >= point else before
            f = np.searchsorted(levels[:count], pv[i - 1], side="right") - 1
            j = c if c < f else f
            la = levels[j] if j >= 0 else 0
            aval[i - 1] = la
            pv[i - 1] -= la
            if la:
                iters = ((e - lat) if e != A else deadline - lat) * rates[j]
                if lat < point or iters < need:
                    need -= iters
                else:
                    left = np.ceil(need / rates[j])
                    end, real_end, done = lat + align(0.0, left, slot), lat + left, True
                    break
        if not done:
            k = top - 1
            lat = pk[k]
            la = _fit(levels, count, min(q if lat >= point else q_prev, pv[k]))
            aset[k], aval[k] = True, la
            pv[k] -= la
            left = np.ceil(need / rates[np.searchsorted(levels[:count], la)])
            end, real_end = lat + align(0.0, left, slot), lat + left
        times, gpus = _merged(pk[:m][aset[:m]], aval[:m][aset[:m]])
        if not _in(keys, end):
            p = np.searchsorted(keys, end) - 1
            m = _put(pk, pv, po, m, end, vals[p] if p >= 0 and keys[p] >= start else total)
        return _out(times, gpus, end, real_end, pk, pv, m)
    # no level reaches the deadline: the largest level <= min(q_max, free) up to A ...
    q_max = levels[nlev - 1] if nlev else 0
    lat_i, la = -1, 0
    for k in range(lo, top):
        if lat_i >= 0:
            aset[lat_i], aval[lat_i] = True, la
            pv[lat_i] -= la
            if la:
                lat = pk[lat_i]
                need -= ((pk[k] - lat) if pk[k] != A else deadline - lat) * rates[
                    np.searchsorted(levels[:count], la)]
        lat_i, la = k, _fit(levels, count, min(q_max, pv[k]))
    # ... then after A the largest level that fits in each period until done
    i = np.searchsorted(pk[:m], max(A, start))
    while i + 1 < m:
        lat, e = pk[i], pk[i + 1]
        g = _fit(levels, count, pv[i])
        aset[i], aval[i] = True, g
        if g:
            rate = rates[np.searchsorted(levels[:count], g)]
            iters = (e - lat) * rate
            if iters >= need:
                real_end = np.ceil(lat + need / rate)
                end = align(now, real_end, slot)
                p = np.searchsorted(keys, lat, side="right") - 1
                base = vals[p] if p >= 0 else total
                times, gpus = _merged(pk[:m][aset[:m]], aval[:m][aset[:m]])
                if lat != end:
                    pv[i] = base - g
                if not _in(keys, end):
                    m = _put(pk, pv, po, m, end, base)
                return _out(times, gpus, end, real_end, pk, pv, m)
            need -= iters
            pv[i] -= g
        i += 1
    g = _fit(levels, count, min(total, levels[count - 1]))
    aset[i], aval[i] = True, g
    real_end = np.ceil(pk[i] + need / rates[np.searchsorted(levels[:count], g)])
    end = align(now, real_end, slot)
    times, gpus = _merged(pk[:m][aset[:m]], aval[:m][aset[:m]])
    pv[i] = total - g
    m = _put(pk, pv, po, m, end, total)
    return _out(times, gpus, end, real_end, pk, pv, m)


@njit(cache=True)
def _out(times, gpus, end, real_end, pk, pv, m):
    cost = 0.0
    for k in range(times.size - 1):
        cost += gpus[k] * (times[k + 1] - times[k])
    cost += gpus[-1] * (end - times[-1])
    left_times, left_free = _merged(pk[:m], pv[:m])
    return times, gpus, end, real_end, cost, left_times, left_free


def plan_all(jobs: list[PlanJob], now: float, slot: float, total: int) -> tuple[dict, bool]:
    """:func:`formulations.elasticflow_events.plan_all` on :func:`plan`: the jobs in the given
    (deadline) order on {now: G}, each job's plan stored on it. Returns the profile left and
    whether every job is on time."""
    keys, vals = np.array([float(now)]), np.array([total], dtype=np.int64)
    ok = True
    for job in jobs:
        levels, rates = np.array(job.levels, dtype=np.int64), np.array(job.rates, dtype=float)
        times, gpus, end, real_end, _, keys, vals = plan(keys, vals, float(now), levels, levels.size, rates,
                                                         float(job.need), float(job.deadline), float(slot),
                                                         int(total), 0)
        job.alloc, job.end, job.real_end = dict(zip(times.tolist(), gpus.tolist())), end, real_end
        job.gpus = job.alloc.get(now, 0)
        ok &= real_end <= job.deadline
    return dict(zip(keys.tolist(), vals.tolist())), ok
