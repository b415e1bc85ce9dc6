"""Policies backed by formulations.max_min_fairness."""

from __future__ import annotations

from formulations import Allocation, AllocationProblem, max_min_fairness
from optim import solve

from .base import Policy, ProgramClass


class MaxMinFairness(Policy):
    """Gavel's LAS policy; ``variant`` "perf" is heterogeneity-aware, "agnostic" is not."""

    program = ProgramClass.LP
    variant: max_min_fairness.Variant = "perf"

    def allocate(self, problem: AllocationProblem) -> Allocation:
        model = max_min_fairness.build(problem, self.variant)
        result = solve(model, self.solver, self.options)
        return max_min_fairness.decode(problem, result, self.name)


class MaxMinFairnessPerf(MaxMinFairness):
    name = "max_min_fairness_perf"
    variant = "perf"


class MaxMinFairnessAgnostic(MaxMinFairness):
    name = "max_min_fairness"
    variant = "agnostic"
