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

_PENDING, _RUNNING = int(JobState.PENDING), int(JobState.RUNNING)


def checked_node_plan(raw, view: JobsView, node_vc: np.ndarray, name: str, job_ids: np.ndarray,
                      vc_names: tuple[str, ...] | None) -> NodePlan:
    """``raw`` (a policy's node plan) as a checked :class:`NodePlan` without zero entries; ``node_vc``:
    each node's VC (checked when ``view.vc`` is given)."""
    J, num_nodes = len(view.state), node_vc.size
    if isinstance(raw, NodePlan):
        jobs, nodes, gpus = (np.asarray(a, dtype=np.int64).ravel() for a in (raw.jobs, raw.nodes, raw.gpus))
        host = None if raw.host is None else np.asarray(raw.host, dtype=np.int64).ravel()
        if not (jobs.size == nodes.size == gpus.size) or (gpus < 0).any() or \
                ((jobs < 0) | (jobs >= J) | (nodes < 0) | (nodes >= num_nodes)).any() or \
                (host is not None and (host.size != jobs.size or ((host < -1) | (host >= J)).any())):
            raise SimulationError(f"{name} returned a node plan with entries out of range: expected equal-length "
                                  f"jobs in 0..{J - 1}, nodes in 0..{num_nodes - 1}, GPUs >= 0 (hosts in -1..{J - 1})")
        keep = gpus > 0
        shared = host is not None and (host[keep] >= 0).any()
        plan = NodePlan(jobs[keep], nodes[keep], gpus[keep], host[keep] if shared else None)
        keys = plan.jobs * num_nodes + plan.nodes
        if np.unique(keys).size != keys.size:
            raise SimulationError(f"{name} returned a node plan with two entries for one job on one node")
    else:
        dense = np.asarray(raw, dtype=np.int64)
        if dense.shape != (J, num_nodes) or (dense < 0).any():
            raise SimulationError(f"{name} returned a plan of shape {dense.shape}; expected {(J, num_nodes)} "
                                  f"GPU counts >= 0 (jobs x nodes)")
        plan = NodePlan.of_dense(dense)
    state = view.state[plan.jobs]
    active = (state == _PENDING) | (state == _RUNNING)
    if not active.all():
        j = int(plan.jobs[~active][0])
        raise SimulationError(f"{name} gave GPUs to job {job_ids[j]}, which is not active "
                              f"({JobState(view.state[j]).name})")
    if plan.host is not None:
        _check_sharing(plan, view, name, job_ids)
    own = plan.gpus if plan.host is None else np.where(plan.host < 0, plan.gpus, 0)
    load = np.bincount(plan.nodes, weights=own, minlength=num_nodes)
    over = np.flatnonzero(load > view.gpus_per_node)
    if over.size:
        raise SimulationError(f"{name} put {int(load[over[0]])} GPUs on node {int(over[0])} of {view.gpus_per_node}")
    if view.vc is not None:
        outside = node_vc[plan.nodes] != view.vc[plan.jobs]
        if view.vc_open is not None:
            outside &= ~view.vc_open[node_vc[plan.nodes]]
        outside = np.flatnonzero(outside)
        if outside.size:
            e = outside[0]
            j, node = int(plan.jobs[e]), int(plan.nodes[e])
            raise SimulationError(f"{name} put job {job_ids[j]} of VC {vc_names[view.vc[j]]} on node {node} of VC "
                                  f"{vc_names[node_vc[node]]}: a job runs only on its VC's nodes")
    return plan


def _check_sharing(plan: NodePlan, view: JobsView, name: str, job_ids: np.ndarray) -> None:
    """Guests (``host >= 0``) sit on a host's entry of equal GPUs on the same node; a job is a guest
    on all its entries or none, of one host, which is no guest and has no other guest; and the
    pair's speeds were measured."""
    sharing = view.sharing
    guest = plan.host >= 0
    if sharing is None:
        j = int(plan.jobs[guest][0])
        raise SimulationError(f"{name} put job {job_ids[j]} on another job's GPUs, but the workload has no measured "
                              f"pair speeds to share GPUs at (give the jobs' profiles: --lucid-data)")
    width = int(max(plan.nodes.max(initial=0), 0)) + 1
    own_keys = plan.jobs[~guest] * width + plan.nodes[~guest]
    order = np.argsort(own_keys)
    keys, own_gpus = np.append(own_keys[order], -1), np.append(plan.gpus[~guest][order], 0)  # -1: no such entry
    want = plan.host[guest] * width + plan.nodes[guest]
    at = np.minimum(np.searchsorted(keys[:-1], want), keys.size - 2) if keys.size > 1 else np.full(want.size, -1)
    held = keys[at] == want
    gpus = np.where(held, own_gpus[at], 0)
    bad = np.flatnonzero(~held | (gpus != plan.gpus[guest]) | (plan.host[guest] == plan.jobs[guest]))
    if bad.size:
        e = bad[0]
        j, n, g, h = (int(plan.jobs[guest][e]), int(plan.nodes[guest][e]), int(plan.gpus[guest][e]),
                      int(plan.host[guest][e]))
        raise SimulationError(f"{name} put job {job_ids[j]} on {g} GPU(s) of job {job_ids[h]} on node {n}, "
                              f"which holds {int(gpus[e])} there as its own: a guest shares a host's GPUs "
                              f"one to one")
    J = len(view.state)
    keys = np.unique(plan.jobs[guest] * J + plan.host[guest])
    guests, hosts = keys // J, keys % J
    is_guest, is_own = np.zeros(J, dtype=bool), np.zeros(J, dtype=bool)
    is_guest[guests], is_own[plan.jobs[~guest]] = True, True
    if np.count_nonzero(is_guest) != keys.size or np.bincount(hosts, minlength=J).max() > 1 or \
            is_own[guests].any() or is_guest[hosts].any():
        raise SimulationError(f"{name} returned a sharing plan that is not pairs: each guest job shares one host's "
                              f"GPUs on all its entries, and each host has one guest")
    mine, theirs = sharing.pair(guests, hosts)
    unmeasured = np.flatnonzero(np.isnan(mine) | np.isnan(theirs))
    if unmeasured.size:
        a, b = guests[unmeasured[0]], hosts[unmeasured[0]]
        raise SimulationError(f"{name} put jobs {job_ids[a]} and {job_ids[b]} on the same GPUs, a pair of workloads "
                              f"whose speeds together were not measured")


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


__all__ = ["changed_jobs", "check_vc_counts", "checked_node_plan", "empty_plan"]
