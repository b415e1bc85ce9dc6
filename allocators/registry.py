"""Every policy name to its class, grouped by the system that published it. Names are the
published artifacts' own (Gavel's, Shockwave's, ElasticFlow's), so users' scripts translate 1:1;
where two systems use one name (Gandiva), the later one's carries a suffix (``gandiva-ef``).

``POLICIES``: the policies the round clock runs (time shares, or whole-round plans);
``SLOT_POLICIES``: the policies planning GPUs per slot; ``ALL_POLICIES`` both."""

from __future__ import annotations

from allocators.base import Policy, SchedulingPolicy
from allocators.chronus import Chronus
from allocators.elasticflow.edf import EDF, EDFAccessControl
from allocators.elasticflow.elasticflow import ElasticFlow
from allocators.elasticflow.gandiva import Gandiva as GandivaEF
from allocators.elasticflow.published import EFAccessReplay, EFReplay
from allocators.elasticflow.themis import Themis
from allocators.elasticflow.tiresias import Tiresias
from allocators.gavel import finish_time_fairness as ftf
from allocators.gavel import max_min_fairness as mmf
from allocators.gavel import max_sum_throughput as mst
from allocators.gavel import min_total_duration as mtd
from allocators.gavel import water_filling as wf
from allocators.gavel.allox import AlloX
from allocators.gavel.fifo import Fifo, FifoPacked, FifoPerf
from allocators.gavel.gandiva import Gandiva
from allocators.gavel.isolated import Isolated
from allocators.gavel.proportional import Proportional
from allocators.pollux.optimus import OptimusOracle
from allocators.pollux.pollux import Pollux
from allocators.pollux.pollux_ga import PolluxGA
from allocators.pollux.tiresias import TiresiasPollux
from allocators.pop import POP_SUFFIX, Partitioned
from allocators.shockwave.gandiva_fair import GandivaFair
from allocators.shockwave.policy import Shockwave
from allocators.slot_plans import SlotPolicy
from optim import SolveOptions

#: the baselines that solve nothing, under Gavel's and Shockwave's names
HEURISTICS = (Isolated, Proportional, Fifo, FifoPerf, FifoPacked, Gandiva, GandivaFair, AlloX)

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

SLOT_POLICIES: dict[str, type[SlotPolicy]] = {cls.name: cls for cls in (
    EDF, EDFAccessControl, ElasticFlow, EFReplay, EFAccessReplay, GandivaEF, Tiresias, Themis, Chronus,
    TiresiasPollux, OptimusOracle, Pollux, PolluxGA,
)}

ALL_POLICIES: dict[str, type[SchedulingPolicy]] = {**POLICIES, **SLOT_POLICIES}


class UnknownPolicyError(ValueError):
    pass


def policy_class(name: str) -> type[Policy]:
    """The class behind a policy name (for ``<name>@pop<k>``, the partitioned policy's)."""
    base = name.rpartition(POP_SUFFIX)[0] or name
    try:
        return POLICIES[base]
    except KeyError:
        if base in SLOT_POLICIES:
            raise UnknownPolicyError(f"policy {name!r} plans integer GPU counts per slot, not time fractions: "
                                     f"run it through simulator.simulate / simulate_deadlines") from None
        raise UnknownPolicyError(f"unknown policy {name!r}; known: {', '.join(sorted(ALL_POLICIES))} "
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


def make_slot_policy(name: str, solver: str = "highs", options: SolveOptions | None = None,
                     **params) -> SlotPolicy:
    """A fresh slot policy object; ``params`` go to its constructor."""
    try:
        cls = SLOT_POLICIES[name]
    except KeyError:
        raise UnknownPolicyError(f"unknown policy {name!r}; known: {', '.join(sorted(ALL_POLICIES))}") from None
    return cls(solver, options, **params)
