"""``simulate_deadlines(...)``: one call from a deadline trace, a cluster spec and iteration tables
to a :class:`DeadlineResult`."""

from __future__ import annotations

import os
from pathlib import Path

from allocators.deadline import DEADLINE_POLICIES, make_deadline_policy
from allocators.registry import POLICIES, UnknownPolicyError
from optim import SolveOptions

from .deadline_engine import DeadlineConfig, DeadlineEngine, Progress
from .deadline_metrics import DeadlineResult
from .deadline_traces import DeadlineTrace, read_deadline_trace
from .deadline_workload import DeadlineWorkload
from .iteration_tables import IterationTable, read_throughput_dir
from .node_cluster import NodeCluster, read_cluster_spec
from .overheads import OverheadModel

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
    slot: float = 60.0,
    gpu_type: str | None = None,
    overhead: OverheadModel | None = None,
    progress: Progress | None = None,
    round_config=None,
    executor=None,
    **policy_params,
):
    """Replay ``trace`` on ``cluster`` under ``policy``. ``gpu_type`` selects ElasticFlow's
    hand-set GPU caps (default: from the table directory's name); ``overhead`` None = the
    published model for the cluster size, :meth:`OverheadModel.none` = no overhead.

    A round policy (Gavel's, Shockwave's) runs the same workload on the round engine
    (:func:`simulator.workloads.as_round_inputs`; ``round_config``: its
    :class:`~simulator.engine.SimulationConfig`, GPUs per server from the cluster) and returns a
    :class:`~simulator.metrics.SimulationResult`. ``executor`` runs each interval's leases
    (default: simulated)."""
    table = throughputs if isinstance(throughputs, IterationTable) else read_throughput_dir(throughputs)
    if gpu_type is None:
        gpu_type = gpu_type_of(table.directory)
    elif gpu_type not in GPU_TYPES:
        raise ValueError(f"gpu type {gpu_type!r}: expected one of {', '.join(GPU_TYPES)}")
    spec = cluster if isinstance(cluster, NodeCluster) else read_cluster_spec(cluster)
    jobs = trace if isinstance(trace, DeadlineTrace) else read_deadline_trace(trace)
    workload = DeadlineWorkload.build(jobs, spec, table, gpu_type)
    if policy in POLICIES:
        from dataclasses import replace

        from .engine import SimulationConfig
        from .simulate import simulate
        from .workloads import as_round_inputs

        rtrace, rcluster, rtable, per_server = as_round_inputs(workload)
        config = replace(round_config or SimulationConfig(), gpus_per_server=per_server)
        result = simulate(rtrace, policy=policy, solver=solver, cluster=rcluster, throughputs=rtable, config=config,
                          options=options, progress=progress, policy_params=policy_params, executor=executor)
        result.summary["notes"].insert(0, f"{jobs.source} on the round engine: {rcluster} in servers of "
                                          f"{per_server}, each job on its requested GPUs, deadlines from the trace")
        return result
    if policy not in DEADLINE_POLICIES:
        raise UnknownPolicyError(f"unknown policy {policy!r}; known: "
                                 f"{', '.join(sorted({*POLICIES, *DEADLINE_POLICIES}))}")
    return run_deadline_workload(workload, policy, solver, options, slot, overhead, progress, executor=executor,
                                 **policy_params)


def run_deadline_workload(workload: DeadlineWorkload, policy: str, solver: str, options: SolveOptions | None,
                          slot: float, overhead: OverheadModel | None = None, progress: Progress | None = None,
                          notes: list[str] | None = None, executor=None, **policy_params) -> DeadlineResult:
    """``policy`` on ``workload`` on the slotted engine; ``notes`` go to the summary's notes."""
    pol = make_deadline_policy(policy, solver, options, **policy_params)
    result = DeadlineEngine(workload, pol, DeadlineConfig(slot=slot, overhead=overhead), executor).run(progress)
    result.summary["notes"] = [*(notes or []), *result.summary["notes"]]
    return result


__all__ = ["GPU_TYPES", "gpu_type_of", "simulate_deadlines"]
