"""The level form of :mod:`optim.price_directed` where no budget binds, as one linked GUB program.

Without its budgets the level form ``max z s.t. z <= sum_k a_bk x_bk (each block b), sum_b g_bk
x_bk <= n_k`` is, in the shares ``w_bk = a_bk x_bk / z`` of each block's level and ``T = 1 / z``,

    min T   s.t.   sum_b p_bk w_bk <= n_k T   (type k),   sum_k w_bk = 1   (block b),   w >= 0

with ``p = g / a``: generalized upper bounds linked by one column, which the compiled GUB simplex
(:func:`optim.gub_kernels.gub_simplex`, its linked mode) solves over every block at once. Its duals
``y'`` (capacity rows, ``n . y' = 1``) give the level form's: ``y = y' / T``, ``lambda_b = min_k
p_bk y'_k / T`` (so ``sum_b lambda_b = 1``), budget duals 0, a dual bound ``n . y = 1 / T = z``.
Where the point ``x = w z / a`` keeps every budget, it is optimal for the whole level form (the
program without budgets is a relaxation); where it does not, the caller solves it otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .rowwise import argmin_rows

if TYPE_CHECKING:
    from .price_directed import _Part

#: optimality tolerance on the linked program's reduced costs, relative to their scale ``max p / sum n``
TOL = 1e-11
#: pivots, at most PIVOTS per variable and WORK cells priced in all (about 0.1 s; then the caller's
#: method)
PIVOTS = 50
WORK = 10**8
#: relative slack allowed on a budget at the point found
BUDGET_TOL = 1e-9
#: programs of more than SAMPLE_MIN blocks start from the prices of a sample of a SHRINK-th of them,
#: at least SAMPLE_SIZE (or half) blocks: 1,024 jobs x 10 types on 0.2 GPUs a job take 173 pivots
#: after a sample of 256, 715 after one of 128
SAMPLE_MIN = 128
SAMPLE_SIZE = 256
SHRINK = 8


def solve_linked(part: _Part, start: np.ndarray, tally: dict):
    """``((x, z, y, mu, lam) or None, prices)``: the level form ``part`` solved, or None where a
    type has no capacity, a block runs nowhere, the simplex ends without an optimum, a budget is
    exceeded at its point or z is below its lower bound; ``prices``: ``(y, z)`` of the program
    without budgets where it was solved (an estimate for the working set), else None. The simplex
    starts from each block's cheapest type under the prices
    of the same program over a sample of the blocks (:func:`_linked`), from ``start`` (a type each
    block runs on, else its cheapest ``p_bk / n_k``) where the program is small."""
    m, K = part.g.shape
    run = part.run
    if not (part.n > 0).all() or not run.any(axis=1).all():
        return None, None
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(run, part.g / part.a, 0.0)
    rows = np.arange(m)
    key = np.where(run[rows, start], start, argmin_rows(np.where(run, p / part.n, np.inf)))
    solved = _linked(p, run, np.asarray(part.n, dtype=float), key, np.random.default_rng(0))
    if solved is None:
        tally["notes"].append(f"the linked program over {m} blocks ended without an optimum; the working set "
                              "solved the level form")
        return None, None
    w, y_t, mu_t, T = solved
    tally["programs"] += 1
    z, y = 1.0 / T, np.maximum(y_t, 0.0) / T
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(run, w * z / part.a, 0.0)
    if ((part.e * x).sum(axis=1) > part.h * (1 + BUDGET_TOL)).any() or z < part.z_lo:
        return None, (y, z)
    return (x, z, y, np.zeros(m), np.maximum(-mu_t, 0.0) / T), (y, z)


def _linked(p: np.ndarray, run: np.ndarray, n: np.ndarray, key: np.ndarray, rng: np.random.Generator):
    """``(w, y', mu', T)`` of the linked program over blocks ``p`` / ``run`` from ``key``, or None;
    above :data:`SAMPLE_MIN` blocks the start is each block's cheapest ``p_bk y_k`` under the prices
    ``y`` of the program over a random sample of the blocks with the capacities scaled to it
    (1,024 distinct jobs x 10 types on 0.2 GPUs a job: 1,315 pivots from the balanced choices, 173
    from the sample's prices)."""
    from .gub_kernels import OPTIMAL, STALL, gub_simplex  # numba

    m, K = p.shape
    if m > SAMPLE_MIN:
        size = max(min(m // 2, SAMPLE_SIZE), m // SHRINK)
        sample = np.sort(rng.choice(m, size, replace=False))
        priced = _linked(p[sample], run[sample], n * (size / m), key[sample], rng)
        if priced is not None:
            key = argmin_rows(np.where(run, p * priced[1], np.inf))
    variables = m * (K + 1) + K + 1
    pivots = min(PIVOTS * variables, WORK // variables)
    status, w, y_t, mu_t, _, T = gub_simplex(np.zeros((m, K)), p, run, np.zeros(K), key, pivots,
                                             TOL * float(p.max()) / float(n.sum()), STALL, n)
    return (w, y_t, mu_t, T) if status == OPTIMAL and T > 0 else None
