"""Policies backed by formulations.max_min_fairness."""

from __future__ import annotations

from allocators.base import FormulationPolicy, ProgramClass
from formulations import Allocation, AllocationProblem, max_min_fairness
from formulations.combinations import only_runnable
from optim import Model, Result, SolveOptions


class MaxMinFairness(FormulationPolicy):
    """``gavel_compat=True`` solves the published program: a column for every (job, type) cell,
    also where the job cannot run (its shares there are given back after the solve), by the
    published simulator's ECOS (``published_solver``, what ``auto`` picks under compat). Where
    optima are not unique, ECOS and Clarabel stop at different points of the optimal face, and
    the cells widen it: the published simulator's schedule follows ECOS' point on its program.
    Space sharing (``max_min_fairness_packed``) keeps its own columns."""

    program = ProgramClass.LP
    formulation = max_min_fairness
    supports_gavel_compat = True
    #: the solver the published simulator ran (``--solver ECOS``), used under ``gavel_compat``
    published_solver = "ecos"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, gavel_compat: bool = False):
        super().__init__(solver, options)
        self.every_cell = gavel_compat and not self.uses_pairs

    def _build(self, problem: AllocationProblem) -> Model:
        return max_min_fairness.build(problem, self.variant, every_cell=self.every_cell)

    def _decode(self, problem: AllocationProblem, model: Model, result: Result) -> Allocation:
        allocation = super()._decode(problem, model, result)
        return only_runnable(allocation) if self.every_cell else allocation


class MaxMinFairnessAgnostic(MaxMinFairness):
    """Gavel's LAS: equal GPU-time shares, blind to heterogeneity."""

    name = "max_min_fairness"
    variant = "agnostic"
    merge_on = ()


class MaxMinFairnessPerf(MaxMinFairness):
    """Heterogeneity-aware LAS: equal normalized throughput."""

    name = "max_min_fairness_perf"
    variant = "perf"
    merge_on = ()


class MaxMinFairnessPacked(MaxMinFairness):
    """Heterogeneity-aware LAS with space sharing (co-located pairs)."""

    name = "max_min_fairness_packed"
    uses_pairs = True
    variant = "packed"
