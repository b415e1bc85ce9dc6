"""Policies backed by formulations.max_min_fairness."""

from __future__ import annotations

from allocators.base import FormulationPolicy, ProgramClass
from formulations import max_min_fairness


class MaxMinFairness(FormulationPolicy):
    program = ProgramClass.LP
    formulation = max_min_fairness


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
