"""Policy names (Gavel's, so users' scripts translate 1:1) to policy classes."""

from __future__ import annotations

from optim import SolveOptions

from . import finish_time_fairness as ftf
from . import max_min_fairness as mmf
from . import max_sum_throughput as mst
from . import min_total_duration as mtd
from . import water_filling as wf
from .base import Policy
from .heuristics import HEURISTICS
from .pop import POP_SUFFIX, Partitioned
from .shockwave import Shockwave

POLICIES: dict[str, type[Policy]] = {
    cls.name: cls
    for cls in (
        mmf.MaxMinFairnessAgnostic, mmf.MaxMinFairnessPerf, mmf.MaxMinFairnessPacked,
        wf.MaxMinFairnessWaterFillingAgnostic, wf.MaxMinFairnessWaterFillingPerf, wf.MaxMinFairnessWaterFillingPacked,
        ftf.FinishTimeFairnessAgnostic, ftf.FinishTimeFairnessPerf, ftf.FinishTimeFairnessPacked,
        mtd.MinTotalDurationAgnostic, mtd.MinTotalDurationPerf, mtd.MinTotalDurationPacked,
        mst.MaxSumThroughputPerf, mst.MaxSumThroughputByCost, mst.MaxSumThroughputByCostSLOs,
        mst.MaxSumThroughputByCostPackedSLOs,
        *HEURISTICS, Shockwave,
    )
}


class UnknownPolicyError(ValueError):
    pass


def policy_class(name: str) -> type[Policy]:
    """The class behind a policy name (for ``<name>@pop<k>``, the partitioned policy's)."""
    base = name.rpartition(POP_SUFFIX)[0] or name
    try:
        return POLICIES[base]
    except KeyError:
        from .deadline import DEADLINE_POLICIES

        if base in DEADLINE_POLICIES:
            raise UnknownPolicyError(f"policy {name!r} plans integer GPU counts per slot, not time fractions: "
                                     f"run it through simulator.simulate / simulate_deadlines") from None
        raise UnknownPolicyError(f"unknown policy {name!r}; known: {', '.join(sorted({*POLICIES, *DEADLINE_POLICIES}))} "
                                 f"(append {POP_SUFFIX}<k> to a round policy to partition it into k parts)") from None


def make_policy(name: str, solver: str = "highs", options: SolveOptions | None = None, *,
                gavel_compat: bool = False, **params) -> Policy:
    """A fresh policy object (policies may keep state between calls); ``params`` go to the
    policy's constructor (e.g. ``seed`` for randomized heuristics). ``gavel_compat``
    reaches the policies that reproduce a defect of their published version. ``<name>@pop<k>``
    wraps policy ``name`` in :class:`~allocators.pop.Partitioned` with k parts (seed 0)."""
    base, pop, k = name.rpartition(POP_SUFFIX)
    if pop:
        if not k.isdigit() or int(k) < 1:
            raise UnknownPolicyError(f"policy {name!r}: {POP_SUFFIX} must be followed by a number of parts >= 1")
        return Partitioned(make_policy(base, solver, options, gavel_compat=gavel_compat, **params), int(k))
    cls = policy_class(name)
    if gavel_compat and cls.supports_gavel_compat:
        params["gavel_compat"] = True
    return cls(solver, options, **params)
