"""Market clearing for the sum form's prices (:func:`optim.price_directed._clearing`), compiled.

Each sweep sets every type's price in turn to the least at which the blocks that prefer it (at the
other prices, idling scored 0) fit its capacity: ``y_k = max(0, t)`` for the threshold t of the
block whose budget would overfill it, with block b's threshold ``(ratio_bk - max(0, best other
score_b)) / per_price_bk`` (``ratio = c / e``, ``per_price = g / e``, ``need = g h / e``). The sweep
ends with one common move of every priced type's price (the types compete with idling together).
Thresholds are weighted order statistics, found by selection (expected linear time), not a sort.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _crossing(theta, need, count, capacity):
    """The value of ``theta[:count]`` at which its prefix in decreasing order first needs more than
    ``capacity`` (``need``: the weights, permuted with ``theta``); -inf where all of it fits.
    Quickselect on the weighted order: a three-way partition around a pivot p (``> p``, ``== p``,
    ``< p``), then the side that holds the crossing."""
    lo, hi = 0, count
    above = 0.0  # the need of theta[:lo], all larger than theta[lo:hi]
    while hi > lo:
        p = theta[lo + (hi - lo) // 2]
        gt, lt, i = lo, hi, lo  # theta[lo:gt] > p, theta[lt:hi] < p
        while i < lt:
            if theta[i] > p:
                theta[i], theta[gt] = theta[gt], theta[i]
                need[i], need[gt] = need[gt], need[i]
                gt += 1
                i += 1
            elif theta[i] < p:
                lt -= 1
                theta[i], theta[lt] = theta[lt], theta[i]
                need[i], need[lt] = need[lt], need[i]
            else:
                i += 1
        big = 0.0
        for q in range(lo, gt):
            big += need[q]
        if above + big > capacity:
            hi = gt
            continue
        equal = 0.0
        for q in range(gt, lt):
            equal += need[q]
        if above + big + equal > capacity:
            return p
        above += big + equal
        lo = lt
    return -np.inf


@njit(cache=True)
def _top_two(score, b, top1, idx1, top2, idx2):
    """Block b's best and second-best cell scores (and their types) from ``score`` (K, m)."""
    t1, i1, t2, i2 = -np.inf, -1, -np.inf, -1
    for j in range(score.shape[0]):
        s = score[j, b]
        if s > t1:
            t2, i2, t1, i1 = t1, i1, s, j
        elif s > t2:
            t2, i2 = s, j
    top1[b], idx1[b], top2[b], idx2[b] = t1, i1, t2, i2


