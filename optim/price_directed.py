"""An exact price-directed method for assignment-shaped LPs (:mod:`optim.assignment_lp`).

**Prices.** With prices ``y_k >= 0`` on the capacity rows the program falls apart into one tiny
LP per block. In the sum form block b puts its whole budget on the cell of best score
``s_bk = (c_bk - y_k g_bk) / e_bk``, or idles where every score is negative; in the level form
it reaches the level z on the cell of least capacity cost per unit of level ``g_bk y_k /
a_bk``, with ``x_bk = z / a_bk`` (within its budget while ``z <= h_b a_bk / e_bk``, its reach).

**Working set.** A sum-form problem of at most :data:`DIRECT_MAX` blocks is solved whole by
the compiled GUB simplex (:mod:`optim.gub_kernels`) from its blocks' choices under the prices of
:data:`CLEARING_SWEEPS` sweeps of market clearing from zero (:func:`_clearing`). Larger ones (and
the level form above :data:`BASE` blocks) estimate their prices on a random sample of the blocks
with the capacities scaled to it, solved the same way (recursively), in the sum form refined by
sweeps of market clearing over all blocks. Every
block whose choice under the estimate wins by a margin (:data:`MARGIN`) is fixed to it and
aggregated: in the sum form its usage comes off the capacities, in the level form it adds
``g_bk / a_bk`` per unit of z to capacity row k (and bounds z by its reach). The other blocks
and the aggregates form a reduced LP (:mod:`optim.reduced_lp`: the sum form's by the GUB simplex,
a large one by the method itself with a finer margin, :data:`RECURSE`; the level form's by the
compiled level simplex of :mod:`optim.level_simplex`; HiGHS where either gives way), whose duals
are the next prices;
in the sum form a free block offers it only its cells within the margin of its best, and a cell
left out joins where its reduced cost under the reduced LP's duals is positive (before any fixed
block is freed: such cells move the prices back toward the estimate, where a reduced LP without
them priced a type at 0 and made half the fixed blocks fail).

**Binding capacities, level form.** Where no one-cell choice reaches the worst block's reach at
most :data:`DIRECT_MAX` blocks (or classes) first go to the linked program of
:mod:`optim.level_gub` (the level form without budgets, one GUB simplex over every block); its
point is optimal where it keeps every budget; otherwise, its level being below the worst block's
reach (a capacity binds), the level form of at most :data:`LEVEL_DIRECT` blocks is solved whole
by the level simplex from the choices under its prices, a larger one by the working set from its
prices and level; where its level reaches the worst block's but no point at that level fits
(:func:`_unpriced`), from its prices the same way; else the steps above.

**Exact finish and optimality.** The fixed blocks' duals follow from the reduced LP's prices in
closed form (sum form: budget dual ``mu_b = s_b,k1``; level form: ``mu_b = 0``, level dual
``lambda_b = g_bk1 y_k1 / a_bk1``). If every fixed block's choice is still best under the new
prices (and, in the level form, z stays below its reach), the full primal point (reduced LP plus
fixed blocks) is feasible, these duals are feasible for the full dual (each fixed block's
reduced costs are its choice's margin, and no free block's cell left out has a positive one)
and complementary to it, so both are optimal: the
result's dual bound equals its objective. Otherwise the blocks that fail are freed and the
reduced LP solved again; the working set only grows, so the method ends, at worst with every
block free (after :data:`MAX_ROUNDS` it gives up and says so). A round frees at most as many
failing blocks as the working set holds (:func:`_fewest`).

**Which optimum.** In the sum form the vertex the GUB simplex returns (HiGHS' before 2026-11-30:
another optimal vertex where the program has several); in the level form the level simplex's
(HiGHS' before 2026-11-30). In the level form
the vertex leaves capacity idle on types of price 0; :func:`fill` hands each such type's spare
capacity to the blocks on it in proportion to their share, up to their budgets: the level (the
objective) and the dual bound are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .assignment_lp import AssignmentLP
from .level_balance import balance, fill
from .level_gub import solve_linked
from .reduced_lp import NotSolved, solve_reduced
from .rowwise import argmax_rows, argmin_rows, fortran, take_rows
from .sparse import distinct_rows

#: at most this many blocks are solved directly; larger problems estimate their prices on a sample
BASE = 512
#: the sample is this many times smaller than the problem it prices (and at least BASE blocks)
SHRINK = 8
#: a block is fixed where its best choice beats the next by this much (relative)
MARGIN = 0.01
#: relative tolerance of the optimality checks on the fixed blocks
CHECK_TOL = 1e-9
MAX_ROUNDS = 20
#: a round frees at most as many failing blocks as the working set holds, and at least this many
#: (:func:`_fewest`)
GROW_MIN = 128
#: market-clearing sweeps (:func:`_clearing`) that give the sum form's first prices for a direct
#: solve's starting choices (throughput, 256 distinct jobs: 120 simplex pivots after one sweep, 5
#: after four), and that refine a sample's prices before the working set
CLEARING_SWEEPS = 4
REFINE_SWEEPS = 3
#: a sum-form problem of at most this many blocks is solved directly by the GUB simplex
#: (:mod:`optim.gub_kernels`) from the clearing prices' choices, without a working set
DIRECT_MAX = 4096
#: where a budget binds at the linked program's point, a level form of at most this many blocks is
#: solved whole from the choices under its prices (max-min, 256 distinct jobs x 10 types on 0.5
#: GPUs a job: 1.0 ms against 4.5 ms for the working set's three rounds; 1,024: 1.6 against 0.7)
LEVEL_DIRECT = 512
#: the level form's first choice (:func:`_choose_level`) is compiled from this many cells
COMPILED_MIN = 250_000
#: a refining sweep leaves out the blocks whose choice wins by this much (relative)
FIRM = 0.1
#: a sum-form working set of more than this many times BASE blocks (and at most RECURSE_SHARE of the
#: blocks) is solved by the method itself, not by HiGHS (throughput, 300,000 distinct jobs x 10
#: types: 2.7 s against 7.6 s a call), with its fixing margin NESTED_MARGIN times its parent's:
#: its blocks are the parent's near ties, so the parent's margin would fix none of them (1,000,000
#: x 10: a working set of 52,654 of 52,945 blocks went to HiGHS, 6.6 s; with 0.1, 5,508 of 99,694
#: blocks are left at the next level, 0.3 s)
RECURSE = 8
RECURSE_SHARE = 0.9
NESTED_MARGIN = 0.1
#: equal blocks are merged where that makes the problem at least this many times smaller; a random
#: sample of this many blocks, all distinct, rules merging out first (with at most m / 2 classes a
#: sample of 2,048 of 1,000,000 blocks holds two of one class with probability 0.98)
MERGE_GAIN = 2
MERGE_PROBE = 2048


@dataclass
class _Part:
    """A problem in the internal form (all of it, or a sample with scaled capacities)."""

    c: np.ndarray | None
    a: np.ndarray | None
    g: np.ndarray
    e: np.ndarray
    h: np.ndarray
    n: np.ndarray
    run: np.ndarray
    z_lo: float
    #: :func:`_level_choice`'s answer, once asked (the top level asks twice where a capacity binds)
    level_choice: tuple | None = None
    #: :meth:`scale`'s answer, once asked
    _scale: np.ndarray | None = None

    def take(self, rows: np.ndarray, share: float) -> _Part:
        return _Part(take_rows(self.c, rows), take_rows(self.a, rows), take_rows(self.g, rows),
                     take_rows(self.e, rows), self.h[rows], self.n * share, take_rows(self.run, rows), self.z_lo)

    def scale(self) -> np.ndarray:
        """The sum form's score scale of each block, ``max_k |c_bk / e_bk|`` over its runnable cells."""
        if self._scale is None:
            self._scale = np.abs(np.where(self.run, self.c / self.e, 0.0)).max(axis=1)
        return self._scale


