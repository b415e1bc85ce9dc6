"""Policies backed by formulations.min_total_duration (makespan)."""

from __future__ import annotations

import numpy as np

from allocators.base import Policy, ProgramClass
from formulations import (
    Allocation,
    AllocationProblem,
    ProblemError,
    combinations,
    min_total_duration,
)
from formulations.classes import demand_classes, equal_rows, expand, level_bound, merge_by_demand
from formulations.published import published_allocation
from optim import SolveOptions, Status

#: Gavel's search: T in [100 s, 1e6 s], halved until hi <= 1.05 lo, the range moved up
#: tenfold while no T is feasible (we give up past 1e12 s).
FIRST_RANGE = (100.0, 1e6)
RATIO = 1.05
LAST_UPPER = 1e12
#: demand classes re-drawn at most this many times before the full LP is solved instead
MAX_REGROUPS = 8
#: the largest relative gap between the merged optimum and the full program's dual bound at its
#: prices that certifies a demand-class solve (else the full LP is solved)
CERTIFIED = 1e-7
CERTIFIED_NOTE = f"demand classes certified by the full program's dual bound (gap <= {CERTIFIED:g})"


class MinTotalDuration(Policy):
    """``gavel_compat=True`` reproduces the published policy's search instead of the exact
    LP: bisection on the makespan T over feasibility programs (constant objective), keeping
    the point the solver stopped at for the last feasible T. With ``published_solver`` the
    programs are laid out as published (``build_deadline_published``; not for ``_packed``),
    and the solver stops at the published point; other solvers get the well-scaled rows of
    ``build_deadline``. Its makespan is up to 5% above the optimum,
    and the allocation is some point of the feasible set, not an optimum.

    On a vertex backend (``merge_on``, :mod:`formulations.classes`) the exact LP is solved over
    demand classes: jobs of equal rates and scale factor whose demand ``d_i = R_i u / S`` lies
    in one interval of their rates. Start from u = 1 (no job finishes sooner than S alone);
    solve the merged LP (a restriction, so its u' <= u*); if u' = 1, or every job's demand at
    u' still lies in its class's half-open interval, u' is optimal: the merged LP is exact for
    every u near u' and both programs' feasible levels are intervals from 0. Otherwise draw the
    classes at u' (where the merged LP is exact, so u rises) and repeat. The answer is certified
    by the full program's dual bound at the merged program's capacity prices
    (:func:`formulations.classes.level_bound`); beyond ``CERTIFIED`` the full LP is solved."""

    program = ProgramClass.LP
    variant: min_total_duration.Variant
    supports_gavel_compat = True
    #: the solver the published simulator ran (``--solver ECOS``), used under ``gavel_compat``
    #: when the solver is left to ``auto``
    published_solver = "ecos"
    merge_on = ("remaining_steps",)

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, gavel_compat: bool = False):
        super().__init__(solver, options)
        self.gavel_compat = gavel_compat

    def allocate(self, problem: AllocationProblem) -> Allocation:
        if self.gavel_compat:
            return self._bisect(problem)
        S = min_total_duration.time_scale(problem, self.variant)
        settled = True
        if self.merges and not self.uses_pairs and np.isfinite(S) and S > 0:
            merged, settled = self._by_demand_classes(problem, S)
            if merged is not None:
                return merged
        solved, model, result, generated = self._solve_program(
            problem, lambda p: min_total_duration.build(p, self.variant, S))
        allocation = self._finish(min_total_duration.decode(solved, model, result, self.name, self.variant, S),
                                  problem, generated)
        if self.merges and not self.uses_pairs and not settled:
            allocation.notes.append(f"demand classes did not settle in {MAX_REGROUPS} solves or were not certified: "
                                    "the full LP was solved")
        return allocation

    def _by_demand_classes(self, problem: AllocationProblem, S: float) -> tuple[Allocation | None, bool]:
        """``(allocation, True)``: the exact LP over demand classes (class docstring); ``(None,
        True)`` where merging saves nothing, ``(None, False)`` where the classes did not settle
        within ``MAX_REGROUPS`` solves or the answer was not certified."""
        rates = min_total_duration.rates(problem, self.variant)
        steps = problem.remaining_steps / S
        kinds = equal_rows(rates, problem.scale_factors)
        labels = demand_classes(kinds[1], rates, steps)  # at u = 1
        for _ in range(MAX_REGROUPS):
            merged = merge_by_demand(problem, labels, steps)
            if merged is None:
                return None, True
            model = min_total_duration.build(merged, self.variant, S)
            result = self._solve_merged(model)
            if result.status is not Status.OPTIMAL:
                return None, False
            u = float(result.value("u")[0])
            redrawn = demand_classes(kinds[1], rates, steps * u)
            if u >= 1.0 - 1e-9 or np.array_equal(redrawn, labels):
                prices = result.row_duals[model.canonical().row_blocks["capacity"]]
                bound = level_bound(rates, problem.scale_factors, steps, problem.capacities, prices, kinds)
                if bound - u > CERTIFIED * max(u, 1e-12):
                    return None, False
                result.bound = bound  # on u, the merged LP's objective: the full program's dual bound
                allocation = expand(min_total_duration.decode(merged, model, result, self.name, self.variant, S))
                allocation.notes.append(CERTIFIED_NOTE)
                return allocation, True
            labels = redrawn
        return None, False

    def _bisect(self, problem: AllocationProblem) -> Allocation:
        published = self.variant != "packed" and self.solver == self.published_solver
        build = min_total_duration.build_deadline_published if published else min_total_duration.build_deadline
        lo, hi = FIRST_RANGE
        best = None
        while best is None:
            if hi > LAST_UPPER:
                raise ProblemError(f"{self.name}: no makespan below {LAST_UPPER:.0e} s is feasible")
            while RATIO * lo < hi:
                deadline = (lo + hi) / 2.0
                model = build(problem, self.variant, deadline)
                result = self._solve(model)
                if result.status is Status.OPTIMAL:
                    best, hi = (model, result, deadline), deadline
                else:
                    lo = deadline
            lo, hi = hi, hi * 10.0
        model, result, deadline = best
        if published:
            allocation = Allocation(problem, published_allocation(problem, result), self.name,
                                    objective=deadline, result=result)
        else:
            allocation = combinations.decode(problem, model, result, self.name, objective=deadline)
        allocation.notes.append(f"gavel_compat: makespan bisection, last feasible T = {deadline:.1f} s")
        return allocation


class MinTotalDurationAgnostic(MinTotalDuration):
    """Shortest makespan assuming every GPU runs at the reference (v100) rate."""

    name = "min_total_duration"
    variant = "agnostic"


class MinTotalDurationPerf(MinTotalDuration):
    """Shortest makespan with measured rates."""

    name = "min_total_duration_perf"
    fixed_type_order = True
    variant = "perf"


class MinTotalDurationPacked(MinTotalDuration):
    """Shortest makespan with measured rates and space sharing."""

    name = "min_total_duration_packed"
    fixed_type_order = True
    uses_pairs = True
    variant = "packed"
