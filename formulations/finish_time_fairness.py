"""Finish-time fairness (Themis-style), exact by LP bisection or as one conic program.

    rho_i(x) = (t_i + R_i / thr_i(x)) / D_i,    D_i = C_i + R_i / iso_i
    minimize max_i rho_i(x)   s.t. base rows

t_i: seconds since arrival; R_i: steps remaining; C_i: cumulative isolated time (policy
state); iso_i: throughput under the isolated allocation. Quasi-convex: "rho_i <= r for
all i" is ``(r D_i - t_i) thr_i(x) >= R_i``, linear in x for fixed r, so

- bisection: the largest u in ``maximize u s.t. (r D_i - t_i) thr_i(x) >= R_i u`` is
  monotone in r and level r is reachable iff u >= 1; bisect r between the best rate any
  job could get and the isolated allocation's level;
- conic: ``minimize r s.t. thr_i(x) (D_i r - t_i) >= R_i`` is a rotated second-order
  cone per job (``u v >= k``), one convex program.

Variants: "perf", "agnostic" (reference-type rate everywhere), "packed" (co-located pairs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from optim import CanonicalModel, Model, Result, Status
from optim.sparse import expand_pointers

from . import combinations, published
from .classes import MergedProblem, demand_classes, expand, merge_by_demand
from .combinations import Combinations
from .problem import Allocation, AllocationProblem
from .rates import equal_shares, isolated_shares, reference_rates, runnable

Variant = Literal["agnostic", "perf", "packed"]
VARIANTS: tuple[str, ...] = ("agnostic", "perf", "packed")
#: bisection stops when (hi - lo) <= REL_TOL * hi
REL_TOL = 1e-7
#: the descent (:func:`_descend`) hands over to bisection after this many LPs
MAX_DESCENT = 30


@dataclass(frozen=True)
class Levels:
    """The data of rho: ``rho_i = (elapsed_i + R_i / thr_i) / D_i``."""

    combos: Combinations
    elapsed: np.ndarray
    remaining: np.ndarray
    denominator: np.ndarray
    isolated_throughput: np.ndarray

    def rho(self, throughput: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return (self.elapsed + self.remaining / throughput) / self.denominator


def rates(problem: AllocationProblem, variant: Variant) -> np.ndarray:
    if variant == "agnostic":
        return reference_rates(problem)
    if variant in ("perf", "packed"):
        return problem.throughputs
    raise ValueError(f"unknown finish_time_fairness variant {variant!r}; use one of {VARIANTS}")


def levels(problem: AllocationProblem, variant: Variant, cumulative_isolated: np.ndarray) -> Levels:
    """rho's data for the snapshot and the jobs' cumulative isolated time C_i."""
    T = rates(problem, variant)
    combos = combinations.packed(problem) if variant == "packed" else combinations.singles(problem, T)
    R = problem.require("remaining_steps", f"finish_time_fairness[{variant}]")
    iso = (T * isolated_shares(problem)).sum(axis=1)
    return Levels(combos, problem.elapsed(), R, cumulative_isolated + R / iso, iso)


def build_level_lp(lv: Levels, r: float) -> Model | CanonicalModel:
    """``maximize u s.t. (r D_i - t_i) thr_i(x) / R_i >= u`` (level r reachable iff u >= 1). Over
    single jobs it is assembled as arrays (:func:`~formulations.combinations.singles_program`, its
    makespan rows), the program the :class:`Model` path builds."""
    name = f"finish_time_fairness[level {r:.6g}]"
    slack = (r * lv.denominator - lv.elapsed) / lv.remaining
    combos = lv.combos
    if combos.num_combinations == combos.problem.num_jobs:
        rates = combos.rate_arrays
        level = np.zeros(combos.problem.throughputs.size)
        level[rates.indices] = rates.data * slack[expand_pointers(rates.indptr)]
        return combinations.singles_program(combos.problem, name, level=level.reshape(combos.problem.throughputs.shape),
                                            finish=True)
    model = Model(name)
    x = combos.add_allocation(model)
    u = model.add_variables("u", 1, lb=0.0)
    model.add_rows("level", {x: combos.throughput_map(slack), u: -np.ones((slack.size, 1))}, lo=0.0)
    model.set_objective({u: 1.0}, sense="max")
    return model


def build_conic(lv: Levels) -> Model:
    """``minimize r s.t. (thr_i(x) / iso_i) ((D_i r - t_i) iso_i / R_i) >= 1`` (rotated
    cones, each factor O(1)), base rows."""
    model = Model("finish_time_fairness[conic]")
    x = lv.combos.add_allocation(model)
    r = model.add_variables("r", 1, lb=0.0)
    m = lv.remaining.shape[0]
    scale = lv.isolated_throughput / lv.remaining
    model.add_hyperbolic("rho", u={x: lv.combos.throughput_map(1.0 / lv.isolated_throughput)}, u_offset=np.zeros(m),
                         v={r: (lv.denominator * scale)[:, None]}, v_offset=-lv.elapsed * scale, k=np.ones(m))
    model.set_objective({r: 1.0}, sense="min")
    return model


def bounds(lv: Levels) -> tuple[float, float]:
    """A level no allocation beats (each job alone at its best rate) and the isolated
    allocation's level (always reachable)."""
    best = np.asarray(lv.combos.rates.max(axis=1).todense()).reshape(-1)
    return float(lv.rho(best).max()), float(lv.rho(lv.isolated_throughput).max())