@dataclass
class AssignmentSolution:
    """Internal primal ``x`` (m, K) and level ``z`` (0 in the sum form); duals ``y`` (capacity
    rows), ``mu`` (budget rows), ``lam`` (level rows); the dual objective ``bound``; rounds of the
    working set, reduced LPs solved and the largest working set at the top level."""

    x: np.ndarray
    z: float
    y: np.ndarray
    mu: np.ndarray
    lam: np.ndarray | None
    bound: float
    rounds: int
    programs: int
    largest: int
    classes: int | None = None  # the classes of equal blocks solved over, where merged
    #: where a step gave way to another (the GUB simplex to HiGHS, a working set to a sample's)
    notes: list[str] = field(default_factory=list)


def solve_assignment(lp: AssignmentLP, seed: int = 0) -> AssignmentSolution:
    """``lp`` solved to optimality with a certificate (module docstring); :class:`NotSolved` where
    the reduced LP has no optimum (infeasible, unbounded) or the rounds run out."""
    part = _Part(fortran(lp.c), fortran(lp.a), fortran(lp.g), fortran(lp.e), lp.h, lp.n, fortran(lp.run & _useful(lp)),
                 lp.z_lo)
    tally = {"programs": 0, "notes": []}
    rng = np.random.default_rng(seed)
    level = part.a is not None
    fits = level and _level_choice(part)[3]
    merged = None if fits else _classes(part)
    inner = part if merged is None else merged[0]
    solved = prices = None
    if level and not fits and inner.g.shape[0] <= DIRECT_MAX:  # a capacity may bind: the linked program
        found, prices = solve_linked(inner, _level_choice(inner)[2], tally)
        solved = None if found is None else (*found, 0, inner.g.shape[0])
    binds = prices is not None and prices[1] < _level_choice(inner)[0]  # z* <= the linked level < Z
    if solved is None and binds:  # so no unpriced point: a working set from the linked prices
        solved = _from_prices(inner, *prices, tally)
    easy = _unpriced(part, rng, tally, merged) if level and solved is None and not binds else None
    if easy is not None:
        x, z, y, mu, lam = easy
        rounds = largest = 0
        classes = None
    else:
        if fits:
            merged = _classes(part)
            inner = part if merged is None else merged[0]
        classes = None if merged is None else inner.g.shape[0]
        if solved is None and prices is not None and not binds:  # the worst reach is not met either
            solved = _from_prices(inner, *prices, tally)
        x, z, y, mu, lam, rounds, largest = solved if solved is not None else _solve(inner, rng, tally)
        if merged is not None:  # each member takes its class's x; the class's duals are split evenly
            labels, sizes = merged[1], merged[2][merged[1]]
            x, mu = x[labels], mu[labels] / sizes
            lam = None if lam is None else lam[labels] / sizes
    if part.a is not None:
        x = fill(x, part, y)
    bound = float(part.n @ y + part.h @ mu)
    if lam is not None and np.isfinite(part.z_lo):  # z at its lower bound: its reduced cost 1 - sum(lam)
        bound += part.z_lo * (1.0 - float(lam.sum()))
    return AssignmentSolution(x, z, y, mu, lam, bound, rounds, tally["programs"], largest, classes,
                              list(dict.fromkeys(tally["notes"])))


