"""Every policy name to its class, grouped by the system that published it. Names are the
published artifacts' own (Gavel's, Shockwave's, ElasticFlow's), so users' scripts translate 1:1;
where two systems use one name (Gandiva), the later one's carries a suffix (``gandiva-ef``; Helios'
``fifo``, after Gavel's, is ``fifo-helios``; its ``tiresias``, after Pollux', ``tiresias-helios``).

``POLICIES``: the policies the round clock runs (time shares, or whole-round plans);
``SLOT_POLICIES``: the policies planning GPUs per slot; ``ALL_POLICIES`` both.

Wherever a name is accepted, so is a reference to a user's policy (:mod:`allocators.plugins`):
``package.module:Class``, ``path/to/file.py:Class`` or an installed plugin's name. :func:`load`
resolves it once and keeps the class in :data:`LOADED` under the reference itself; the tables
list the built-in policies only."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Generic, TypeVar

from allocators.plugins import (
    PolicyReferenceError,
    UnknownPolicyError,
    check_policy_class,
    is_reference,
    load_plugin,
    load_reference,
    plugins,
)

if TYPE_CHECKING:
    from allocators.base import Policy, SchedulingPolicy
    from allocators.slot_plans import SlotPolicy
    from optim import SolveOptions

P = TypeVar("P")

#: ``<name>@pop<k>``: policy ``name`` partitioned into k parts (:mod:`allocators.pop`)
POP_SUFFIX = "@pop"


class LazyClasses(MutableMapping[str, "type[P]"], Generic[P]):
    """Policy name -> class, each class imported on first use from its ``"module:Class"``: a run
    imports the one family it simulates, not all of them. Names and membership need no import;
    reading a value imports its module."""

    def __init__(self, homes: dict[str, str]):
        self._homes = dict(homes)
        self._classes: dict[str, type[P]] = {}

    def __getitem__(self, name: str) -> type[P]:
        cls = self._classes.get(name)
        if cls is None:
            module, _, attr = self._homes[name].partition(":")
            cls = self._classes[name] = getattr(importlib.import_module(module), attr)
        return cls

    def __setitem__(self, name: str, cls: type[P]) -> None:
        self._homes[name] = f"{cls.__module__}:{cls.__qualname__}"
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._homes[name]
        self._classes.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._homes

    def __iter__(self) -> Iterator[str]:
        return iter(self._homes)

    def __len__(self) -> int:
        return len(self._homes)


_GAVEL = "allocators.gavel"
POLICIES: LazyClasses[Policy] = LazyClasses({
    "max_min_fairness": f"{_GAVEL}.max_min_fairness:MaxMinFairnessAgnostic",
    "max_min_fairness_perf": f"{_GAVEL}.max_min_fairness:MaxMinFairnessPerf",
    "max_min_fairness_packed": f"{_GAVEL}.max_min_fairness:MaxMinFairnessPacked",
    "max_min_fairness_water_filling": f"{_GAVEL}.water_filling:MaxMinFairnessWaterFillingAgnostic",
    "max_min_fairness_water_filling_perf": f"{_GAVEL}.water_filling:MaxMinFairnessWaterFillingPerf",
    "max_min_fairness_water_filling_packed": f"{_GAVEL}.water_filling:MaxMinFairnessWaterFillingPacked",
    "finish_time_fairness": f"{_GAVEL}.finish_time_fairness:FinishTimeFairnessAgnostic",
    "finish_time_fairness_perf": f"{_GAVEL}.finish_time_fairness:FinishTimeFairnessPerf",
    "finish_time_fairness_packed": f"{_GAVEL}.finish_time_fairness:FinishTimeFairnessPacked",
    "min_total_duration": f"{_GAVEL}.min_total_duration:MinTotalDurationAgnostic",
    "min_total_duration_perf": f"{_GAVEL}.min_total_duration:MinTotalDurationPerf",
    "min_total_duration_packed": f"{_GAVEL}.min_total_duration:MinTotalDurationPacked",
    "max_sum_throughput_perf": f"{_GAVEL}.max_sum_throughput:MaxSumThroughputPerf",
    "max_sum_throughput_normalized_by_cost_perf": f"{_GAVEL}.max_sum_throughput:MaxSumThroughputByCost",
    "max_sum_throughput_normalized_by_cost_perf_SLOs": f"{_GAVEL}.max_sum_throughput:MaxSumThroughputByCostSLOs",
    "max_sum_throughput_normalized_by_cost_packed_SLOs":
        f"{_GAVEL}.max_sum_throughput:MaxSumThroughputByCostPackedSLOs",
    "isolated": f"{_GAVEL}.isolated:Isolated",
    "proportional": f"{_GAVEL}.proportional:Proportional",
    "fifo": f"{_GAVEL}.fifo:Fifo",
    "fifo_perf": f"{_GAVEL}.fifo:FifoPerf",
    "fifo_packed": f"{_GAVEL}.fifo:FifoPacked",
    "gandiva": f"{_GAVEL}.gandiva:Gandiva",
    "gandiva_fair": "allocators.shockwave.gandiva_fair:GandivaFair",
    "allox": f"{_GAVEL}.allox:AlloX",
    "shockwave": "allocators.shockwave.policy:Shockwave",
})

#: the baselines that solve nothing, under Gavel's and Shockwave's names
HEURISTICS = ("isolated", "proportional", "fifo", "fifo_perf", "fifo_packed", "gandiva", "gandiva_fair", "allox")

SLOT_POLICIES: LazyClasses[SlotPolicy] = LazyClasses({
    "edf": "allocators.elasticflow.edf:EDF",
    "edf-accessctrl": "allocators.elasticflow.edf:EDFAccessControl",
    "elasticflow": "allocators.elasticflow.elasticflow:ElasticFlow",
    "ef": "allocators.elasticflow.published:EFReplay",
    "elasticflow-greedy": "allocators.elasticflow.published:EFAccessReplay",
    "gandiva-ef": "allocators.elasticflow.gandiva:Gandiva",
    "dlas-gpu": "allocators.elasticflow.tiresias:Tiresias",
    "themis": "allocators.elasticflow.themis:Themis",
    "chronus": "allocators.chronus:Chronus",
    "tiresias": "allocators.pollux.tiresias:TiresiasPollux",
    "optimus": "allocators.pollux.optimus:OptimusOracle",
    "pollux": "allocators.pollux.pollux:Pollux",
    "pollux-ga": "allocators.pollux.pollux_ga:PolluxGA",
    "fifo-helios": "allocators.helios.fifo:HeliosFifo",
    "sjf": "allocators.helios.sjf:HeliosSjf",
    "qssf": "allocators.helios.qssf:HeliosQssf",
    "tiresias-helios": "allocators.helios.tiresias:HeliosTiresias",
    "lucid": "allocators.lucid.lucid:Lucid",
    "lucid-exact": "allocators.lucid.exact:LucidExact",
})


class _Union(Mapping[str, type]):
    """Several tables read through as one (a name added to one of them shows here)."""

    def __init__(self, *tables: LazyClasses):
        self._tables = tables

    def __getitem__(self, name: str) -> type:
        for table in self._tables:
            if name in table:
                return table[name]
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(name in table for table in self._tables)

    def __iter__(self) -> Iterator[str]:
        return (name for table in self._tables for name in table)

    def __len__(self) -> int:
        return sum(len(table) for table in self._tables)


ALL_POLICIES: Mapping[str, type[SchedulingPolicy]] = _Union(POLICIES, SLOT_POLICIES)

#: the names schedopt itself ships
BUILT_IN = frozenset(ALL_POLICIES)
#: the user's policies resolved so far (by :func:`load`) or registered (:func:`register`), by the
#: reference or name they were asked for; the tables above hold the built-in ones only
LOADED: dict[str, type[SchedulingPolicy]] = {}


def load(name: str) -> type[SchedulingPolicy]:
    """The class behind ``name``: a built-in policy (``<name>@pop<k>``: the partitioned policy's),
    a ``module:Class`` or ``file.py:Class`` reference, or an installed plugin's name. A loaded
    class is entered under ``name`` in :data:`POLICIES` or :data:`SLOT_POLICIES`. A class whose
    ``name`` is a built-in policy's is refused: one name, one policy (a plugin whose entry point
    is named as a built-in is never loaded: ``schedopt policies`` reports it)."""
    base = name.rpartition(POP_SUFFIX)[0] or name
    if base in ALL_POLICIES:
        return ALL_POLICIES[base]
    if base in LOADED:
        return LOADED[base]
    if is_reference(base):
        cls = load_reference(base)
    else:
        plugin = plugins().get(base)
        if plugin is None:
            raise UnknownPolicyError(
                f"unknown policy {name!r}; known: {', '.join(sorted(ALL_POLICIES))} (append {POP_SUFFIX}<k> to a "
                f"round policy to partition it into k parts; your own: package.module:Class or path/to/file.py:Class)")
        cls = load_plugin(plugin)
    if cls.name in BUILT_IN and cls.__module__.partition(".")[0] != "allocators":
        raise PolicyReferenceError(f"policy {base!r}: class {cls.__name__}'s name {cls.name!r} clashes with the "
                                   f"built-in policy of that name; give it another name")
    LOADED[base] = cls
    return cls


def register(cls: type[P]) -> type[P]:
    """Enter the policy class ``cls`` under its ``name`` (a class decorator for notebooks and
    scripts; a package declares its policies as entry points instead, :mod:`allocators.plugins`)."""
    check_policy_class(cls, f"register({getattr(cls, '__name__', cls)!r})")
    if cls.name in BUILT_IN:
        raise PolicyReferenceError(f"register({cls.__name__}): the name {cls.name!r} is a built-in policy's; "
                                   f"give it another name")
    LOADED[cls.name] = cls
    return cls


def is_slot_policy(name: str) -> bool:
    """Whether ``name`` (any reference :func:`load` takes) plans GPUs per slot."""
    return issubclass(load(name), _slot_policy())


def policy_class(name: str) -> type[Policy]:
    """The class behind a round policy's name or reference (for ``<name>@pop<k>``, the partitioned
    policy's)."""
    cls = load(name)
    if issubclass(cls, _slot_policy()):
        raise UnknownPolicyError(f"policy {name!r} plans integer GPU counts per slot, not time fractions: "
                                 f"run it through simulator.simulate / simulate_deadlines")
    return cls


def _slot_policy() -> type:
    from allocators.slot_plans import SlotPolicy

    return SlotPolicy


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
        from allocators.pop import Partitioned

        return Partitioned(make_policy(base, solver, options, gavel_compat=gavel_compat, **params), int(k))
    cls = policy_class(name)
    if gavel_compat and cls.supports_gavel_compat:
        params["gavel_compat"] = True
    return cls(solver, options, **params)


def make_slot_policy(name: str, solver: str = "highs", options: SolveOptions | None = None,
                     **params) -> SlotPolicy:
    """A fresh slot policy object; ``params`` go to its constructor."""
    if not is_slot_policy(name):
        raise UnknownPolicyError(f"policy {name!r} plans time shares or whole rounds, not GPUs per slot")
    return load(name)(solver, options, **params)