def solve_by_bisection(lv: Levels, level: Callable[[float], tuple[LevelLP, Result]], exact: bool = False
                       ) -> tuple[LevelLP, Result, list[str]]:
    """The least reachable level r over the level LPs ``level(r)`` (:func:`level_lp` solved, or its
    demand-class form), to :data:`REL_TOL` relative; the LP and result that reach it.

    Bisection on r between :func:`bounds`. With ``exact`` (every ``level(r)`` is the full level LP
    solved to optimality, its bound its optimum u*(r)), :func:`_descend` first: far fewer LPs."""
    lo, hi = bounds(lv)
    if exact:
        found = _descend(lv, level, lo)
        if found is not None:
            return found
    best, best_result = level(hi)
    solves = 1
    while hi - lo > REL_TOL * hi and best_result.status is Status.OPTIMAL:
        mid = 0.5 * (lo + hi)
        built, result = level(mid)
        solves += 1
        if result.status is Status.OPTIMAL and result.objective >= 1.0:
            hi, best, best_result = mid, built, result
        else:
            lo = mid
    notes = [f"bisection: {solves} LPs, the level to {REL_TOL:g} relative"]  # no values: a run gathers notes
    return best, best_result, notes


def _descend(lv: Levels, level: Callable[[float], tuple[LevelLP, Result]], lo: float
             ) -> tuple[LevelLP, Result, list[str]] | None:
    """Descent from above on the level (a Dinkelbach iteration): every level LP's point x is an
    allocation, reaching ``rho(x)``, so the next LP is solved at ``r = rho(x)``, where u*(r) >= 1.
    At a reachable r, u*(r) - 1 bounds the gap: with x* optimal (level r* <= r), job i's row at r
    is ``(r D_i - t_i) thr_i(x*) / R_i >= 1 + (r - r*) D_i thr_i(x*) / R_i`` and ``D_i thr_i(x*) /
    R_i >= D_i / (r* D_i - t_i) >= 1 / r``, so ``r* >= r (2 - u*(r))``. It stops when that lower
    bound is within :data:`REL_TOL` of the best level found; first at ``lo`` (no allocation beats
    it: reachable there, it is the optimum). None where an LP has no optimum (then bisect)."""
    built, result = level(lo)
    solves = 1
    if result.status is not Status.OPTIMAL:
        return None
    if result.objective >= 1.0:
        return built, result, ["level search: 1 LP, each job's best rate reachable"]
    best, best_result, r = built, result, _level_at(lv, built, result)
    while solves < MAX_DESCENT:
        built, result = level(r)
        solves += 1
        if result.status is not Status.OPTIMAL:
            return None
        reached = _level_at(lv, built, result)
        u = result.objective if result.bound is None else max(result.objective, result.bound)
        if r - max(lo, r * (2.0 - u)) <= REL_TOL * r:
            if reached < r:
                best, best_result = built, result
            return best, best_result, [f"level search: {solves} LPs (descent from above), the level to "
                                       f"{REL_TOL:g} relative"]
        if reached >= r:  # no progress short of the tolerance (solver noise): bisect instead
            return None
        best, best_result, r = built, result, reached
    return None


def _level_at(lv: Levels, built: LevelLP, result: Result) -> float:
    """max_i rho_i at the level LP's point (an allocation over the LP's own jobs)."""
    x = np.clip(result.value("x"), 0.0, None)
    return float(lv.rho(lv.combos.rates @ x.reshape(-1)).max())


class LevelLP(NamedTuple):
    """A level LP and the problem its rows are jobs of (a :class:`MergedProblem` for demand classes)."""

    problem: AllocationProblem
    model: Model | CanonicalModel


def level_lp(problem: AllocationProblem, lv: Levels, r: float) -> LevelLP:
    """:func:`build_level_lp` over the problem's own jobs."""
    return LevelLP(problem, build_level_lp(lv, r))


