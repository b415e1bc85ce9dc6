"""Finish-time fairness policies; each keeps the jobs' cumulative isolated time."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from allocators.base import Policy, ProgramClass
from formulations import Allocation, AllocationProblem, finish_time_fairness
from formulations.classes import equal_rows
from formulations.published import published_order
from formulations.rates import runnable
from optim import Capability, SolveOptions, Status, get_backend, parse_spec, solve
from optim.backends.block import AUTO_MIN_BLOCKS

METHODS = ("auto", "bisection", "conic")
#: the default solver: the level search on the price-directed method from AUTO_MIN_BLOCKS jobs,
#: the conic program on Clarabel below
DEFAULT_SOLVER = "block:auto"


class FinishTimeFairness(Policy):
    """Minimize the worst finish-time ratio rho (see formulations.finish_time_fairness).

    ``method``: "conic" (one SOC program; needs a backend with SOC), "bisection" (LPs on
    any LP backend: a bisection, or the level search of
    :func:`~formulations.finish_time_fairness.solve_by_bisection` where each LP is the full one),
    or "auto" (conic where the backend has SOC; on :data:`DEFAULT_SOLVER`, the default, the conic
    program on Clarabel below :data:`~optim.backends.block.AUTO_MIN_BLOCKS` jobs, so that no
    default-mode row moves, and the level search over price-directed LPs from there: 1-2 LPs).
    State: per job id, the cumulative isolated time C, updated on every call by ``C += (R_prev -
    R) / iso_prev``.
    """

    program = ProgramClass.CONVEX
    variant: finish_time_fairness.Variant
    #: on a vertex backend each bisection LP is solved over demand classes (``_level_lps``)
    merge_on = ("remaining_steps", "time_since_arrival")
    supports_gavel_compat = True
    #: the solver the published simulator ran (``--solver ECOS``), used under ``gavel_compat``
    published_solver = "ecos"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, method: str = "auto",
                 gavel_compat: bool = False):
        super().__init__(solver, options)
        #: Gavel's own "perf" program and isolated throughputs, on the published solver
        self.published = gavel_compat and self.variant == "perf" and solver == self.published_solver
        if method not in METHODS:
            raise ValueError(f"policy {self.name!r}: unknown method {method!r}; use one of {', '.join(METHODS)}")
        has_soc = Capability.SOC in get_backend(solver).capabilities()
        if method == "conic" and not has_soc:
            raise ValueError(f"policy {self.name!r}: solver {solver} has no SOC cone; use method 'bisection'")
        self.method = "conic" if method == "conic" or (method == "auto" and has_soc) else "bisection"
        #: the conic program's backend below AUTO_MIN_BLOCKS jobs under "auto" on the default solver
        self._small_conic = (get_backend("clarabel") if method == "auto" and not has_soc
                             and parse_spec(solver).spec == DEFAULT_SOLVER else None)
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
        if self.published and problem.num_jobs > 1:
            return self._allocate_published(problem, C)
        lv = finish_time_fairness.levels(problem, self.variant, C)
        if self.published:  # one job: Gavel's program has no maximum; ours, with its isolated throughput
            iso = self._published_isolated(problem)
            lv = replace(lv, isolated_throughput=iso, denominator=C + lv.remaining / iso)
        small = self._small_conic is not None and problem.num_jobs < AUTO_MIN_BLOCKS
        if self.method == "conic" or small:
            model = finish_time_fairness.build_conic(lv)
            result = solve(model.canonical(), self._small_conic, self.options) if small else self._solve(model)
            notes = ["conic program (rotated second-order cones)"]
        else:
            model, result, notes = finish_time_fairness.solve_by_bisection(lv, self._level_lps(problem, lv),
                                                                           exact=not self._merging(problem))
        if result.status is Status.OPTIMAL:
            allocation = finish_time_fairness.decode(problem, lv, model, result, self.name, notes)
        else:
            allocation = finish_time_fairness.isolated_allocation(
                problem, lv, self.name, f"{result.backend} returned {result.status}: {result.message}")
        self._remember(problem, C, lv.remaining, lv.isolated_throughput)
        return allocation

    def _allocate_published(self, problem: AllocationProblem, C: np.ndarray) -> Allocation:
        """Gavel's program in its layout (:func:`finish_time_fairness.build_published`) on ECOS."""
        iso = self._published_isolated(problem)
        result = self._solve(finish_time_fairness.build_published(problem, iso, C))
        if result.status in (Status.OPTIMAL, Status.FEASIBLE):
            allocation = finish_time_fairness.decode_published(problem, result, iso, C, self.name)
        else:
            lv = finish_time_fairness.levels(problem, self.variant, C)
            allocation = finish_time_fairness.isolated_allocation(
                problem, lv, self.name, f"{result.backend} returned {result.status}: {result.message}")
        self._remember(problem, C, problem.remaining_steps, iso)
        return allocation

    @staticmethod
    def _published_isolated(problem: AllocationProblem) -> np.ndarray:
        """Gavel's isolated throughputs (:func:`finish_time_fairness.published_isolated_throughputs`),
        in the problem's order."""
        jobs, types = published_order(problem)
        iso = np.empty(problem.num_jobs)
        iso[jobs] = finish_time_fairness.published_isolated_throughputs(
            problem.throughputs[np.ix_(jobs, types)], problem.scale_factors[jobs], problem.capacities[types])
        return iso

    def _remember(self, problem: AllocationProblem, C: np.ndarray, remaining: np.ndarray, isolated: np.ndarray):
        """The state the next call reads: per job id, C, R and iso of this call."""
        order = np.argsort(problem.job_ids)
        self._ids = problem.job_ids[order]
        self._cumulative = C[order]
        self._remaining = remaining[order]
        self._isolated = isolated[order]

    def _merging(self, problem: AllocationProblem) -> bool:
        """Whether the level LPs are solved over demand classes (exact only where u = 1)."""
        return self.merges and not self.uses_pairs and problem.pairs is None

    def _level_lps(self, problem: AllocationProblem, lv: finish_time_fairness.Levels):
        """``r -> (level LP, result)`` for the bisection: over demand classes on a vertex backend
        (:func:`finish_time_fairness.demand_class_lp`, :meth:`_solve_merged`), over every job
        otherwise."""
        merging = self._merging(problem)
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
    auto_solver = DEFAULT_SOLVER


class FinishTimeFairnessPerf(FinishTimeFairness):
    name = "finish_time_fairness_perf"
    fixed_type_order = True
    variant = "perf"
    auto_solver = DEFAULT_SOLVER


class FinishTimeFairnessPacked(FinishTimeFairness):
    name = "finish_time_fairness_packed"
    fixed_type_order = True
    uses_pairs = True
    variant = "packed"