def _from_prices(part: _Part, y: np.ndarray, z: float, tally: dict):
    """The level form from the linked program's prices and level: up to :data:`LEVEL_DIRECT` blocks
    whole, by the reduced LP of every block from their choices under those prices; above, by the
    working set (blocks a budget limits near that level are free); None where it ends without a
    certificate."""
    m, K = part.g.shape
    try:
        if m <= LEVEL_DIRECT:
            solved = solve_reduced(part, np.ones(m, dtype=bool), np.zeros(K), part.n, np.inf, tally,
                                   _choices(part, y)[0])
            return (*solved, 1, m)
        return _working_set(part, y, z, tally)
    except NotSolved as exc:
        tally["notes"].append(f"{exc}, from the linked program's prices; solved from a sample's instead")
        return None


def _classes(part: _Part) -> tuple[_Part, np.ndarray, np.ndarray] | None:
    """Equal blocks as one, where that shrinks the problem :data:`MERGE_GAIN` times: ``(merged,
    labels, sizes)``. Exact: a class of s equal blocks is one block whose x stands for each
    member's, with ``s g`` in the capacity rows (and ``s c`` in the sum form's objective); by
    symmetry and convexity some optimum gives every member the same x, and splitting the
    class's budget and level duals evenly over its members keeps the full dual feasible."""
    m = part.g.shape[0]
    cells = part.c if part.c is not None else part.a

    def rows(pick):
        return np.concatenate([cells[pick], part.g[pick], part.e[pick], part.h[pick, None], part.run[pick]], axis=1)

    probe = rows(slice(None) if m <= MERGE_PROBE else np.random.default_rng(2).choice(m, MERGE_PROBE, replace=False))
    key = probe @ np.random.default_rng(3).standard_normal(probe.shape[1])  # equal rows, equal keys
    if (np.isfinite(key).all() and np.unique(key).size == key.size) or distinct_rows(probe)[0].size == key.size:
        return None
    first, labels, sizes = distinct_rows(rows(slice(None)))
    if MERGE_GAIN * first.size > m:
        return None
    weight = sizes[:, None].astype(float)
    merged = _Part(fortran(None if part.c is None else part.c[first] * weight),
                   fortran(None if part.a is None else part.a[first]), fortran(part.g[first] * weight),
                   fortran(part.e[first]), part.h[first], part.n, fortran(part.run[first]), part.z_lo)
    return merged, labels, sizes


