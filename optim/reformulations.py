"""Bridges for what a backend lacks, each one reported in the result's notes.

A model without columns is answered without a backend (:func:`solve_without_columns`):
HiGHS calls any such model optimal without reading its rows, cvxpy and Pyomo refuse it.

Log terms on LP/MILP-only backends: Kelley's outer approximation. With
``u_i = g_i . x + h_i`` and an epigraph variable ``t_i`` per term, the model

    maximize c.x + sum_i b_i t_i   s.t.  t_i <= log(p) + (u_i - p) / p  for cut points p

over-estimates the concave objective, so its optimum is an upper bound; the true
objective at its solution (feasible for the original model) is a lower bound. Cuts at
the current ``u`` are added until (upper - best lower) / max(1, |best lower|) is at
most ``SolveOptions.log_gap``. Where the formulation gives each argument's range, the
first cuts cover it on a geometric grid (at most ``SEED_ERROR`` over-estimate), so a MIP
rarely needs a second solve.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .backends.base import Backend
from .canonical import CanonicalModel
from .options import SolveOptions
from .result import Result, Status, Timings
from .sparse import scipy_sparse as sp
from .sparse import transpose_times

#: smallest argument allowed inside a log (keeps the tangent slopes finite)
LOG_DOMAIN_EPS = 1e-9
#: largest over-estimate of log(u) (absolute) between two seeded cuts
SEED_ERROR = 5e-3


def _tangent_error(r: float) -> float:
    """Largest gap between log and its tangents at p and r·p (the same for every p)."""
    y = r * np.log(r) / (r - 1.0)
    return float(y - 1.0 - np.log(y))


def _seed_ratio(error: float) -> float:
    lo, hi = 1.0 + 1e-9, 100.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _tangent_error(mid) <= error else (lo, mid)
    return lo


#: ratio of consecutive seeded cut points
SEED_RATIO = _seed_ratio(SEED_ERROR)


def _cut_rows(model: CanonicalModel, active: np.ndarray, points: np.ndarray):
    """Rows ``t_i - (g_i . x) / p <= log(p) - 1 + h_i / p`` for terms ``active`` at ``points``."""
    terms = model.log_terms
    k = terms.weights.shape[0]
    G = terms.G[active]
    scale = sp.diags(-1.0 / points)
    T = sp.csr_matrix((np.ones(active.size), (np.arange(active.size), active)), shape=(active.size, k))
    rows = sp.hstack([scale @ G, T], format="csr")
    hi = np.log(points) - 1.0 + terms.offset[active] / points
    return rows, np.full(active.size, -np.inf), hi


def _seed_points(terms, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(term, point) pairs of the first cuts: a geometric grid over each term's known
    argument range, fine enough that no argument is over-estimated by more than
    ``SEED_ERROR``, plus the offset (the argument where the linear part is 0) when it lies
    below the range; one point at ``max(offset, 1)`` where the range is unknown."""
    lo = terms.lo[active] if terms.lo is not None else np.full(active.size, np.nan)
    hi = terms.hi[active] if terms.hi is not None else np.full(active.size, np.nan)
    known = np.isfinite(lo) & np.isfinite(hi)
    count = np.ones(active.size, dtype=np.int64)
    span = np.log(np.where(known, hi / np.where(known, lo, 1.0), 1.0))
    count[known] = 1 + np.ceil(span[known] / np.log(SEED_RATIO)).astype(np.int64)
    which = np.repeat(np.arange(active.size), count)
    k = np.arange(which.size) - np.repeat(np.cumsum(count) - count, count)
    step = np.where(count > 1, span / np.maximum(count - 1, 1), 0.0)
    base = np.where(known, lo, np.maximum(terms.offset[active], 1.0))
    points = base[which] * np.exp(step[which] * k)
    anchor = np.flatnonzero(known & (terms.offset[active] > 0) & (terms.offset[active] < lo))
    return (np.concatenate([active[which], active[anchor]]),
            np.concatenate([points, terms.offset[active][anchor]]))


def _with_epigraph(model: CanonicalModel, terms, x: np.ndarray) -> np.ndarray:
    """``x`` extended by the epigraph values ``t = log(u(x))`` (feasible for every cut)."""
    u = np.maximum(terms.G @ x + terms.offset, LOG_DOMAIN_EPS)
    return np.concatenate([x, np.where(terms.weights > 0, np.log(u), 0.0)])


