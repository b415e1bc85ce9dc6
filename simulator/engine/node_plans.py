"""The slot clock's checks of a plan against the cluster's nodes and virtual clusters.

A policy's plan is checked before it runs (errors name the policy, the job and what it broke):

- a node plan (:class:`~allocators.slot_plans.NodePlan`, or the dense (J, nodes) array it stands
  for): GPUs >= 0, one entry per job and node, active jobs only, no node over its GPUs (a guest
  sharing a host's GPUs takes none of its own: pairs only, measured pair speeds), and on a
  cluster with VCs every job only on its VC's nodes (or an open VC's);
- a GPU-count plan on a cluster with VCs: no VC over its GPUs (the engine then places each job
  inside its VC, :func:`simulator.buddy.place_in_vcs`).
"""

from __future__ import annotations

import numpy as np

from allocators.slot_plans import JobState, JobsView, NodePlan
from simulator.engine.clock import SimulationError

_INTS, _FLAGS, _SPEEDS = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool), np.zeros((0, 0))


def checked_node_plan(raw, view: JobsView, node_vc: np.ndarray, name: str, job_ids: np.ndarray,
                      vc_names: tuple[str, ...] | None) -> NodePlan:
    """``raw`` (a policy's node plan) as a checked :class:`NodePlan` without zero entries; ``node_vc``:
    each node's VC (checked when ``view.vc`` is given). The rules (module doc) run in one compiled
    pass (:func:`~simulator.engine.plan_kernels.plan_fault`); the first one broken is raised."""
    from simulator.engine import plan_kernels as kernels  # numba, on the first node plan (its module doc)

    J, num_nodes = len(view.state), node_vc.size
    if isinstance(raw, NodePlan):
        jobs, nodes, gpus = (np.asarray(a, dtype=np.int64).ravel() for a in (raw.jobs, raw.nodes, raw.gpus))
        host = _INTS if raw.host is None else np.asarray(raw.host, dtype=np.int64).ravel()
        if not (jobs.size == nodes.size == gpus.size) or (raw.host is not None and host.size != jobs.size):
            _raise(kernels.RANGE, -1, name, J, num_nodes)
    else:
        dense = np.asarray(raw, dtype=np.int64)
        if dense.shape != (J, num_nodes) or (dense < 0).any():
            raise SimulationError(f"{name} returned a plan of shape {dense.shape}; expected {(J, num_nodes)} "
                                  f"GPU counts >= 0 (jobs x nodes)")
        plan = NodePlan.of_dense(dense)
        jobs, nodes, gpus = plan.jobs, plan.nodes, plan.gpus
        host = _INTS
    sharing = view.sharing
    fault, at = kernels.plan_fault(jobs, nodes, gpus, host, view.state, _INTS if view.vc is None else view.vc, node_vc,
                           _FLAGS if view.vc_open is None else view.vc_open, view.gpus_per_node,
                           _INTS if sharing is None else sharing.profile, _SPEEDS if sharing is None else sharing.speed)
    if fault != kernels.OK:
        _raise(fault, at, name, J, num_nodes, (jobs, nodes, gpus, host), view, node_vc, job_ids, vc_names)
    keep = gpus > 0
    if not keep.all():
        jobs, nodes, gpus, host = jobs[keep], nodes[keep], gpus[keep], host[keep] if host.size else host
    return NodePlan(jobs, nodes, gpus, host if host.size and (host >= 0).any() else None)