def _useful(lp: AssignmentLP) -> np.ndarray:
    """Cells that can be positive at an optimum: in the level form those that add to the level."""
    return lp.a > 0 if lp.a is not None else np.ones(lp.shape, dtype=bool)


def _unpriced(part: _Part, rng: np.random.Generator, tally: dict, merged: tuple | None = None):
    """The level form's optimum where no capacity binds, or None: every block reaches
    ``Z = min_b max_k h_b a_bk / e_bk`` (the worst block's reach) on one cell, chosen and
    balanced by :func:`balance` (:func:`_level_choice`), or where those do not fit, split over
    its cells by :func:`_fit` (over ``merged``'s classes where equal blocks merge: a class's x
    is each member's); where that fits every type, z = Z is optimal with the duals ``y = 0``,
    ``lambda`` and ``mu`` on the worst block alone (``mu_w = max_k a_wk / e_wk``)."""
    m, K = part.g.shape
    Z, worst, best, fits = _level_choice(part)
    y, mu, lam = np.zeros(K), np.zeros(m), np.zeros(m)
    lam[worst] = 1.0
    mu[worst] = np.where(part.run[worst], part.a[worst] / part.e[worst], 0.0).max()
    if Z < part.z_lo:
        return None
    if not fits:
        x = _fit(part if merged is None else merged[0], Z, rng, tally)
        if x is not None and merged is not None:
            x = fortran(x[merged[1]])
        return None if x is None else (x, Z, y, mu, lam)
    x = np.zeros((m, K), order="F")
    if Z > 0:
        rows = np.arange(m)
        x[rows, best] = Z / part.a[rows, best]
    return x, Z, y, mu, lam


