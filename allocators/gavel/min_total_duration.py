"""Policies backed by formulations.min_total_duration (makespan)."""

from __future__ import annotations

from allocators.base import Policy, ProgramClass
from formulations import (
    Allocation,
    AllocationProblem,
    ProblemError,
    combinations,
    min_total_duration,
)
from optim import SolveOptions, Status

#: Gavel's search: T in [100 s, 1e6 s], halved until hi <= 1.05 lo, the range moved up
#: tenfold while no T is feasible (we give up past 1e12 s).
FIRST_RANGE = (100.0, 1e6)
RATIO = 1.05
LAST_UPPER = 1e12


class MinTotalDuration(Policy):
    """``gavel_compat=True`` reproduces the published policy's search instead of the exact
    LP: bisection on the makespan T over feasibility programs (constant objective), keeping
    the point the solver stopped at for the last feasible T. With ``published_solver`` the
    programs are laid out as published (``build_deadline_published``; not for ``_packed``),
    and the solver stops at the published point; other solvers get the well-scaled rows of
    ``build_deadline``. Its makespan is up to 5% above the optimum,
    and the allocation is some point of the feasible set, not an optimum."""

    program = ProgramClass.LP
    variant: min_total_duration.Variant
    supports_gavel_compat = True
    #: the solver the published simulator ran (``--solver ECOS``), used under ``gavel_compat``
    #: when the solver is left to ``auto``
    published_solver = "cvxpy:ECOS"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, gavel_compat: bool = False):
        super().__init__(solver, options)
        self.gavel_compat = gavel_compat

    def allocate(self, problem: AllocationProblem) -> Allocation:
        if self.gavel_compat:
            return self._bisect(problem)
        S = min_total_duration.time_scale(problem, self.variant)
        solved, model, result, generated = self._solve_program(
            problem, lambda p: min_total_duration.build(p, self.variant, S))
        return self._finish(min_total_duration.decode(solved, model, result, self.name, self.variant, S), problem,
                            generated)

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
            allocation = Allocation(problem, min_total_duration.published_allocation(problem, result), self.name,
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
    variant = "perf"


class MinTotalDurationPacked(MinTotalDuration):
    """Shortest makespan with measured rates and space sharing."""

    name = "min_total_duration_packed"
    uses_pairs = True
    variant = "packed"