def _raise(fault: int, at: int, name: str, J: int, num_nodes: int, entries=None, view: JobsView | None = None,
           node_vc: np.ndarray | None = None, job_ids: np.ndarray | None = None,
           vc_names: tuple[str, ...] | None = None) -> None:
    """The error of the rule ``fault`` broken at entry (or node) ``at``."""
    from simulator.engine import plan_kernels as kernels

    if fault == kernels.RANGE:
        raise SimulationError(f"{name} returned a node plan with entries out of range: expected equal-length "
                              f"jobs in 0..{J - 1}, nodes in 0..{num_nodes - 1}, GPUs >= 0 (hosts in -1..{J - 1})")
    if fault == kernels.TWICE:
        raise SimulationError(f"{name} returned a node plan with two entries for one job on one node")
    jobs, nodes, gpus, host = entries
    guest = (gpus > 0) & (host >= 0) if host.size else np.zeros(gpus.size, dtype=bool)
    own = (gpus > 0) & ~guest
    if fault == kernels.INACTIVE:
        j = int(jobs[at])
        raise SimulationError(f"{name} gave GPUs to job {job_ids[j]}, which is not active "
                              f"({JobState(view.state[j]).name})")
    if fault == kernels.UNMEASURED and view.sharing is None:
        j = int(jobs[guest][0])
        raise SimulationError(f"{name} put job {job_ids[j]} on another job's GPUs, but the workload has no measured "
                              f"pair speeds to share GPUs at (give the jobs' profiles: --lucid-data)")
    if fault == kernels.NOT_ON_HOST:
        j, n, g, h = int(jobs[at]), int(nodes[at]), int(gpus[at]), int(host[at])
        held = int(gpus[own & (jobs == h) & (nodes == n)].sum())
        raise SimulationError(f"{name} put job {job_ids[j]} on {g} GPU(s) of job {job_ids[h]} on node {n}, "
                              f"which holds {held} there as its own: a guest shares a host's GPUs one to one")
    if fault == kernels.NOT_PAIRS:
        raise SimulationError(f"{name} returned a sharing plan that is not pairs: each guest job shares one host's "
                              f"GPUs on all its entries, and each host has one guest")
    if fault == kernels.UNMEASURED:
        a, b = int(jobs[at]), int(host[at])
        raise SimulationError(f"{name} put jobs {job_ids[a]} and {job_ids[b]} on the same GPUs, a pair of workloads "
                              f"whose speeds together were not measured")
    if fault == kernels.NODE_OVER:
        load = int(gpus[own & (nodes == at)].sum())
        raise SimulationError(f"{name} put {load} GPUs on node {at} of {view.gpus_per_node}")
    j, node = int(jobs[at]), int(nodes[at])
    raise SimulationError(f"{name} put job {job_ids[j]} of VC {vc_names[view.vc[j]]} on node {node} of VC "
                          f"{vc_names[node_vc[node]]}: a job runs only on its VC's nodes")


def in_sorted(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Whether each value is in the sorted array ``ordered`` (``np.isin`` by binary search: no
    hash table or range table for a few hundred values)."""
    if not ordered.size:
        return np.zeros(values.shape, dtype=bool)
    return ordered[np.minimum(np.searchsorted(ordered, values), ordered.size - 1)] == values


def check_vc_counts(gpus: np.ndarray, view: JobsView, name: str, vc_names: tuple[str, ...]) -> None:
    """A GPU-count plan keeps every VC within its GPUs (nothing to check without VCs)."""
    if view.vc is None:
        return
    held = np.bincount(view.vc, weights=gpus, minlength=len(vc_names)).astype(np.int64)
    over = np.flatnonzero(held > view.vc_gpus())
    if over.size:
        k = int(over[0])
        raise SimulationError(f"{name} allocated {int(held[k])} GPUs in VC {vc_names[k]} of {int(view.vc_gpus()[k])}: "
                              f"a job runs only on its VC's nodes")


def changed_jobs(old: NodePlan, new: NodePlan, num_nodes: int, gpus_per_node: int) -> np.ndarray:
    """Jobs (sorted) whose GPUs per node differ between two plans."""
    def keys(plan: NodePlan) -> np.ndarray:
        return (plan.jobs * num_nodes + plan.nodes) * (gpus_per_node + 1) + plan.gpus

    return np.unique(np.setxor1d(keys(old), keys(new)) // ((gpus_per_node + 1) * num_nodes))


def empty_plan() -> NodePlan:
    none = np.zeros(0, dtype=np.int64)
    return NodePlan(none, none, none)


__all__ = ["changed_jobs", "check_vc_counts", "checked_node_plan", "empty_plan", "in_sorted"]
