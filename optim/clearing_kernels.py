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
def clearing_sweeps(ratio, per_price, need, n, y, sweeps):
    """``y`` (K,) after ``sweeps`` sweeps (module docstring); ``ratio`` is -inf off the runnable
    cells, ``per_price`` and ``need`` 0 there."""
    m, K = ratio.shape
    y = y.copy()
    score = np.empty((m, K))
    for b in range(m):
        for k in range(K):
            score[b, k] = ratio[b, k] - y[k] * per_price[b, k]
    theta = np.empty(m)
    weight = np.empty(m)
    for _ in range(sweeps):
        for k in range(K):
            count, total = 0, 0.0
            for b in range(m):
                other = 0.0
                for j in range(K):
                    if j != k and score[b, j] > other:
                        other = score[b, j]
                if per_price[b, k] > 0 and ratio[b, k] > -np.inf:
                    t = (ratio[b, k] - other) / per_price[b, k]
                    if t > 0:
                        theta[count], weight[count] = t, need[b, k]
                        total += need[b, k]
                        count += 1
            y[k] = 0.0
            if total > n[k]:
                y[k] = max(_crossing(theta, weight, count, n[k]), 0.0)
            for b in range(m):
                score[b, k] = ratio[b, k] - y[k] * per_price[b, k]
        capacity, lowest, priced = 0.0, np.inf, 0
        for k in range(K):
            if y[k] > 0:
                capacity += n[k]
                lowest = min(lowest, y[k])
                priced += 1
        if priced == 0:
            continue
        for b in range(m):
            k_in, inside, outside = -1, -np.inf, 0.0
            for k in range(K):
                if y[k] > 0:
                    if score[b, k] > inside:
                        k_in, inside = k, score[b, k]
                elif score[b, k] > outside:
                    outside = score[b, k]
            theta[b], weight[b] = -np.inf, 0.0
            if k_in >= 0:
                weight[b] = need[b, k_in]
                if per_price[b, k_in] > 0 and inside > -np.inf:
                    theta[b] = (inside - outside) / per_price[b, k_in]
        t = max(-lowest, _crossing(theta, weight, m, capacity))
        for k in range(K):
            if y[k] > 0:
                y[k] += t
                for b in range(m):
                    score[b, k] = ratio[b, k] - y[k] * per_price[b, k]
    return y
