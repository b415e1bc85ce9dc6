"""``simulate(...)``: one call from a trace (or a generated workload) to a SimulationResult."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from allocators import ProgramClass, make_policy
from allocators.deadline import DEADLINE_POLICIES
from allocators.registry import policy_class
from optim import SolveOptions

from .cluster import Cluster, parse_cluster, parse_prices
from .engine import Engine, Progress, SimulationConfig
from .example_table import example_table
from .executor import Executor
from .generator import generate_trace
from .deadline_metrics import DeadlineResult
from .metrics import SimulationResult
from .throughputs import ThroughputTable, read_gavel_json
from .traces import Trace, read_trace
from .workload import build_workload
from .workloads import DeadlineRule, as_deadline_workload, with_deadlines

#: the built-in example: a few hundred generated jobs on a small heterogeneous cluster
EXAMPLE = {"cluster": "v100=8,p100=8,k80=8", "num_jobs": 200, "lam": 1800.0, "multi_gpu": True, "seed": 0}


def default_solver(policy: str, gavel_compat: bool = False) -> str:
    """``clarabel`` (interior point) for LP and convex policies, ``highs`` for MILPs; under
    ``gavel_compat``, a policy's ``published_solver`` where it has one (a dependency).

    An interior-point solution is the analytic centre of the optimal face; the published
    Gavel simulator used one (ECOS), and where optima are not unique (often, for max-min
    programs) a vertex solver picks another optimal allocation, which changes the schedule.
    Where the published policy keeps the point its solver stopped at inside a feasible set
    (the makespan bisection), only that solver gives the published point."""
    cls = policy_class(policy)
    published = getattr(cls, "published_solver", None) if gavel_compat else None
    if published:
        return published
    return "highs" if cls.program in (ProgramClass.MILP, ProgramClass.HEURISTIC) else "clarabel"


def simulate(
    trace: str | os.PathLike | Trace | None = None,
    *,
    policy: str = "max_min_fairness_perf",
    solver: str = "auto",
    cluster: str | Cluster = "v100=36,p100=36,k80=36",
    throughputs: str | os.PathLike | ThroughputTable | None = None,
    generate: Mapping | None = None,
    config: SimulationConfig | None = None,
    options: SolveOptions | None = None,
    prices: str | None = None,
    progress: Progress | None = None,
    policy_params: Mapping | None = None,
    executor: Executor | None = None,
    deadlines: str | DeadlineRule | None = None,
    slot: float = 60.0,
    **config_fields,
) -> SimulationResult | DeadlineResult:
    """Replay ``trace`` (a path or a :class:`Trace`) or a workload drawn with
    ``generate`` (keyword arguments of :func:`generate_trace`) under ``policy``.

    ``throughputs`` defaults to the built-in example table; ``solver="auto"`` picks
    :func:`default_solver`; ``config_fields`` (``round_length``, ``window``, ``seed``,
    ``gavel_compat``, ...) build the :class:`SimulationConfig` when ``config`` is None,
    whose ``seed`` is also the solver's random seed unless ``options`` sets one;
    ``policy_params`` go to the policy's constructor (e.g. ``config`` for ``shockwave``);
    ``executor`` runs each round's (or slot's) leases (default: simulated, every planned step done).

    A deadline policy (``elasticflow``, ``edf``, ...) runs the same workload on the slotted
    engine (:func:`simulator.workloads.as_deadline_workload`: one GPU type, ``gpus_per_server``-GPU
    nodes, ``slot``-second slots) with deadlines from the trace's SLOs or ``deadlines``
    (``uniform:LO:HI``, drawn with the config's seed) and returns a :class:`DeadlineResult`.
    """
    if (trace is None) == (generate is None):
        raise ValueError("give exactly one of a trace or generate=...")
    config = config or SimulationConfig(**config_fields)
    table = throughputs if isinstance(throughputs, ThroughputTable) else (
        read_gavel_json(throughputs) if throughputs is not None else example_table())
    spec = cluster if isinstance(cluster, Cluster) else parse_cluster(cluster)
    if generate is not None:
        trace = generate_trace(table, **dict(generate))
    elif not isinstance(trace, Trace):
        trace = read_trace(trace)
    workload = build_workload(trace, spec, table)
    notes = []
    if deadlines is not None:
        rule = DeadlineRule.parse(deadlines, config.seed) if isinstance(deadlines, str) else deadlines
        workload = with_deadlines(workload, rule)
        notes.append(f"deadlines drawn: {rule}")
    if policy in DEADLINE_POLICIES:
        from .deadline_simulate import run_deadline_workload

        per_server = config.gpus_per_server
        if not isinstance(per_server, int):
            raise ValueError(f"policy {policy}: one GPUs-per-server count, got {per_server}")
        if workload.trace.adaptive:
            notes.append("batch-size adaptation (accordion / gns) is not modelled by slot policies: jobs keep "
                         "their first batch size")
        return run_deadline_workload(as_deadline_workload(workload, per_server, policy), policy,
                                     "highs" if solver == "auto" else solver, options, slot, progress=progress,
                                     notes=notes, executor=executor)
    options = options or SolveOptions()
    if options.seed is None:
        options = replace(options, seed=config.seed)
    pol = make_policy(policy, default_solver(policy, config.gavel_compat) if solver == "auto" else solver, options,
                      gavel_compat=config.gavel_compat, **_seeded(policy, config.seed), **dict(policy_params or {}))
    price_array = parse_prices(prices, spec) if prices else None
    result = Engine(workload, pol, config, prices=price_array, executor=executor).run(progress)
    result.summary["notes"][:0] = notes
    return result


def _seeded(policy: str, seed: int) -> dict:
    """Randomized heuristics take the simulation's seed."""
    import inspect

    return {"seed": seed} if "seed" in inspect.signature(policy_class(policy).__init__).parameters else {}


def example_workload() -> tuple[Trace, Cluster, ThroughputTable]:
    """The built-in example's trace, cluster and table."""
    table = example_table()
    gen = {k: v for k, v in EXAMPLE.items() if k != "cluster"}
    return generate_trace(table, **gen), parse_cluster(EXAMPLE["cluster"]), table


__all__ = ["EXAMPLE", "default_solver", "example_workload", "simulate"]
