"""Finish-time fairness policies; each keeps the jobs' cumulative isolated time."""

from __future__ import annotations

import numpy as np

from allocators.base import Policy, ProgramClass
from formulations import Allocation, AllocationProblem, finish_time_fairness
from formulations.classes import equal_rows
from formulations.rates import runnable
from optim import Capability, SolveOptions, Status, get_backend

METHODS = ("auto", "bisection", "conic")


class FinishTimeFairness(Policy):
    """Minimize the worst finish-time ratio rho (see formulations.finish_time_fairness).

    ``method``: "conic" (one SOC program; needs a backend with SOC), "bisection" (LPs on
    any LP backend), or "auto" (conic where the backend has SOC). State: per job id, the
    cumulative isolated time C, updated on every call by ``C += (R_prev - R) / iso_prev``.
    """

    program = ProgramClass.CONVEX
    variant: finish_time_fairness.Variant
    #: on a vertex backend each bisection LP is solved over demand classes (``_level_lps``)
    merge_on = ("remaining_steps", "time_since_arrival")

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, method: str = "auto"):
        super().__init__(solver, options)
        if method not in METHODS:
            raise ValueError(f"policy {self.name!r}: unknown method {method!r}; use one of {', '.join(METHODS)}")
        has_soc = Capability.SOC in get_backend(solver).capabilities()
        if method == "conic" and not has_soc:
            raise ValueError(f"policy {self.name!r}: solver {solver} has no SOC cone; use method 'bisection'")
        self.method = "conic" if method == "conic" or (method == "auto" and has_soc) else "bisection"
        self._ids = np.zeros(0, dtype=np.int64)
        self._cumulative = np.zeros(0)
        self._remaining = np.zeros(0)
        self._isolated = np.zeros(0)

    def cumulative_isolated_time(self, problem: AllocationProblem) -> np.ndarray:
        """C_i for the problem's jobs after accounting for progress since the last call."""
        R = problem.require("remaining_steps", self.name)
        C = np.zeros(problem.num_jobs)
        if self._ids.size:
            pos = np.minimum(np.searchsorted(self._ids, problem.job_ids), self._ids.size - 1)
            known = self._ids[pos] == problem.job_ids
            p = pos[known]
            C[known] = self._cumulative[p] + (self._remaining[p] - R[known]) / self._isolated[p]
        return C

    def allocate(self, problem: AllocationProblem) -> Allocation:
        C = self.cumulative_isolated_time(problem)
        lv = finish_time_fairness.levels(problem, self.variant, C)
        if self.method == "conic":
            model = finish_time_fairness.build_conic(lv)
            result = self._solve(model)
            notes = ["conic program (rotated second-order cones)"]
        else:
            model, result, notes = finish_time_fairness.solve_by_bisection(lv, self._level_lps(problem, lv))
        if result.status is Status.OPTIMAL:
            allocation = finish_time_fairness.decode(problem, lv, model, result, self.name, notes)
        else:
            allocation = finish_time_fairness.isolated_allocation(
                problem, lv, self.name, f"{result.backend} returned {result.status}: {result.message}")
        order = np.argsort(problem.job_ids)
        self._ids = problem.job_ids[order]
        self._cumulative = C[order]
        self._remaining = lv.remaining[order]
        self._isolated = lv.isolated_throughput[order]
        return allocation


    def _level_lps(self, problem: AllocationProblem, lv: finish_time_fairness.Levels):
        """``r -> (level LP, result)`` for the bisection: over demand classes on a vertex backend
        (:func:`finish_time_fairness.demand_class_lp`, :meth:`_solve_merged`), over every job
        otherwise."""
        merging = self.merges and not self.uses_pairs and problem.pairs is None
        kind = equal_rows(np.where(runnable(problem), finish_time_fairness.rates(problem, self.variant), 0.0),
                          problem.scale_factors)[1] if merging else None

        def level(r: float):
            built = finish_time_fairness.demand_class_lp(problem, lv, self.variant, r, kind) if merging else None
            if built is not None:
                return built, self._solve_merged(built.model)
            built = finish_time_fairness.level_lp(problem, lv, r)
            return built, self._solve(built.model, problem)

        return level


class FinishTimeFairnessAgnostic(FinishTimeFairness):
    name = "finish_time_fairness"
    variant = "agnostic"


class FinishTimeFairnessPerf(FinishTimeFairness):
    name = "finish_time_fairness_perf"
    variant = "perf"


class FinishTimeFairnessPacked(FinishTimeFairness):
    name = "finish_time_fairness_packed"
    uses_pairs = True
    variant = "packed"
