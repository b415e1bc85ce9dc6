"""Scheduling policies as mathematical programs: ``build(problem, variant) -> optim.Model``
and ``decode(problem, model, result, policy) -> Allocation``, one module per family.

Deadline programs have their own problem types: :mod:`.elasticflow` (admission over slots
and GPU counts, ``AdmissionProblem``) and :mod:`.chronus` (leases, ``LeaseProblem``);
:mod:`.shockwave` plans rounds."""

from . import (
    chronus,
    combinations,
    elasticflow,
    finish_time_fairness,
    max_min_fairness,
    max_sum_throughput,
    min_total_duration,
    rates,
    water_filling,
)
from .checks import allocation_violations, certificate_gap
from .problem import Allocation, AllocationProblem, JobPairs, ProblemError

__all__ = [
    "Allocation", "AllocationProblem", "JobPairs", "ProblemError", "allocation_violations", "certificate_gap",
    "chronus", "combinations", "elasticflow", "finish_time_fairness", "max_min_fairness", "max_sum_throughput",
    "min_total_duration", "rates", "water_filling",
]