def solve_log_by_tangent_cuts(model: CanonicalModel, backend: Backend, options: SolveOptions) -> Result:
    """Solve a model with log terms on a backend without a log cone (see module doc).

    Cuts start from :func:`_seed_points`; the loop stops once the outer model over-estimates
    the objective at its own solution by at most ``log_gap`` (relative). On a MIP the
    reported gap also holds the solver's MIP gap, and each round starts from the best
    point found so far."""
    terms = model.log_terms
    active_terms = np.flatnonzero(terms.weights > 0)
    k = terms.weights.shape[0]
    n = model.num_vars
    domain = sp.hstack([terms.G[active_terms], sp.csr_matrix((active_terms.size, k))], format="csr")
    t_lo = np.full(k, -np.inf)
    t_lo[terms.weights == 0] = 0.0
    t_hi = np.where(terms.weights == 0, 0.0, np.inf)
    which, points = _seed_points(terms, active_terms)
    cuts, cut_lo, cut_hi = _cut_rows(model, which, points)
    outer = model.with_extra(
        new_cols=k,
        new_c=terms.weights.copy(),
        new_col_lo=t_lo,
        new_col_hi=t_hi,
        rows=sp.vstack([domain, cuts], format="csr"),
        lo=np.concatenate([LOG_DOMAIN_EPS - terms.offset[active_terms], cut_lo]),
        hi=np.concatenate([np.full(active_terms.size, np.inf), cut_hi]),
        drop_log_terms=True,
    )
    timings = Timings()
    best: Result | None = None
    best_value = -np.inf
    upper = np.inf
    total_cuts = points.size
    last: Result | None = None
    start = options.start
    for round_ in range(1, options.max_cut_rounds + 1):
        opts = options if start is None else replace(options, start=_with_epigraph(model, terms, start))
        last = backend.solve(outer, opts)
        timings.translate += last.timings.translate
        timings.solve += last.timings.solve
        if not last.has_solution:
            break
        upper = min(upper, last.bound if last.bound is not None else last.objective)
        x = last.x[:n]
        value = model.objective_value(x)
        if value > best_value:
            best_value, best = value, last
        over = (last.objective - value) / max(1.0, abs(value))
        if over <= options.log_gap or last.status is not Status.OPTIMAL:
            break
        u = terms.G[active_terms] @ x + terms.offset[active_terms]
        t = last.x[n + active_terms]
        violated = t - np.log(np.maximum(u, LOG_DOMAIN_EPS)) > 1e-12 * np.maximum(1.0, np.abs(t))
        if not violated.any():
            break
        new, new_lo, new_hi = _cut_rows(
            model, active_terms[violated], np.maximum(u[violated], LOG_DOMAIN_EPS)
        )
        outer = outer.with_extra(rows=new, lo=new_lo, hi=new_hi)
        total_cuts += int(violated.sum())
        if model.is_mip:
            start = best.x[:n]
    if best is None:
        status = last.status if last is not None else Status.ERROR
        return Result(status, backend.spec, message=last.message if last else "", timings=timings,
                      blocks=model.blocks, solver_version=last.solver_version if last else "")
    gap = (upper - best_value) / max(1.0, abs(best_value))
    target = max(options.log_gap, options.mip_gap or 0.0) if model.is_mip else options.log_gap
    status = Status.OPTIMAL if gap <= target * (1 + 1e-9) and best.status is Status.OPTIMAL else Status.FEASIBLE
    if last is not None and last.status is Status.TIME_LIMIT:
        status = Status.TIME_LIMIT
    result = Result(
        status,
        backend.spec,
        objective=best_value,
        bound=upper,
        x=best.x[:n].copy(),
        message=best.message,
        solver_version=best.solver_version,
        timings=timings,
        iterations=round_,
        blocks=model.blocks,
    )
    if best.row_duals is not None:
        result.row_duals = best.row_duals[: model.num_rows].copy()
        result.reduced_costs = model.c - transpose_times(model.A, result.row_duals)
    result.notes.append(
        f"log terms by tangent cuts on {backend.spec}: {round_} rounds, {total_cuts} cuts, "
        f"relative gap {gap:.2e} (target {target:.0e})"
    )
    return result


#: a row bound further than this from 0 excludes the only point of a model without columns
EMPTY_ROW_TOL = 1e-9


def solve_without_columns(model: CanonicalModel, spec: str) -> Result:
    """The answer for a model with no columns: every row's activity is 0, so it is optimal
    (objective = the constant) iff every row admits 0, else infeasible."""
    bad = np.flatnonzero((model.row_lo > EMPTY_ROW_TOL) | (model.row_hi < -EMPTY_ROW_TOL))
    if bad.size:
        return Result(Status.INFEASIBLE, spec, message=f"no columns, and {bad.size} row(s) whose bounds exclude 0",
                      notes=["a model without columns is answered without the solver"])
    x = np.zeros(0)
    objective = model.objective_value(x)
    return Result(Status.OPTIMAL, spec, objective=objective, bound=objective, x=x,
                  row_duals=np.zeros(model.num_rows), reduced_costs=x.copy(), message="no columns",
                  notes=["a model without columns is answered without the solver"])
