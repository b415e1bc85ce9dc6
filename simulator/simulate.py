"""One call from a workload to a :class:`SimulationResult`, for any policy on any workload:
:func:`run` takes the one :class:`~simulator.workload.Workload`; :func:`simulate` builds it from a
Gavel / Shockwave trace (or a generated one), a ``type=count`` cluster and a Gavel table, and
:func:`simulate_deadlines` from an ElasticFlow / ITP trace, a node cluster spec and iteration tables,
:func:`simulate_job_log` from a Helios / Philly job log and a VC config.
Every policy runs on the one :class:`simulator.engine.Engine`: one planning time shares or whole
rounds on the round clock, one planning GPUs per slot on the slot clock, each through its view of
the workload (:mod:`simulator.views`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from allocators import ProgramClass, make_policy
from allocators.registry import is_slot_policy, make_slot_policy, policy_class
from optim import SolveOptions
from simulator.applications import read_applications
from simulator.cluster import Cluster, parse_cluster, parse_prices
from simulator.engine import Engine, Progress, SimulationConfig, SlotConfig
from simulator.engine.presets import get_preset
from simulator.example_table import example_table
from simulator.executor import Executor
from simulator.generator import generate_trace
from simulator.metrics import SimulationResult
from simulator.overheads import OverheadModel
from simulator.rates import CurveRates, GoodputRates, RunTimeRates, TableRates
from simulator.readers.elasticflow_traces import DeadlineTrace
from simulator.readers.helios_logs import read_job_log
from simulator.readers.iteration_tables import IterationTable, read_throughput_dir
from simulator.readers.lucid_measurements import VcConfig, read_vc_config
from simulator.readers.node_cluster import NodeCluster, read_cluster_spec
from simulator.readers.pollux_traces import POLLUX_COLUMNS, PolluxTrace
from simulator.readers.traces import Trace, read_trace
from simulator.sharing import Sharing
from simulator.slot_view import SlotView
from simulator.throughputs import ThroughputTable, read_gavel_json
from simulator.views import DeadlineRule, round_view, slot_view, with_deadlines
from simulator.workload import Jobs, Workload, read_jobs

#: the built-in example: a few hundred generated jobs on a small heterogeneous cluster
EXAMPLE = {"cluster": "v100=8,p100=8,k80=8", "num_jobs": 200, "lam": 1800.0, "multi_gpu": True, "seed": 0}


def default_solver(policy: str, gavel_compat: bool = False) -> str:
    """``block:auto`` for LP policies (the block method on block-angular programs of 4,096 blocks or
    more, Clarabel below: :class:`optim.backends.block.BlockBackend`), ``clarabel`` (interior point)
    for convex ones, ``highs`` for MILPs, unless the policy names its own (``auto_solver``: finish-time
    fairness runs ``block:auto``); under ``gavel_compat``, a policy's ``published_solver`` where it
    has one (a dependency).

    Where optima are not unique (often, for max-min programs) an interior-point solver stops
    inside the optimal face and a vertex solver at a vertex: other allocations, other schedules.
    The published Gavel simulator's schedules follow the points ECOS stops at on its own
    programs, which is why its policies name ECOS as their ``published_solver``."""
    cls = policy_class(policy)
    published = getattr(cls, "published_solver", None) if gavel_compat else None
    if published:
        return published
    own = getattr(cls, "auto_solver", None)
    if own is not None:
        return own
    if cls.program in (ProgramClass.MILP, ProgramClass.HEURISTIC):
        return "highs"
    return "block:auto" if cls.program == ProgramClass.LP else "clarabel"


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
    """Replay a Gavel / Shockwave ``trace`` (a path or a :class:`Trace`) or a workload drawn with
    ``generate`` (keyword arguments of :func:`generate_trace`) under ``policy``: :func:`run` on the
    workload of its jobs, ``cluster`` and ``throughputs`` (default: the built-in example table).

    ``config_fields`` (``round_length``, ``window``, ``seed``, ``gavel_compat``, ...) over ``preset``'s
    settings (default Gavel's; see :mod:`simulator.engine.presets`) build the
    :class:`SimulationConfig` when ``config`` is None."""
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
    return run(Workload(Jobs.from_gavel(trace), spec, TableRates(table)), policy=policy, solver=solver,
               config=config, options=options, prices=prices, progress=progress, policy_params=policy_params,
               executor=executor, deadlines=deadlines, slot=slot, preset=preset)


def run(
    workload: Workload,
    *,
    policy: str,
    solver: str = "auto",
    config: SimulationConfig | None = None,
    options: SolveOptions | None = None,
    prices: str | None = None,
    progress: Progress | None = None,
    policy_params: Mapping | None = None,
    executor: Executor | None = None,
    deadlines: str | DeadlineRule | None = None,
    slot: float | None = None,
    overhead: OverheadModel | None = None,
    preset: str | None = None,
) -> SimulationResult:
    """``policy`` on ``workload``, whatever trace it came from: the one entry of every run.

    A policy planning time shares or whole rounds runs on the round clock
    (:class:`simulator.engine.Rounds`, settings ``config``, default ``preset``'s or Gavel's; GPUs per
    server from the cluster where it gives them), one planning GPU counts on the slot clock
    (:class:`simulator.engine.Slots`, ``slot``-second slots, default the ``preset``'s or
    ElasticFlow's 60 s, ``overhead`` None: the published model), each through its view of the
    workload (:mod:`simulator.views`). ``solver="auto"`` picks :func:`default_solver` (HiGHS for slot
    policies); ``deadlines`` (``uniform:LO:HI``, drawn with the config's seed) supplies deadlines a
    Gavel trace lacks; ``policy_params`` go to the policy's constructor; ``executor`` runs each
    interval's leases (default: simulated, every planned step done). An unknown policy is an error
    listing the known ones; no name is ever mapped to another."""
    config = config or SimulationConfig.from_preset(preset or "gavel")
    if deadlines is not None:
        rule = DeadlineRule.parse(deadlines, config.seed) if isinstance(deadlines, str) else deadlines
        workload = with_deadlines(workload, rule)
    notes = list(workload.notes)
    if workload.jobs.vc is not None and workload.cluster.vcs is None:
        notes.append(f"the jobs name virtual clusters; cluster {workload.cluster} has none, so any job may run on "
                     f"any node")
    if is_slot_policy(policy):
        if any(mode != "static" for mode in workload.jobs.mode):
            notes.append("batch-size adaptation (accordion / gns) is not modelled by slot policies: jobs keep "
                         "their first batch size")
        view = slot_view(workload, config.gpus_per_server, policy)
        return run_slot_view(view, policy, "highs" if solver == "auto" else solver, options, slot, overhead,
                             progress, notes=notes, executor=executor, preset=preset, **dict(policy_params or {}))
    view = round_view(workload)
    per_node = workload.cluster.gpus_per_node
    if per_node is not None:
        config = replace(config, gpus_per_server=per_node)
    if isinstance(workload.rates, CurveRates):
        notes.insert(0, f"{workload.jobs.source} on the round clock: {view.cluster} in servers of {per_node}, "
                        f"each job on its requested GPUs, deadlines from the trace")
    if isinstance(workload.rates, GoodputRates):
        notes.insert(1, "each job at its trace batch size, its epochs at their mean measured speed on its GPUs "
                        "(Pollux's co-adaptive job model runs on the slot clock only)")
    options = options or SolveOptions()
    if options.seed is None:
        options = replace(options, seed=config.seed)
    pol = make_policy(policy, default_solver(policy, config.gavel_compat) if solver == "auto" else solver, options,
                      gavel_compat=config.gavel_compat, **_seeded(policy, config.seed), **dict(policy_params or {}))
    price_array = parse_prices(prices, view.cluster) if prices else None
    result = Engine(view, pol, config, prices=price_array, executor=executor).run(progress)
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
    """Replay a ``trace`` (ElasticFlow / ITP, or any format :func:`~simulator.workload.read_jobs` reads
    whose jobs name a global batch size) on the node ``cluster`` spec with the iteration tables
    ``throughputs`` under ``policy``: :func:`run` on that workload. ``gpu_type`` selects ElasticFlow's
    hand-set GPU caps (default: from the table directory's name); ``overhead`` None = the published
    model for the cluster size, :meth:`OverheadModel.none` = no overhead; ``round_config``: the
    :class:`~simulator.engine.rounds.SimulationConfig` of a round policy."""
    table = throughputs if isinstance(throughputs, IterationTable) else read_throughput_dir(throughputs)
    if gpu_type is None:
        gpu_type = gpu_type_of(table.directory)
    elif gpu_type not in GPU_TYPES:
        raise ValueError(f"gpu type {gpu_type!r}: expected one of {', '.join(GPU_TYPES)}")
    nodes = cluster if isinstance(cluster, NodeCluster) else read_cluster_spec(cluster)
    jobs = Jobs.from_deadlines(trace) if isinstance(trace, DeadlineTrace) else read_jobs(trace)
    rates = CurveRates(table, gpu_type)
    workload = Workload(jobs, Cluster.of_nodes(nodes, rates.worker_types[0]), rates)
    return run(workload, policy=policy, solver=solver, config=round_config, options=options, progress=progress,
               policy_params=policy_params, executor=executor, slot=slot, overhead=overhead, preset=preset)


#: Pollux's published cluster: 16 nodes of 4 GPUs
POLLUX_CLUSTER = (16, 4)


def find_applications(trace: str | os.PathLike) -> Path | None:
    """Pollux's application measurements beside a workload: ``traces/`` next to its folder (the
    artifact's layout, ``workloads*/`` and ``traces/`` side by side)."""
    folder = Path(trace).resolve().parent.parent / "traces"
    return folder if folder.is_dir() else None


def simulate_pollux(trace: str | os.PathLike, applications: str | os.PathLike | None = None, *,
                    policy: str = "tiresias", nodes: int = POLLUX_CLUSTER[0], gpus_per_node: int = POLLUX_CLUSTER[1],
                    solver: str = "highs", options: SolveOptions | None = None, slot: float | None = None,
                    preset: str | None = None, progress: Progress | None = None, executor=None,
                    **policy_params) -> SimulationResult:
    """Replay a Pollux workload (``workloads*/workload-N.csv``) on ``nodes`` × ``gpus_per_node`` GPUs
    under ``policy``, its jobs following Pollux's co-adaptive model of their applications measured
    in ``applications`` (default: :func:`find_applications`)."""
    workload = pollux_workload(trace, applications, nodes=nodes, gpus_per_node=gpus_per_node)
    return run(workload, policy=policy, solver=solver, options=options, progress=progress,
               policy_params=policy_params, executor=executor, slot=slot, preset=preset)


def pollux_workload(trace: str | os.PathLike, applications: str | os.PathLike | None = None, *,
                    nodes: int = POLLUX_CLUSTER[0], gpus_per_node: int = POLLUX_CLUSTER[1]) -> Workload:
    """A Pollux workload on ``nodes`` × ``gpus_per_node`` GPUs, its jobs' goodput models from
    ``applications`` (default: :func:`find_applications`)."""
    jobs = read_jobs(trace)
    if not isinstance(jobs.record, PolluxTrace):
        raise ValueError(f"{trace}: not a Pollux workload (columns {', '.join(POLLUX_COLUMNS)})")
    folder = applications if applications is not None else find_applications(trace)
    if folder is None:
        raise ValueError(f"{trace}: no application measurements found beside it (traces/ next to its folder); "
                         f"give --applications DIR")
    apps = read_applications(folder)
    total = nodes * gpus_per_node
    rates = GoodputRates.build(apps, jobs.model, jobs.batch_size, total, gpus_per_node)
    return Workload(jobs, Cluster(("gpu",), np.array([total]), gpus_per_node), rates)


def job_log_workload(trace: str | os.PathLike, vc_config: str | os.PathLike | VcConfig, *,
                     window: tuple | None = None, lucid_data: str | os.PathLike | None = None,
                     seed: int = 0, vc_scale: float = 1.0, profiling_nodes: int = 0) -> Workload:
    """A Helios / Philly job log's GPU jobs in the VCs of ``vc_config`` (submitted within ``window``:
    :func:`~simulator.readers.helios_logs.read_job_log`) on those VCs' nodes, each job's work its run
    time in seconds (:class:`~simulator.rates.RunTimeRates`); with ``lucid_data`` (a folder holding
    Lucid's ``single_data.csv`` and ``colocate_info.csv``) each job's profiled workload is drawn by
    ``seed`` and jobs may share GPUs at the measured pair speeds (:mod:`simulator.sharing`);
    ``vc_scale``: every VC at that multiple of its nodes (:meth:`VcConfig.scaled`);
    ``profiling_nodes``: that many nodes of the largest VC form an open VC (Lucid's profiling VC,
    :meth:`~simulator.cluster.VirtualClusters.with_profiling`)."""
    config = vc_config if isinstance(vc_config, VcConfig) else read_vc_config(vc_config)
    if vc_scale != 1.0:
        config = config.scaled(vc_scale)
    jobs = Jobs.from_job_log(read_job_log(trace, window=window, vcs=config.names))
    cluster = Cluster.of_vcs(config)
    if profiling_nodes:
        cluster = replace(cluster, vcs=cluster.vcs.with_profiling(profiling_nodes))
    if lucid_data is None:
        return Workload(jobs, cluster, RunTimeRates())
    sharing = Sharing.read(lucid_data, jobs.ids, seed)
    return Workload(jobs, cluster, RunTimeRates(), notes=(sharing.describe(),), sharing=sharing)


def simulate_job_log(trace: str | os.PathLike, vc_config: str | os.PathLike | VcConfig, *,
                     policy: str = "fifo-helios", window: tuple | None = None, solver: str = "highs",
                     options: SolveOptions | None = None, slot: float | None = None, preset: str | None = None,
                     progress: Progress | None = None, lucid_data: str | os.PathLike | None = None, seed: int = 0,
                     vc_scale: float = 1.0, profiling_nodes: int = 0, **policy_params) -> SimulationResult:
    """Replay a job log on its virtual clusters (:func:`job_log_workload`) under a slot ``policy``
    (every job on its VC's nodes only, gang-scheduled on its requested GPUs; sharing GPUs where
    ``lucid_data`` gives the jobs' profiles)."""
    workload = job_log_workload(trace, vc_config, window=window, lucid_data=lucid_data, seed=seed, vc_scale=vc_scale,
                                profiling_nodes=profiling_nodes)
    return run(workload, policy=policy, solver=solver, options=options, progress=progress,
               policy_params=policy_params, slot=slot, preset=preset)


def run_slot_view(view: SlotView, policy: str, solver: str, options: SolveOptions | None, slot: float | None,
                  overhead: OverheadModel | None = None, progress: Progress | None = None,
                  notes: list[str] | None = None, executor=None, preset: str | None = None,
                  **policy_params) -> SimulationResult:
    """``policy`` on the slot clock's ``view``, slots of ``slot`` seconds (None: the ``preset``'s,
    default the policy's system's); ``notes`` go to the summary's notes."""
    pol = make_slot_policy(policy, solver, options, **policy_params)
    name = preset or pol.preset
    length = get_preset(name).slot if slot is None else slot
    config = SlotConfig(slot=length, overhead=overhead, preset=name, grid=get_preset(name).grid)
    result = Engine(view, pol, config, executor=executor).run(progress)
    result.summary["notes"] = [*(notes or []), *result.summary["notes"]]
    return result


__all__ = ["EXAMPLE", "GPU_TYPES", "POLLUX_CLUSTER", "default_solver", "example_workload", "find_applications",
           "gpu_type_of", "job_log_workload", "pollux_workload", "run", "run_slot_view", "simulate",
           "simulate_deadlines", "simulate_job_log", "simulate_pollux"]
