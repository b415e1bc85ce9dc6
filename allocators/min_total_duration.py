"""Policies backed by formulations.min_total_duration (makespan)."""

from __future__ import annotations

from formulations import Allocation, AllocationProblem, min_total_duration

from .base import Policy, ProgramClass


class MinTotalDuration(Policy):
    program = ProgramClass.LP
    variant: min_total_duration.Variant

    def allocate(self, problem: AllocationProblem) -> Allocation:
        model = min_total_duration.build(problem, self.variant)
        return min_total_duration.decode(problem, model, self._solve(model, problem), self.name, self.variant)


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
