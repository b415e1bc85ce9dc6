"""The price-directed method's reduced LP (:mod:`optim.price_directed`): the free blocks' cells
and the fixed blocks' aggregates. The sum form's is solved by the compiled GUB simplex
(:mod:`optim.gub_kernels`) from the blocks' choices under the latest prices, the level form's by
the compiled level simplex (:mod:`optim.level_simplex`) from the crash basis of those choices;
where either does not take it (a cell of no capacity or budget use, a block that runs nowhere)
or ends without an optimum, as one canonical model by HiGHS, from a starting basis built the same
way (and the result's notes say so)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .basis import BASIC, LOWER, UPPER, Basis
from .canonical import CanonicalModel
from .options import SolveOptions
from .result import Status
from .rowwise import argmin_rows
from .sparse import CscArrays

if TYPE_CHECKING:
    from .price_directed import _Part

#: the reduced LPs' zero point is feasible: primal simplex without presolve, from the choices under
#: the latest prices, up to this many free blocks; HiGHS' interior-point method (with crossover to a
#: vertex) above: on throughput's working set of 5,572 of 16,384 distinct jobs 0.17 s against 0.79 s
SIMPLEX_MAX = 1500
OPTIONS = SolveOptions(method="primal")
IPM_OPTIONS = SolveOptions(method="ipm")
#: relative slack of a capacity a crash basis fills
FIT_TOL = 1e-9
#: the GUB simplex's optimality tolerance on reduced costs, relative to the largest |C_bk|; its
#: pivots, at most GUB_PIVOTS per variable of the program and GUB_WORK cells priced in all (about a
#: second: then HiGHS takes the program; from good starting choices it takes 5-200 pivots)
GUB_TOL = 1e-11
GUB_PIVOTS = 50
GUB_WORK = 10**9
#: the level simplex's optimality tolerance (:mod:`optim.level_simplex`), relative to the largest a_bk
LEVEL_TOL = 1e-11


class NotSolved(RuntimeError):
    """The price-directed method stopped without a certificate (message: why)."""


def solve_reduced(part: _Part, free: np.ndarray, G: np.ndarray | None, n: np.ndarray, z_max: float, tally: dict,
             choice: np.ndarray | None = None, cand: np.ndarray | None = None):
    """The reduced LP over the ``free`` blocks, solved by HiGHS: capacities ``n``, and in the
    level form the aggregate ``G_k z`` in capacity row k and ``z <= z_max``. In the sum form,
    ``choice`` (each block's best under the estimated prices, K: idle) gives the simplex its
    starting basis: that cell basic and the budget row at its bound, or the budget's slack basic;
    every capacity slack basic. ``cand`` (m, K): the only cells the free blocks offer (all of
    them where None). Returns the free blocks' x (f, K), z, and the duals y, mu_F, lam_F
    (internal sense, all >= 0)."""
    from .backends.highs import HighsBackend  # the backends import this module's callers

    F = np.flatnonzero(free)
    f, K = F.size, part.g.shape[1]
    if f == 0:
        return nothing_free(part, G, n, z_max)
    run = part.run[F] if cand is None else part.run[F] & cand[F]
    solved = (_gub(part, F, run, n, choice, tally) if part.a is None else
              _level(part, F, run, G, n, z_max, choice, tally))
    if solved is not None:
        return solved
    cells = np.flatnonzero(run.reshape(-1))
    bi, kk = np.divmod(cells, K)
    level = part.a is not None
    per = 3 if level else 2
    rows = np.empty((cells.size, per), dtype=np.int32)
    vals = np.empty((cells.size, per))
    rows[:, 0], rows[:, 1] = kk, K + bi
    vals[:, 0], vals[:, 1] = part.g[F[bi], kk], part.e[F[bi], kk]
    if level:
        rows[:, 2], vals[:, 2] = K + f + bi, -part.a[F[bi], kk]
        z_rows = np.concatenate([np.flatnonzero(G), K + f + np.arange(f)]).astype(np.int32)
        z_vals = np.concatenate([G[G != 0], np.ones(f)])
        data, indices = np.concatenate([vals.reshape(-1), z_vals]), np.concatenate([rows.reshape(-1), z_rows])
        counts = np.append(np.full(cells.size, per), z_rows.size)
        c = np.append(np.zeros(cells.size), 1.0)
        col_lo, col_hi = np.append(np.zeros(cells.size), part.z_lo), np.append(np.full(cells.size, np.inf), z_max)
        row_hi = np.concatenate([n, part.h[F], np.zeros(f)])
    else:
        data, indices = vals.reshape(-1), rows.reshape(-1)
        counts = np.full(cells.size, per)
        c = part.c[F[bi], kk]
        col_lo, col_hi = np.zeros(cells.size), np.full(cells.size, np.inf)
        row_hi = np.concatenate([n, part.h[F]])
    indptr = np.zeros(counts.size + 1, dtype=np.int32)
    np.cumsum(counts, out=indptr[1:])
    num_rows = row_hi.size
    model = CanonicalModel(name="price-directed working set", sense="max", c=c, offset=0.0,
                           A=CscArrays(data, indices, indptr, (num_rows, counts.size)),
                           row_lo=np.full(num_rows, -np.inf), row_hi=row_hi, col_lo=col_lo, col_hi=col_hi,
                           integrality=np.zeros(counts.size, dtype=bool), log_terms=None, blocks={},
                           row_blocks={})
    tally["programs"] += 1
    options = OPTIONS if f <= SIMPLEX_MAX else IPM_OPTIONS
    if choice is not None and f <= SIMPLEX_MAX:
        basis = (_crash(part, F, run, choice[F], bi, kk, G, n, z_max) if level else
                 _crash_sum(part, F, choice[F], bi, kk, n))
        options = options if basis is None else OPTIONS.with_basis(basis)
    result = HighsBackend().solve(model, options)
    if result.status is not Status.OPTIMAL:
        raise NotSolved(f"price-directed: the reduced LP over {f} blocks ended {result.status}"
                        f"{': ' + result.message if result.message else ''}")
    x = np.zeros((f, K))
    x[bi, kk] = result.x[: cells.size]
    d = np.maximum(result.row_duals, 0.0)
    z = float(result.x[-1]) if level else 0.0
    return x, z, d[:K], d[K:K + f], d[K + f:] if level else None


def _gub(part: _Part, F: np.ndarray, run: np.ndarray, n: np.ndarray, choice: np.ndarray | None, tally: dict):
    """The sum form's reduced LP by the GUB simplex (in budget shares: :mod:`optim.gub_kernels`),
    from the blocks' ``choice`` that fit (:func:`_fitting`; all idle without one); None where a
    cell uses no capacity or budget, or the simplex ends without an optimum (HiGHS takes it)."""
    g, e, h = part.g[F], part.e[F], part.h[F]
    if not ((g > 0) | ~run).all() or not ((e > 0) | ~run).all() or not (h > 0).all():
        tally["notes"].append("a cell of no capacity or budget use: HiGHS solved the reduced LP, not the GUB simplex")
        return None
    from .gub_kernels import OPTIMAL, STALL, STATUS, gub_simplex  # numba, on the first sum-form reduced LP

    f, K = run.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(run, h[:, None] / e, 0.0)
    C, A = part.c[F] * per, g * per
    key = np.full(f, K) if choice is None else np.where(_fitting(part, F, choice[F], run, n), choice[F], K)
    top = float(np.abs(C[run]).max(initial=0.0))
    variables = f * (K + 1) + K
    pivots = min(GUB_PIVOTS * variables, GUB_WORK // variables)
    status, u, y, mu, *_ = gub_simplex(C, A, run, n.astype(float), key, pivots, GUB_TOL * max(top, 1e-300), STALL,
                                       np.zeros(0))
    if status != OPTIMAL:
        tally["notes"].append(f"the GUB simplex ended {STATUS[status]} over {f} blocks; HiGHS solved that reduced LP")
        return None
    tally["programs"] += 1
    return u * per, 0.0, np.maximum(y, 0.0), np.maximum(mu, 0.0) / h, None


def _level(part: _Part, F: np.ndarray, run: np.ndarray, G: np.ndarray, n: np.ndarray, z_max: float,
           choice: np.ndarray | None, tally: dict):
    """The level form's reduced LP by the compiled simplex of :mod:`optim.level_simplex`, from
    :func:`crash_start`'s basis (HiGHS' too); None where a block offers no cell, z's lower bound is
    out of that start's reach, or the simplex ends without an optimum (HiGHS takes it)."""
    from .gub_kernels import STALL, STATUS
    from .level_simplex import OPTIMAL, level_simplex  # numba, on the first level-form reduced LP

    f, K = run.shape
    a, e, g, h = part.a[F], part.e[F], part.g[F], part.h[F]
    basis = crash_start(a, e, g, h, run, n, G, part.z_lo, z_max, None if choice is None else choice[F])
    if basis is None:
        tally["notes"].append("a block that runs nowhere, or a level bound out of the start's reach: HiGHS solved "
                              "the reduced LP, not the level simplex")
        return None
    variables = f * (K + 2) + K + 1
    pivots = min(GUB_PIVOTS * variables, GUB_WORK // variables)
    scale = float(np.abs(a[run]).max(initial=1.0))
    c_order = np.ascontiguousarray
    status, x, z, y, mu, lam, _ = level_simplex(c_order(a), c_order(e), c_order(g), np.asarray(h, dtype=float),
                                                c_order(run), np.asarray(n, dtype=float), np.asarray(G, dtype=float),
                                                float(part.z_lo), float(z_max), *basis, pivots, LEVEL_TOL * scale,
                                                STALL)
    if status != OPTIMAL:
        tally["notes"].append(f"the level simplex ended {STATUS[status]} over {f} blocks; HiGHS solved that "
                              "reduced LP")
        return None
    tally["programs"] += 1
    return x, float(z), np.maximum(y, 0.0), np.maximum(mu, 0.0), np.maximum(lam, 0.0)


def _fitting(part: _Part, F: np.ndarray, pick: np.ndarray, run: np.ndarray, n: np.ndarray, tol: float = 0.0
             ) -> np.ndarray:
    """(f,): the free blocks that take their ``pick`` cell (a cell they offer) in a primal
    feasible start: as long as the blocks picking a type, best value per unit of capacity first,
    fit it (within ``tol``, relative); the others idle (:func:`~optim.gub_kernels.fit_in_order`)."""
    from .gub_kernels import fit_in_order  # numba, on the first sum-form reduced LP

    f, K = run.shape
    k = np.minimum(pick, K - 1)
    busy = (pick < K) & run[np.arange(f), k]
    need = part.g[F, k] * part.h[F] / part.e[F, k]
    return fit_in_order(k, busy, need, part.c[F, k] / np.maximum(need, 1e-300), np.asarray(n, dtype=float), tol)


def _positions(f: int, K: int, bi: np.ndarray, kk: np.ndarray) -> np.ndarray:
    """(f, K): each free cell's column in the reduced LP, -1 where it has none."""
    position = np.full((f, K), -1)
    position[bi, kk] = np.arange(bi.size)
    return position


def _crash_sum(part: _Part, F: np.ndarray, pick: np.ndarray, bi: np.ndarray, kk: np.ndarray, n: np.ndarray
               ) -> Basis:
    """The sum form's primal feasible starting basis: each free block's ``pick`` cell basic with
    its budget row at its bound where it fits (:func:`_fitting`), the others idle (their budget's
    slack basic); every capacity slack basic."""
    f, K = F.size, part.g.shape[1]
    position = _positions(f, K, bi, kk)
    busy = _fitting(part, F, pick, position >= 0, n, FIT_TOL)
    cols = np.full(bi.size, LOWER, dtype=np.int8)
    cols[position[np.flatnonzero(busy), pick[busy]]] = BASIC
    rows = np.full(K + f, BASIC, dtype=np.int8)
    rows[K + np.flatnonzero(busy)] = UPPER
    return Basis(cols, rows)


def _crash(part: _Part, F: np.ndarray, run: np.ndarray, pick: np.ndarray, bi, kk, G: np.ndarray, n: np.ndarray,
           z_max: float) -> Basis | None:
    """The level form's primal feasible starting basis for HiGHS (as ``max_min_fairness.start_basis``):
    :func:`crash_start`'s, the level rows at their bound; None where it has none."""
    start = crash_start(part.a[F], part.e[F], part.g[F], part.h[F], run, n, G, part.z_lo, z_max, pick)
    if start is None:
        return None
    own, slack, z_state = start
    f, K = run.shape
    cols = np.full(bi.size + 1, LOWER, dtype=np.int8)
    cols[_positions(f, K, bi, kk)[own[:, :K]]] = BASIC
    cols[-1] = (BASIC, LOWER, UPPER)[z_state]
    rows = np.full(K + 2 * f, UPPER, dtype=np.int8)
    rows[:K][slack] = BASIC
    rows[K:K + f][own[:, K]] = BASIC
    return Basis(cols, rows)
def crash_start(a, e, g, h, run, n, G, z_lo: float, z_max: float, pick=None
                ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """A primal feasible basis ``(own, slack, z_state)`` of the level form's reduced LP for
    :func:`~optim.level_simplex.level_simplex` (and HiGHS, :func:`_crash`): each block on its
    ``pick`` cell (else, or where it does not run there, its cell of least ``g / a``) with its
    budget slack basic and its level row tight; z the most those cells allow, ``min(min_k n_k /
    load_k, least reach, z_max)``, basic, with the capacity row (or the budget row) that sets it
    at its bound, or nonbasic at z_max. None where a block runs nowhere or that z is below
    ``z_lo``."""
    f, K = run.shape
    if not run.any(axis=1).all():
        return None
    rows = np.arange(f)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_level = np.where(run, g / a, np.inf)
    cheapest = argmin_rows(per_level)
    pick = cheapest if pick is None else np.asarray(pick)
    pick = np.where((pick < K) & run[rows, np.minimum(pick, K - 1)], pick, cheapest)
    load = np.bincount(pick, weights=per_level[rows, pick], minlength=K) + G
    with np.errstate(divide="ignore", invalid="ignore"):
        by_type = np.where(load > 0, n / load, np.inf)
        reach = np.where(e[rows, pick] > 0, h * a[rows, pick] / e[rows, pick], np.inf)
    j, w = int(by_type.argmin()), int(reach.argmin())
    z0 = min(by_type[j], reach[w], z_max)
    if not (z0 >= z_lo and np.isfinite(z0)):
        return None
    own = np.zeros((f, K + 2), dtype=bool)
    own[rows, pick] = own[:, K] = True
    slack = np.ones(K, dtype=bool)
    z_state = 2 if z_max <= min(by_type[j], reach[w]) else 0
    if z_state == 0 and by_type[j] <= reach[w]:
        slack[j] = False
    elif z_state == 0:
        own[w, K] = False
    return own, slack, z_state


def nothing_free(part: _Part, G: np.ndarray | None, n: np.ndarray, z_max: float):
    """The reduced LP without free blocks: the sum form has nothing to price (y = 0); the level
    form's z is the most the aggregates fit, ``min(z_max, min_k n_k / G_k)``, priced on the
    type that sets it (``y_k = 1 / G_k``; none where z_max does)."""
    K = part.g.shape[1]
    y, empty = np.zeros(K), np.zeros((0, K))
    if part.a is None:
        return empty, 0.0, y, np.zeros(0), None
    with np.errstate(divide="ignore"):
        room = np.where(G > 0, n / G, np.inf)
    k = int(room.argmin())
    if room[k] < z_max:
        y[k] = 1.0 / G[k]
    z = float(min(room[k], z_max))
    if z < part.z_lo:
        raise NotSolved(f"price-directed: the level's lower bound {part.z_lo:g} is out of reach")
    return empty, z, y, np.zeros(0), np.zeros(0)