def _fit(part: _Part, Z: float, rng: np.random.Generator, tally: dict) -> np.ndarray | None:
    """Every block at level exactly Z within the capacities and its budget, or None where this
    finds none: the level form over the cells that reach Z alone, with budgets that never bind
    (``K max_k e_bk n_k / g_bk``, at least twice the block's), solved as the linked program
    (:mod:`optim.level_gub`) up to :data:`DIRECT_MAX` blocks, else (or where that finds no point)
    by :func:`_solve` (its capacities bind, so its prices say where the blocks fit); where its
    level z' >= Z, each
    block's x scaled to level Z. A mix of cells that each reach Z alone, at level Z, keeps the
    block's budget. (A sample of the blocks reaches a higher worst level than all of them, and
    prices every type 0 there: the working set from those prices froze most blocks on the types
    the tie-break picks, and freed 744 of 1,024 blocks.)"""
    with np.errstate(divide="ignore", invalid="ignore"):
        allowed = part.run & (part.h[:, None] * part.a / part.e >= Z)
        whole = np.where(allowed & (part.g > 0), part.e * part.n / part.g, 0.0)
    if not allowed.any(axis=1).all():
        return None
    h = np.maximum(2.0 * part.h, part.g.shape[1] * whole.max(axis=1))
    aux = _Part(None, part.a, part.g, part.e, h, part.n, fortran(allowed), -np.inf)
    found = solve_linked(aux, _level_choice(part)[2], tally)[0] if aux.g.shape[0] <= DIRECT_MAX else None
    try:
        x, z, *_ = found if found is not None else _solve(aux, rng, tally)
    except NotSolved:
        return None
    if z < Z:
        return None
    return x * (Z / (part.a * x).sum(axis=1))[:, None]


def _level_choice(part: _Part) -> tuple[float, int, np.ndarray, bool]:
    """``(Z, worst, best, fits)``: the worst block's reach Z and that block, each block's cell
    for level Z (one that reaches it, first the one of most capacity per unit of level, then
    :func:`balance`), and whether those choices fit every capacity at level Z."""
    if part.level_choice is None:
        part.level_choice = _choose_level(part)
    return part.level_choice


def _choose_level(part: _Part) -> tuple[float, int, np.ndarray, bool]:
    """:func:`_level_choice` computed: from :data:`COMPILED_MIN` cells by the compiled pass
    (:mod:`optim.level_kernels`) where no type is over its capacity at Z (then :func:`balance`
    moves nothing), else by array operations."""
    if part.g.size >= COMPILED_MIN:
        from .level_kernels import level_choice  # numba, for large programs only

        Z, worst, best, load = level_choice(*(np.ascontiguousarray(v.T) for v in (part.a, part.g, part.e)),
                                            np.asarray(part.h, dtype=float), np.ascontiguousarray(part.run.T),
                                            np.asarray(part.n, dtype=float))
        if Z <= 0:
            return Z, worst, best, True
        if (part.n - Z * load >= 0).all():
            return Z, worst, best, bool((Z * load <= part.n * (1 + CHECK_TOL)).all())
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.where(part.run, part.h[:, None] * part.a / part.e, 0.0)
        per_level = np.where(part.run, part.g / part.a, np.inf)
    top = reach.max(axis=1)
    worst = int(top.argmin())
    Z = float(top[worst])
    allowed = part.run & (reach >= Z)
    best = argmax_rows(np.where(allowed, part.n / per_level, -1.0))
    if Z <= 0:
        return Z, worst, best, True
    best, load = balance(per_level, allowed, part.n, best, Z)
    return Z, worst, best, bool((Z * load <= part.n * (1 + CHECK_TOL)).all())