def demand_class_lp(problem: AllocationProblem, lv: Levels, variant: Variant, r: float,
                    kind: np.ndarray) -> LevelLP | None:
    """The level LP at r over demand classes (:func:`formulations.classes.merge_by_demand`, jobs of
    a ``kind`` whose demand ``R_i / (r D_i - t_i)`` lies in one interval of their rates, drawn at
    u = 1). It is exact at u = 1 and a restriction elsewhere, so its optimum is at least 1 exactly
    when the full LP's is: level r is reachable. None where merging saves nothing or some job
    cannot reach r at all."""
    slack = r * lv.denominator - lv.elapsed
    if (slack <= 0).any():
        return None
    demand = lv.remaining / slack
    T = np.where(runnable(problem), rates(problem, variant), 0.0)
    merged = merge_by_demand(problem, demand_classes(kind, T, demand), demand)
    if merged is None:
        return None
    src = merged.source
    sub = Levels(combinations.singles(merged, rates(merged, variant)), lv.elapsed[src], lv.remaining[src],
                 lv.denominator[src], lv.isolated_throughput[src])
    return LevelLP(merged, build_level_lp(sub, r))


def decode(problem: AllocationProblem, lv: Levels, built: LevelLP | Model, result: Result, policy: str,
           notes: list[str]) -> Allocation:
    """The allocation (expanded where ``built`` is over demand classes); its objective is max_i
    rho_i at the decoded shares, in the variant's own rates (the reference rate everywhere for
    the agnostic variant)."""
    if isinstance(built, LevelLP) and isinstance(built.problem, MergedProblem):
        allocation = expand(combinations.decode(built.problem, built.model, result, policy))
    else:
        allocation = combinations.decode(problem, built.model if isinstance(built, LevelLP) else built, result, policy)
    shares = allocation.x if allocation.pair_x is None else np.vstack([allocation.x, allocation.pair_x])
    allocation.objective = float(lv.rho(lv.combos.rates @ shares.reshape(-1)).max())
    allocation.notes.extend(notes)
    return allocation


def isolated_allocation(problem: AllocationProblem, lv: Levels, policy: str, reason: str) -> Allocation:
    """The isolated allocation, with the reason for falling back to it."""
    allocation = Allocation(problem, isolated_shares(problem), policy, notes=[f"fell back to isolated: {reason}"])
    allocation.objective = float(lv.rho(lv.isolated_throughput).max())
    return allocation


def published_isolated_throughputs(rates: np.ndarray, scale: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Gavel's ``iso_i`` as its isolated policy computes it, to the bit (published order): the equal
    shares of :func:`~formulations.rates.equal_shares` on every cell, also where the job cannot run,
    ``iso_i = sum_j T_ij x_ij``."""
    return (rates * equal_shares(capacities, scale, np.ones(rates.shape, dtype=bool))).sum(axis=1)


def build_published(problem: AllocationProblem, isolated: np.ndarray, cumulative: np.ndarray) -> CanonicalModel:
    """Gavel's "perf" program for two jobs or more, in the published layout
    (:func:`~formulations.published.layout`): minimize ``max_i (t_i + R_i / thr_i(x)) / D_i`` with
    ``D_i = C_i + R_i / iso_i`` (``isolated``, ``cumulative``: in the problem's order), as cvxpy lays
    out ``maximum`` of ``inv_pos`` terms, with its arithmetic: ``R_i (1 / D_i)`` and ``-(t_i (1 / D_i))``.
    Read it back with :func:`decode_published`."""
    jobs, types = published.published_order(problem)
    R = problem.require("remaining_steps", "finish_time_fairness[perf]")[jobs]
    per_level = 1.0 / (cumulative[jobs] + R / isolated[jobs])
    return published.layout(problem, "finish_time_fairness[perf]", (jobs, types), reciprocal=(
        problem.throughputs[np.ix_(jobs, types)], (R * per_level, -(problem.elapsed()[jobs] * per_level))))


def decode_published(problem: AllocationProblem, result: Result, isolated: np.ndarray, cumulative: np.ndarray,
                     policy: str) -> Allocation:
    """The allocation of a solved :func:`build_published` (clipped to [0, 1], nothing where a job
    cannot run); its objective is the worst finish-time ratio at that allocation."""
    x = published.published_allocation(problem, result)
    R = problem.remaining_steps
    with np.errstate(divide="ignore"):
        rho = (problem.elapsed() + R / (problem.throughputs * x).sum(axis=1)) / (cumulative + R / isolated)
    return Allocation(problem, x, policy, objective=float(rho.max()), result=result,
                      notes=[*result.notes, published.NOTE])