@njit(cache=True)
def clearing_prices(c, g, e, h, run, n, y, sweeps, firm):
    """``y`` (K,) after ``sweeps`` sweeps (module docstring) over the blocks of data ``c``, ``g``,
    ``e``, ``run`` (K, m: types by blocks) and budgets ``h`` (m,). From nonzero ``y``, a block whose
    best choice under ``y`` (idle scored 0) beats its next by more than ``firm`` times its scale
    ``max_k |c_bk / e_bk|`` keeps it: it takes its need from the capacities and sits the sweeps
    out."""
    K, m = c.shape
    y = y.copy()
    capacity = n.copy()
    act = np.arange(m)
    if y.any():
        scale, t1, t2 = np.zeros(m), np.full(m, -np.inf), np.full(m, -np.inf)
        i1 = np.full(m, -1)
        for k in range(K):  # type by type: the arrays are read in order
            for b in range(m):
                if run[k, b]:
                    r = c[k, b] / e[k, b]
                    scale[b] = max(scale[b], abs(r))
                    s = r - y[k] * (g[k, b] / e[k, b])
                    if s > t1[b]:
                        t2[b], t1[b], i1[b] = t1[b], s, k
                    elif s > t2[b]:
                        t2[b] = s
        active = np.ones(m, dtype=np.bool_)
        used = np.zeros(K)
        for b in range(m):
            if t1[b] >= 0.0:  # a cell first (ties with idling go to the cell), then the next choice
                best, second, cell = t1[b], max(t2[b], 0.0), i1[b]
            else:
                best, second, cell = 0.0, t1[b], -1
            if (best - second) / max(scale[b], 1e-300) > firm:
                active[b] = False
                if cell >= 0:
                    used[cell] += g[cell, b] * h[b] / e[cell, b]
        for k in range(K):
            capacity[k] = max(n[k] - used[k], 0.0)
        act = np.flatnonzero(active)
    m = act.size
    ratio, per_price, need, score = np.empty((K, m)), np.zeros((K, m)), np.zeros((K, m)), np.empty((K, m))
    for k in range(K):
        for i in range(m):
            b = act[i]
            ratio[k, i] = -np.inf
            if run[k, b]:
                ratio[k, i] = c[k, b] / e[k, b]
                per_price[k, i] = g[k, b] / e[k, b]
                need[k, i] = g[k, b] * h[b] / e[k, b]
            score[k, i] = ratio[k, i] - y[k] * per_price[k, i]
    top1, top2 = np.empty(m), np.empty(m)
    idx1, idx2 = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)
    for b in range(m):
        _top_two(score, b, top1, idx1, top2, idx2)
    theta, weight = np.empty(m), np.empty(m)
    inside, outside = np.empty(m), np.empty(m)
    k_in = np.empty(m, dtype=np.int64)
    for _ in range(sweeps):
        for k in range(K):
            count, total = 0, 0.0
            for b in range(m):
                if per_price[k, b] <= 0 or ratio[k, b] == -np.inf:
                    continue
                other = max(top2[b] if idx1[b] == k else top1[b], 0.0)
                t = (ratio[k, b] - other) / per_price[k, b]
                if t > 0:
                    theta[count], weight[count] = t, need[k, b]
                    total += need[k, b]
                    count += 1
            y[k] = 0.0
            if total > capacity[k]:
                y[k] = max(_crossing(theta, weight, count, capacity[k]), 0.0)
            for b in range(m):
                old, new = score[k, b], ratio[k, b] - y[k] * per_price[k, b]
                score[k, b] = new
                if idx1[b] == k:
                    if new >= top2[b]:
                        top1[b] = new
                    else:
                        _top_two(score, b, top1, idx1, top2, idx2)
                elif new > top1[b]:
                    top2[b], idx2[b], top1[b], idx1[b] = top1[b], idx1[b], new, k
                elif idx2[b] == k:
                    if new >= old:
                        top2[b] = new
                    else:
                        _top_two(score, b, top1, idx1, top2, idx2)
                elif new > top2[b]:
                    top2[b], idx2[b] = new, k
        total_capacity, lowest, priced = 0.0, np.inf, 0
        for k in range(K):
            if y[k] > 0:
                total_capacity += capacity[k]
                lowest = min(lowest, y[k])
                priced += 1
        if priced == 0:
            continue
        for b in range(m):
            k_in[b], inside[b], outside[b] = -1, -np.inf, 0.0
        for k in range(K):
            for b in range(m):
                if y[k] > 0:
                    if score[k, b] > inside[b]:
                        k_in[b], inside[b] = k, score[k, b]
                elif score[k, b] > outside[b]:
                    outside[b] = score[k, b]
        for b in range(m):
            theta[b], weight[b] = -np.inf, 0.0
            kb = k_in[b]
            if kb >= 0:
                weight[b] = need[kb, b]
                if per_price[kb, b] > 0 and inside[b] > -np.inf:
                    theta[b] = (inside[b] - outside[b]) / per_price[kb, b]
        t = max(-lowest, _crossing(theta, weight, m, total_capacity))
        for k in range(K):
            if y[k] > 0:
                y[k] += t
                for b in range(m):
                    score[k, b] = ratio[k, b] - y[k] * per_price[k, b]
        for b in range(m):
            _top_two(score, b, top1, idx1, top2, idx2)
    return y


@njit(cache=True)
def best_choices(c, g, e, run, y):
    """Each block's best choice under prices ``y``: the first type of the largest score
    ``(c_bk - y_k g_bk) / e_bk`` over its runnable cells, or K (idling, score 0) where every
    score is below 0 (data (K, m): types by blocks)."""
    K, m = c.shape
    best = np.full(m, K)
    top = np.full(m, -np.inf)
    for k in range(K):
        for b in range(m):
            if run[k, b]:
                s = (c[k, b] - y[k] * g[k, b]) / e[k, b]
                if s > top[b]:
                    top[b], best[b] = s, k
    for b in range(m):
        if top[b] < 0.0:
            best[b] = K
    return best
