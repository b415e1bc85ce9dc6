"""One call from a trace to a :class:`SimulationResult`, for any policy on any workload:
``simulate(...)`` for a Gavel / Shockwave trace (or a generated workload) and
``simulate_deadlines(...)`` for an ElasticFlow / ITP / Chronus trace with its node cluster and
iteration tables. A policy planning time shares or whole rounds runs on the round clock
(:class:`simulator.engine.Engine`), one planning GPUs per slot on the slot clock
(:class:`simulator.engine.SlotEngine`); the workload is converted to the clock's terms
(:mod:`simulator.workloads`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from allocators import ProgramClass, make_policy
from allocators.registry import POLICIES, SLOT_POLICIES, UnknownPolicyError, make_slot_policy, policy_class
from optim import SolveOptions
from simulator.cluster import Cluster, parse_cluster, parse_prices
from simulator.elasticflow_traces import DeadlineTrace, read_deadline_trace
from simulator.engine.presets import get_preset
from simulator.engine.rounds import Engine, Progress, SimulationConfig
from simulator.engine.slots import SlotConfig, SlotEngine
from simulator.example_table import example_table
from simulator.executor import Executor
from simulator.generator import generate_trace
from simulator.iteration_tables import IterationTable, read_throughput_dir
from simulator.metrics import SimulationResult
from simulator.node_cluster import NodeCluster, read_cluster_spec
from simulator.overheads import OverheadModel
from simulator.throughputs import ThroughputTable, read_gavel_json
from simulator.traces import Trace, read_trace
from simulator.workload import build_workload
from simulator.workloads import DeadlineRule, SlotWorkload, as_deadline_workload, as_round_inputs, with_deadlines

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
    slot: float | None = None,
    preset: str | None = None,
    **config_fields,
) -> SimulationResult:
    """Replay ``trace`` (a path or a :class:`Trace`) or a workload drawn with
    ``generate`` (keyword arguments of :func:`generate_trace`) under ``policy``.

    ``throughputs`` defaults to the built-in example table; ``solver="auto"`` picks
    :func:`default_solver`; ``config_fields`` (``round_length``, ``window``, ``seed``,
    ``gavel_compat``, ...) over ``preset``'s settings (default Gavel's; see
    :mod:`simulator.engine.presets`) build the :class:`SimulationConfig` when ``config`` is None,
    whose ``seed`` is also the solver's random seed unless ``options`` sets one;
    ``policy_params`` go to the policy's constructor (e.g. ``config`` for ``shockwave``);
    ``executor`` runs each round's (or slot's) leases (default: simulated, every planned step done).

    A deadline policy (``elasticflow``, ``edf``, ...) runs the same workload on the slotted
    engine (:func:`simulator.workloads.as_deadline_workload`: one GPU type, ``gpus_per_server``-GPU
    nodes, ``slot``-second slots, default the ``preset``'s or ElasticFlow's 60 s) with deadlines
    from the trace's SLOs or ``deadlines`` (``uniform:LO:HI``, drawn with the config's seed).
    """
    if (trace is None) == (generate is None):
        raise ValueError("give exactly one of a trace or generate=...")
    config = config or SimulationConfig.from_preset(preset or "gavel", **config_fields)
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
    if policy in SLOT_POLICIES:
        per_server = config.gpus_per_server
        if not isinstance(per_server, int):
            raise ValueError(f"policy {policy}: one GPUs-per-server count, got {per_server}")
        if workload.trace.adaptive:
            notes.append("batch-size adaptation (accordion / gns) is not modelled by slot policies: jobs keep "
                         "their first batch size")
        return run_slot_workload(as_deadline_workload(workload, per_server, policy), policy,
                                 "highs" if solver == "auto" else solver, options, slot, progress=progress,
                                 notes=notes, executor=executor, preset=preset)
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


GPU_TYPES = ("A100", "T4")


def gpu_type_of(directory: str | os.PathLike) -> str | None:
    """The GPU type a table directory is named after (``throughputs_T4`` -> "T4"), else None."""
    name = Path(directory).name.upper()
    return next((t for t in GPU_TYPES if name.endswith(t)), None)


def simulate_deadlines(
    trace: str | os.PathLike | DeadlineTrace,
    cluster: str | os.PathLike | NodeCluster,
    throughputs: str | os.PathLike | IterationTable,
    *,
    policy: str = "elasticflow",
    solver: str = "highs",
    options: SolveOptions | None = None,
    slot: float | None = None,
    gpu_type: str | None = None,
    overhead: OverheadModel | None = None,
    progress: Progress | None = None,
    round_config=None,
    executor=None,
    preset: str | None = None,
    **policy_params,
):
    """Replay ``trace`` on ``cluster`` under ``policy``. ``gpu_type`` selects ElasticFlow's
    hand-set GPU caps (default: from the table directory's name); ``overhead`` None = the
    published model for the cluster size, :meth:`OverheadModel.none` = no overhead.

    A round policy (Gavel's, Shockwave's) runs the same workload on the round engine
    (:func:`simulator.workloads.as_round_inputs`; ``round_config``: its
    :class:`~simulator.engine.rounds.SimulationConfig`, GPUs per server from the cluster) and returns a
    :class:`~simulator.metrics.SimulationResult`. ``executor`` runs each interval's leases
    (default: simulated)."""
    table = throughputs if isinstance(throughputs, IterationTable) else read_throughput_dir(throughputs)
    if gpu_type is None:
        gpu_type = gpu_type_of(table.directory)
    elif gpu_type not in GPU_TYPES:
        raise ValueError(f"gpu type {gpu_type!r}: expected one of {', '.join(GPU_TYPES)}")
    spec = cluster if isinstance(cluster, NodeCluster) else read_cluster_spec(cluster)
    jobs = trace if isinstance(trace, DeadlineTrace) else read_deadline_trace(trace)
    workload = SlotWorkload.build(jobs, spec, table, gpu_type)
    if policy in POLICIES:
        rtrace, rcluster, rtable, per_server = as_round_inputs(workload)
        config = replace(round_config or SimulationConfig.from_preset(preset or "gavel"), gpus_per_server=per_server)
        result = simulate(rtrace, policy=policy, solver=solver, cluster=rcluster, throughputs=rtable, config=config,
                          options=options, progress=progress, policy_params=policy_params, executor=executor)
        result.summary["notes"].insert(0, f"{jobs.source} on the round engine: {rcluster} in servers of "
                                          f"{per_server}, each job on its requested GPUs, deadlines from the trace")
        return result
    if policy not in SLOT_POLICIES:
        raise UnknownPolicyError(f"unknown policy {policy!r}; known: "
                                 f"{', '.join(sorted({*POLICIES, *SLOT_POLICIES}))}")
    return run_slot_workload(workload, policy, solver, options, slot, overhead, progress, executor=executor,
                             preset=preset, **policy_params)


def run_slot_workload(workload: SlotWorkload, policy: str, solver: str, options: SolveOptions | None,
                      slot: float | None, overhead: OverheadModel | None = None, progress: Progress | None = None,
                      notes: list[str] | None = None, executor=None, preset: str | None = None,
                      **policy_params) -> SimulationResult:
    """``policy`` on ``workload`` on the slot clock, slots of ``slot`` seconds (None: the
    ``preset``'s, default ElasticFlow's 60 s); ``notes`` go to the summary's notes."""
    name = preset or "elasticflow"
    length = get_preset(name).slot if slot is None else slot
    pol = make_slot_policy(policy, solver, options, **policy_params)
    result = SlotEngine(workload, pol, SlotConfig(slot=length, overhead=overhead, preset=name), executor).run(progress)
    result.summary["notes"] = [*(notes or []), *result.summary["notes"]]
    return result


__all__ = ["EXAMPLE", "GPU_TYPES", "default_solver", "example_workload", "gpu_type_of", "simulate",
           "simulate_deadlines"]
