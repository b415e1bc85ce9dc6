"""Policies backed by formulations.water_filling (hierarchical max-min fairness)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from allocators.base import Policy, ProgramClass
from formulations import Allocation, AllocationProblem, water_filling
from optim import SolveOptions


class MaxMinFairnessWaterFilling(Policy):
    """Lexicographic max-min fairness: a level LP and a bottleneck MILP per level.

    ``entities`` labels jobs, either as a mapping job id -> entity (stable across calls as
    jobs come and go) or as one label per problem row; ``entity_weights`` maps an entity to
    its weight (default 1); ``entity_split`` is "fairness" or "fifo" (see the formulation).
    Unless ``options`` set a feasibility tolerance, the formulation's FEASIBILITY_TOL is used.
    """

    program = ProgramClass.MILP
    variant: str

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None,
                 entity_weights: Mapping[Hashable, float] | None = None,
                 entities: Mapping[int, Hashable] | Sequence[Hashable] | None = None,
                 entity_split: str = "fairness"):
        if entity_split not in water_filling.ENTITY_SPLITS:
            raise ValueError(f"unknown entity split {entity_split!r}; "
                             f"use one of {', '.join(water_filling.ENTITY_SPLITS)}")
        if entity_weights is not None and entities is None:
            raise ValueError("entity weights need entities (job id -> entity)")
        super().__init__(solver, water_filling.solve_options(options))
        self.entity_weights = entity_weights
        self.entities = entities
        self.entity_split = entity_split

    def allocate(self, problem: AllocationProblem) -> Allocation:
        return water_filling.solve_water_filling(
            problem, self.variant, self._solve, entities=self._labels(problem),
            entity_weights=self.entity_weights, entity_split=self.entity_split, policy=self.name)

    def _labels(self, problem: AllocationProblem) -> Sequence[Hashable] | None:
        if not isinstance(self.entities, Mapping):
            return self.entities
        missing = [int(j) for j in problem.job_ids if int(j) not in self.entities]
        if missing:
            raise ValueError(f"{self.name}: no entity for job {missing[0]}")
        return [self.entities[int(j)] for j in problem.job_ids]


class MaxMinFairnessWaterFillingAgnostic(MaxMinFairnessWaterFilling):
    """Water filling over equal GPU-time shares, blind to heterogeneity."""

    name = "max_min_fairness_water_filling"
    variant = "agnostic"


class MaxMinFairnessWaterFillingPerf(MaxMinFairnessWaterFilling):
    """Heterogeneity-aware water filling over normalized throughputs."""

    name = "max_min_fairness_water_filling_perf"
    claims = ("pareto_efficiency",)
    fixed_type_order = True
    variant = "perf"


class MaxMinFairnessWaterFillingPacked(MaxMinFairnessWaterFilling):
    """Heterogeneity-aware water filling with space sharing (co-located pairs)."""

    name = "max_min_fairness_water_filling_packed"
    fixed_type_order = True
    variant = "packed"
    uses_pairs = True
