"""Policies backed by formulations.max_min_fairness."""

from __future__ import annotations

from allocators.base import FormulationPolicy, ProgramClass
from formulations import Allocation, AllocationProblem, max_min_fairness
from optim import Basis, CanonicalModel, Model, Result, SolveOptions


class MaxMinFairness(FormulationPolicy):
    """``gavel_compat=True`` on the published solver (``published_solver``, what ``auto`` picks
    under compat) solves the published program in the published layout
    (:func:`~formulations.max_min_fairness.build_published`): where optima are not unique the
    published simulator's schedule follows the point ECOS returns on exactly that data. Space
    sharing (``max_min_fairness_packed``) and other solvers keep this project's program."""

    program = ProgramClass.LP
    formulation = max_min_fairness
    supports_gavel_compat = True
    #: the solver the published simulator ran (``--solver ECOS``), used under ``gavel_compat``
    published_solver = "ecos"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, gavel_compat: bool = False):
        super().__init__(solver, options)
        self.published = gavel_compat and not self.uses_pairs and solver == self.published_solver

    def build(self, problem: AllocationProblem) -> Model | CanonicalModel:
        if self.published:
            return max_min_fairness.build_published(problem, self.variant)
        return super().build(problem)

    def _start_basis(self, problem: AllocationProblem, model: Model) -> Basis | None:
        return None if self.uses_pairs else max_min_fairness.start_basis(problem, model, self.variant)

    def decode(self, problem: AllocationProblem, model: Model, result: Result) -> Allocation:
        if self.published:
            return max_min_fairness.decode_published(problem, result, self.name)
        return super().decode(problem, model, result)


class MaxMinFairnessAgnostic(MaxMinFairness):
    """Gavel's LAS: equal GPU-time shares, blind to heterogeneity."""

    name = "max_min_fairness"
    variant = "agnostic"
    merge_on = ()


class MaxMinFairnessPerf(MaxMinFairness):
    """Heterogeneity-aware LAS: equal normalized throughput."""

    name = "max_min_fairness_perf"
    fixed_type_order = True
    variant = "perf"
    merge_on = ()


class MaxMinFairnessPacked(MaxMinFairness):
    """Heterogeneity-aware LAS with space sharing (co-located pairs)."""

    name = "max_min_fairness_packed"
    fixed_type_order = True
    uses_pairs = True
    variant = "packed"
