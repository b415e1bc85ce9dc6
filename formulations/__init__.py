"""Scheduling policies as mathematical programs: ``build(problem, variant) -> optim.Model``
and ``decode(problem, model, result, policy) -> Allocation``, one module per family.

Deadline programs have their own problem types: :mod:`.elasticflow` (admission over slots
and GPU counts, ``AdmissionProblem``) and :mod:`.chronus` (leases, ``LeaseProblem``);
:mod:`.shockwave` plans rounds. The family modules load on first use
(``formulations.chronus`` or ``from formulations import chronus``): a run imports the ones
its policy builds."""

import importlib

from .checks import allocation_violations, certificate_gap
from .problem import Allocation, AllocationProblem, JobPairs, ProblemError

_FAMILIES = ("chronus", "combinations", "elasticflow", "finish_time_fairness", "max_min_fairness",
             "max_sum_throughput", "min_total_duration", "rates", "water_filling")


def __getattr__(name: str):
    if name in _FAMILIES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Allocation", "AllocationProblem", "JobPairs", "ProblemError", "allocation_violations", "certificate_gap",
    *_FAMILIES,
]
