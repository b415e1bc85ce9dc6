"""Policies backed by formulations.max_sum_throughput, with Gavel's SLO fallback."""

from __future__ import annotations

import numpy as np

from allocators.base import Policy, ProgramClass
from formulations import Allocation, AllocationProblem, max_sum_throughput
from formulations.classes import MergedProblem, demand_classes, equal_rows, merge_by_demand
from formulations.rates import runnable
from optim import SolveOptions, Status


class MaxSumThroughput(Policy):
    """Maximize total (cost-normalized) throughput; when the SLO rows are infeasible,
    re-solve without them and say so in the allocation's notes.

    ``gavel_compat=True`` on the published solver (``published_solver``, what ``auto`` picks under
    compat) solves the published program without SLOs in the published layout
    (:func:`~formulations.max_sum_throughput.build_published`): where jobs tie, the published
    simulator's schedule follows the point ECOS returns on exactly that data."""

    program = ProgramClass.LP
    variant: str
    warm_resolve = True
    supports_gavel_compat = True
    #: the solver the published simulator ran (``--solver ECOS``), used under ``gavel_compat``
    published_solver = "ecos"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, gavel_compat: bool = False):
        super().__init__(solver, options)
        self.published = (gavel_compat and solver == self.published_solver
                          and self.variant in ("perf", "normalized_by_cost_perf"))

    #: jobs equal in throughputs, scale and weight are merged; with SLOs, demand classes (:meth:`_merged`)
    merge_on = ()

    def _merged(self, problem: AllocationProblem) -> MergedProblem | None:
        """With SLOs, jobs of equal rates and scale factor whose needed rate ``R_i / SLO_i`` (0
        without an SLO) lies in one interval of their rates are one demand class
        (:func:`formulations.classes.merge_by_demand`): the SLO rows are level rows at a fixed
        level, so the anchors' program is exact, and the objective is linear in a class's sum."""
        if not max_sum_throughput.uses_slos(self.variant) or problem.slo_remaining is None:
            return super()._merged(problem)
        jobs, needed = max_sum_throughput.slo_rates(problem)
        demand = np.zeros(problem.num_jobs)
        demand[jobs] = needed
        rates = np.where(runnable(problem), problem.throughputs, 0.0)
        labels = demand_classes(equal_rows(rates, problem.scale_factors)[1], rates, demand)
        return merge_by_demand(problem, labels, demand)

    def allocate(self, problem: AllocationProblem) -> Allocation:
        notes = []
        if max_sum_throughput.uses_prices(self.variant) and problem.prices is None:
            notes.append("no prices given: every worker type costs 1")
        if self.published:
            result = self._solve(max_sum_throughput.build_published(problem, self.variant))
            allocation = max_sum_throughput.decode_published(problem, result, self.name, self.variant)
            allocation.notes[:0] = notes
            return allocation
        with_slos = max_sum_throughput.uses_slos(self.variant)
        if with_slos and max_sum_throughput.slo_rates(problem)[0].size == 0:
            notes.append("no job has an SLO")
        solved, model, result, generated = self._solve_program(
            problem, lambda p: max_sum_throughput.build(p, self.variant))
        if with_slos and result.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
            notes.append("the SLOs cannot all be met: re-solved without the SLO rows")
            solved, model, result, generated = self._solve_program(
                problem, lambda p: max_sum_throughput.build(p, self.variant, with_slos=False))
        allocation = self._finish(max_sum_throughput.decode(solved, model, result, self.name), problem, generated)
        allocation.notes[:0] = notes
        return allocation


class MaxSumThroughputPerf(MaxSumThroughput):
    name = "max_sum_throughput_perf"
    claims = ("pareto_efficiency",)
    fixed_type_order = True
    variant = "perf"


class MaxSumThroughputByCost(MaxSumThroughput):
    name = "max_sum_throughput_normalized_by_cost_perf"
    fixed_type_order = True
    variant = "normalized_by_cost_perf"


class MaxSumThroughputByCostSLOs(MaxSumThroughput):
    name = "max_sum_throughput_normalized_by_cost_perf_SLOs"
    fixed_type_order = True
    variant = "normalized_by_cost_perf_SLOs"


class MaxSumThroughputByCostPackedSLOs(MaxSumThroughput):
    name = "max_sum_throughput_normalized_by_cost_packed_SLOs"
    fixed_type_order = True
    uses_pairs = True
    variant = "normalized_by_cost_packed_SLOs"
