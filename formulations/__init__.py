"""Scheduling policies as mathematical programs: ``build(problem, variant) -> optim.Model``
and ``decode(problem, result) -> Allocation``, one module per family."""

from . import max_min_fairness
from .checks import allocation_violations
from .problem import Allocation, AllocationProblem, ProblemError

__all__ = ["Allocation", "AllocationProblem", "ProblemError", "allocation_violations", "max_min_fairness"]
