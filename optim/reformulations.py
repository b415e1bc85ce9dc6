"""Bridges for what a backend lacks, each one reported in the result's notes.

Log terms on LP/MILP-only backends: Kelley's outer approximation. With
``u_i = g_i . x + h_i`` and an epigraph variable ``t_i`` per term, the model

    maximize c.x + sum_i b_i t_i   s.t.  t_i <= log(p) + (u_i - p) / p  for cut points p

over-estimates the concave objective, so its optimum is an upper bound; the true
objective at its solution (feasible for the original model) is a lower bound. Cuts at
the current ``u`` are added until (upper - best lower) / max(1, |best lower|) is at
most ``SolveOptions.log_gap``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .backends.base import Backend
from .model import CanonicalModel
from .options import SolveOptions
from .result import Result, Status, Timings

#: smallest argument allowed inside a log (keeps the tangent slopes finite)
LOG_DOMAIN_EPS = 1e-9


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


def solve_log_by_tangent_cuts(model: CanonicalModel, backend: Backend, options: SolveOptions) -> Result:
    """Solve a model with log terms on a backend without a log cone (see module doc)."""
    terms = model.log_terms
    active_terms = np.flatnonzero(terms.weights > 0)
    k = terms.weights.shape[0]
    n = model.num_vars
    domain = sp.hstack([terms.G[active_terms], sp.csr_matrix((active_terms.size, k))], format="csr")
    t_lo = np.full(k, -np.inf)
    t_lo[terms.weights == 0] = 0.0
    t_hi = np.where(terms.weights == 0, 0.0, np.inf)
    points = np.maximum(terms.offset[active_terms], 1.0)
    cuts, cut_lo, cut_hi = _cut_rows(model, active_terms, points)
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
    for round_ in range(1, options.max_cut_rounds + 1):
        last = backend.solve(outer, options)
        timings.translate += last.timings.translate
        timings.solve += last.timings.solve
        if not last.has_solution:
            break
        upper = min(upper, last.bound if last.bound is not None else last.objective)
        x = last.x[:n]
        value = model.objective_value(x)
        if value > best_value:
            best_value, best = value, last
        gap = (upper - best_value) / max(1.0, abs(best_value))
        if gap <= options.log_gap or last.status is not Status.OPTIMAL:
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
    if best is None:
        status = last.status if last is not None else Status.ERROR
        return Result(status, backend.spec, message=last.message if last else "", timings=timings,
                      blocks=model.blocks, solver_version=last.solver_version if last else "")
    gap = (upper - best_value) / max(1.0, abs(best_value))
    status = Status.OPTIMAL if gap <= options.log_gap and best.status is Status.OPTIMAL else Status.FEASIBLE
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
        result.reduced_costs = model.c - model.A.T @ result.row_duals
    result.notes.append(
        f"log terms by tangent cuts on {backend.spec}: {round_} rounds, {total_cuts} cuts, "
        f"relative gap {gap:.2e} (target {options.log_gap:.0e})"
    )
    return result