def _solve(part: _Part, rng: np.random.Generator, tally: dict, margin: float = MARGIN):
    """``(x, z, y, mu, lam, rounds, largest)`` of ``part``: directly up to :data:`BASE` blocks in
    the level form (from a crash basis) and :data:`DIRECT_MAX` in the sum form (from the choices
    under market-clearing prices), else by the working set from a sample's prices (fixing the
    blocks that win by ``margin``)."""
    m = part.g.shape[0]
    if m <= (BASE if part.a is not None else DIRECT_MAX):
        free = np.ones(m, dtype=bool)
        choice = (_level_choice(part)[2] if part.a is not None else
                  _start(part, _clearing(part, np.zeros(part.n.size), CLEARING_SWEEPS)))
        x, z, y, mu, lam = solve_reduced(part, free, np.zeros(part.n.size), part.n, np.inf, tally, choice)
        return x, z, y, mu, lam, 1, m
    size = max(BASE, m // SHRINK)
    sample = np.sort(rng.choice(m, size, replace=False))
    _, z_est, y_est, *_ = _solve(part.take(sample, size / m), rng, tally, margin)
    if part.a is None and REFINE_SWEEPS:
        y_est = _clearing(part, y_est, REFINE_SWEEPS)
    return _working_set(part, y_est, z_est, tally, margin)


def _clearing(part: _Part, y: np.ndarray, sweeps: int) -> np.ndarray:
    """The sum form's prices after ``sweeps`` Gauss-Seidel sweeps of market clearing from ``y``
    (:mod:`optim.clearing_kernels`): each type's price in turn set to the least at which the blocks
    that prefer it (at the others' prices) fit its capacity, then one common move of every priced
    type's price: the types compete with idling together, which one type at a time follows slowly
    (throughput, 4,096 distinct jobs: prices 5-13 % under the optimum after three sweeps). From
    nonzero prices, blocks whose choice wins by :data:`FIRM` keep it: the sweeps run over the
    others, on the capacity the firm ones leave."""
    from .clearing_kernels import clearing_prices  # numba, on the first sum-form program

    return clearing_prices(_by_type(part.c), _by_type(part.g), _by_type(part.e), np.asarray(part.h, dtype=float),
                           _by_type(part.run), np.asarray(part.n, dtype=float), np.asarray(y, dtype=float), sweeps,
                           FIRM)


def _by_type(a: np.ndarray) -> np.ndarray:
    """(K, m) C-ordered: a column-major (m, K) array's transpose, no copy (the kernels' layout)."""
    return np.ascontiguousarray(a.T)


def _start(part: _Part, y: np.ndarray) -> np.ndarray:
    """The sum form's best choices under prices ``y`` (:func:`_choices`' first answer, compiled:
    :func:`~optim.clearing_kernels.best_choices`)."""
    from .clearing_kernels import best_choices

    return best_choices(_by_type(part.c), _by_type(part.g), _by_type(part.e), _by_type(part.run),
                        np.asarray(y, dtype=float))


def _choices(part: _Part, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each block's best choice under prices ``y`` and its relative margin over the next: the
    level form's cost per unit of level (ties between types of price 0 broken toward the most
    capacity per GPU-share), the sum form's score (choice K: idle, score 0)."""
    m, K = part.g.shape
    rows = np.arange(m)
    if part.a is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            per_level = np.where(part.run, part.g / part.a, np.inf)
        tie = 1e-12 * max(float(y.max()), 1.0) / np.maximum(part.n, 1e-300)
        cost = per_level * (y + tie)
        k1 = argmin_rows(cost)
        c1 = cost[rows, k1]
        cost[rows, k1] = np.inf
        c2 = cost.min(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            margin = np.where(np.isfinite(c2), (c2 - c1) / c2, np.inf)
        return k1, np.nan_to_num(margin, nan=0.0)
    score = np.empty((m, K + 1), order="F")
    score[:, :K] = np.where(part.run, (part.c - y * part.g) / part.e, -np.inf)
    score[:, K] = 0.0
    k1 = argmax_rows(score)
    s1 = score[rows, k1]
    score[rows, k1] = -np.inf
    s2 = score.max(axis=1)
    return k1, (s1 - s2) / np.maximum(part.scale(), 1e-300)


def _working_set(part: _Part, y: np.ndarray, z: float, tally: dict, margin_limit: float = MARGIN):
    """``part`` solved from estimated prices ``y`` and level ``z``, the blocks that win by
    ``margin_limit`` fixed (module docstring)."""
    m, K = part.g.shape
    k1, margin = _choices(part, y)
    free = margin < margin_limit
    level = part.a is not None
    largest = 0
    start = k1  # the reduced LP's starting choices: under the latest prices
    cand = None if level else _near(part, y, margin_limit)
    for rounds in range(1, MAX_ROUNDS + 1):
        load, reach = _fixed_load(part, k1)
        if level:
            free |= ~np.isfinite(load) | (reach <= z * (1 + MARGIN))
        else:
            on = ~free & (k1 < K)
            use = np.bincount(k1[on], weights=load[on], minlength=K)
            for k in np.flatnonzero(use > part.n * (1 + CHECK_TOL)):  # fixed blocks alone overfill type k
                free[_overflow(np.flatnonzero(on & (k1 == k)), margin, load, part.n[k])] = True
        fixed = ~free
        largest = max(largest, int(free.sum()))
        if level:
            G = np.bincount(k1[fixed], weights=load[fixed], minlength=K)
            x_f, z, y_new, mu_f, lam_f = solve_reduced(part, free, G, part.n, float(reach[fixed].min(initial=np.inf)),
                                                  tally, start)
        else:
            on = fixed & (k1 < K)
            use = np.bincount(k1[on], weights=load[on], minlength=K)
            residual = np.maximum(part.n - use, 0.0)
            if RECURSE * BASE < free.sum() <= RECURSE_SHARE * m:  # a sum-form program: solved the same way
                sub = part.take(np.flatnonzero(free), 1.0)
                sub.n, sub.run = residual, sub.run & fortran(cand[free])
                x_f, z, y_new, mu_f, lam_f, *_ = _solve(sub, np.random.default_rng(rounds), tally,
                                                         margin_limit * NESTED_MARGIN)
            else:
                x_f, z, y_new, mu_f, lam_f = solve_reduced(part, free, None, residual, np.inf, tally, start, cand)
        bad = fixed & _violates(part, y_new, k1, level)
        if level:
            bad |= fixed & (reach <= z * (1 + CHECK_TOL))
        missing = None if level else _priced_out(part, y_new, free, mu_f, cand)
        if not bad.any() and (missing is None or not missing.any()):
            return (*_assemble(part, free, k1, x_f, z, y_new, mu_f, lam_f), rounds, largest)
        if missing is not None and missing.any():  # the free blocks' cells first: they move the prices
            cand |= missing
            start = _start(part, y_new) if not level else _choices(part, y_new)[0]
            continue
        bad = _fewest(bad, margin, max(GROW_MIN, int(free.sum())))
        free |= bad
        if not level:
            cand |= missing | (_near(part, y_new, margin_limit) & bad[:, None])
            cand[np.flatnonzero(bad & (k1 < K)), k1[bad & (k1 < K)]] = True
        start = _start(part, y_new) if not level else _choices(part, y_new)[0]
    raise NotSolved(f"price-directed: no certificate after {MAX_ROUNDS} rounds ({int(free.sum())} of {m} blocks "
                    f"in the working set)")


def _fewest(bad: np.ndarray, margin: np.ndarray, most: int) -> np.ndarray:
    """At most ``most`` of the ``bad`` blocks: those of least ``margin`` (the estimate's nearest
    ties). A reduced LP over few free blocks on little residual capacity can price a type far
    above the estimate, and then most fixed blocks fail its check; freeing them all makes the next
    reduced LP almost the whole problem (throughput, 4,096 distinct jobs: 2,450 of 4,096 blocks),
    where freeing the marginal ones lets the prices settle in a few rounds of a growing set."""
    idx = np.flatnonzero(bad)
    if idx.size <= most:
        return bad
    out = np.zeros_like(bad)
    out[idx[np.argsort(margin[idx], kind="stable")[:most]]] = True
    return out


def _near(part: _Part, y: np.ndarray, margin: float = MARGIN) -> np.ndarray:
    """(m, K): the sum form's cells whose score under ``y`` is within ``margin`` of the
    block's best choice (idle included)."""
    score = np.where(part.run, (part.c - y * part.g) / part.e, -np.inf)
    best = np.maximum(score.max(axis=1), 0.0)
    return part.run & (score >= (best - margin * np.maximum(part.scale(), 1e-300))[:, None])


def _priced_out(part: _Part, y: np.ndarray, free: np.ndarray, mu_f: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """(m, K): the free blocks' cells left out of the reduced LP whose reduced cost under its
    prices ``y`` and budget duals ``mu_f`` is positive (beyond :data:`CHECK_TOL`)."""
    F = np.flatnonzero(free)
    out = np.zeros(part.g.shape, dtype=bool, order="F")
    score = np.where(part.run[F] & ~cand[F], (part.c[F] - y * part.g[F]) / part.e[F], -np.inf)
    out[F] = score > (mu_f + CHECK_TOL * part.scale()[F])[:, None]
    return out


def _fixed_load(part: _Part, k1: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """What a block fixed to its choice ``k1`` takes from its capacity row: in the level form per
    unit of z (``g / a``), with its reach (the largest z its budget allows there); in the sum form
    all of it (its budget spent there; 0 idle)."""
    m, K = part.g.shape
    rows, k = np.arange(m), np.minimum(k1, K - 1)
    g, e = part.g[rows, k], part.e[rows, k]
    if part.a is None:
        return np.where(k1 < K, g * part.h / e, 0.0), None
    a, run = part.a[rows, k], part.run[rows, k]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(run, g / a, np.inf), np.where(run, part.h * a / e, 0.0)


def _overflow(blocks: np.ndarray, margin: np.ndarray, load: np.ndarray, capacity: float) -> np.ndarray:
    """The ``blocks`` fixed to one type to free so that the rest fit its ``capacity``: those of
    least margin beyond the prefix, in order of decreasing margin, that fits."""
    order = blocks[np.argsort(-margin[blocks], kind="stable")]
    fits = np.cumsum(load[order]) <= capacity
    return order[~fits]


def _violates(part: _Part, y: np.ndarray, k1: np.ndarray, level: bool) -> np.ndarray:
    """Fixed choices that are not best under prices ``y`` (beyond :data:`CHECK_TOL`)."""
    m, K = part.g.shape
    rows = np.arange(m)
    if level:
        with np.errstate(divide="ignore", invalid="ignore"):
            cost = np.where(part.run, part.g / part.a * y, np.inf)
        chosen = cost[rows, k1]
        return chosen > cost.min(axis=1) * (1 + CHECK_TOL) + CHECK_TOL * np.abs(y).max(initial=0.0) * 1e-3
    score = np.where(part.run, (part.c - y * part.g) / part.e, -np.inf)
    best = np.maximum(score.max(axis=1), 0.0)
    chosen = np.where(k1 < K, score[rows, np.minimum(k1, K - 1)], 0.0)
    return chosen < best - CHECK_TOL * part.scale()


def _assemble(part: _Part, free: np.ndarray, k1: np.ndarray, x_f, z, y, mu_f, lam_f):
    """The full primal and dual point: the reduced LP's on the free blocks, the closed forms on
    the fixed ones (module docstring)."""
    m, K = part.g.shape
    fixed = np.flatnonzero(~free)
    k = k1[fixed]
    x = np.zeros((m, K), order="F")
    mu = np.zeros(m)
    F = np.flatnonzero(free)
    x[F], mu[F] = x_f, mu_f
    lam = None
    if part.a is not None:
        x[fixed, k] = z / part.a[fixed, k]
        lam = np.zeros(m)
        lam[F] = lam_f
        lam[fixed] = part.g[fixed, k] * y[k] / part.a[fixed, k]
    else:
        on = k < K
        x[fixed[on], k[on]] = part.h[fixed[on]] / part.e[fixed[on], k[on]]
        mu[fixed[on]] = (part.c[fixed[on], k[on]] - y[k[on]] * part.g[fixed[on], k[on]]) / part.e[fixed[on], k[on]]
    return x, z, y, mu, lam
