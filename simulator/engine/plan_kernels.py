"""The node-plan checks of :mod:`simulator.engine.node_plans` as one compiled pass.

A plan is checked at every decision, and a plan of a few hundred entries made the checks' many
small array operations (their per-call cost, not their size) a quarter of a Lucid run; one compiled
call replaces them. :func:`plan_fault` applies the rules in the order the error messages are
chosen (:func:`~simulator.engine.node_plans.checked_node_plan` raises them). Compiled on first use
and cached on disk (numba ``cache=True``); imported on the first node plan, not with the engine
(importing numba takes about 0.5 s, and scipy with it).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: what :func:`plan_fault` found: no fault, an entry out of range, two entries of one job on one
#: node, a job not active, a guest not on an equal own entry of its host, a sharing plan that is not
#: pairs, a pair of unmeasured speeds, a node over its GPUs, an entry outside its job's VC
OK, RANGE, TWICE, INACTIVE, NOT_ON_HOST, NOT_PAIRS, UNMEASURED, NODE_OVER, OUTSIDE_VC = range(9)
_PENDING, _RUNNING = 1, 2


@njit(cache=True)
def _sorted_has(ordered: np.ndarray, value: int) -> bool:
    at = np.searchsorted(ordered, value)
    return at < ordered.size and ordered[at] == value


@njit(cache=True)
def plan_fault(jobs, nodes, gpus, host, state, job_vc, node_vc, vc_open, per_node, profile, speed):
    """(fault, where) of the first rule a node plan breaks (:data:`OK`: none). Entries
    ``jobs``/``nodes``/``gpus``/``host`` (``host`` empty: no sharing; entries of 0 GPUs are ignored
    after the range check); ``state`` per job; ``job_vc`` per job (empty: no VCs), ``node_vc`` per
    node, ``vc_open`` per VC (empty: none open); ``profile`` per job and ``speed`` (P, P) the
    measured pair speeds (empty: none). ``where``: the entry at fault (an entry of a guest for the
    pair rules), the node for :data:`NODE_OVER`."""
    J, num_nodes, E = state.size, node_vc.size, jobs.size
    shared = host.size > 0
    for e in range(E):
        if gpus[e] < 0 or jobs[e] < 0 or jobs[e] >= J or nodes[e] < 0 or nodes[e] >= num_nodes or \
                (shared and (host[e] < -1 or host[e] >= J)):
            return RANGE, e
    keys = jobs * num_nodes + nodes
    order = np.argsort(keys)
    last = -1
    for i in range(E):
        e = order[i]
        if gpus[e] > 0:
            if keys[e] == last:
                return TWICE, e
            last = keys[e]
    for e in range(E):
        if gpus[e] > 0 and state[jobs[e]] != _PENDING and state[jobs[e]] != _RUNNING:
            return INACTIVE, e
    guests = 0
    if shared:
        for e in range(E):
            if gpus[e] > 0 and host[e] >= 0:
                guests += 1
    if guests:
        if speed.size == 0:
            return UNMEASURED, -1
        own_keys = np.empty(E - guests, np.int64)
        own_gpus = np.empty(E - guests, np.int64)
        own_jobs = np.empty(E - guests, np.int64)
        pairs = np.empty(guests, np.int64)
        at_pair = np.empty(guests, np.int64)
        o = g = 0
        for e in range(E):
            if gpus[e] <= 0:
                continue
            if host[e] < 0:
                own_keys[o], own_gpus[o], own_jobs[o] = keys[e], gpus[e], jobs[e]
                o += 1
            else:
                pairs[g], at_pair[g] = jobs[e] * J + host[e], e
                g += 1
        own_keys, own_gpus, own_jobs = own_keys[:o], own_gpus[:o], own_jobs[:o]
        by_key = np.argsort(own_keys)
        own_keys, own_gpus = own_keys[by_key], own_gpus[by_key]
        for i in range(g):
            e = at_pair[i]
            want = host[e] * num_nodes + nodes[e]
            at = np.searchsorted(own_keys, want)
            if at >= o or own_keys[at] != want or own_gpus[at] != gpus[e] or host[e] == jobs[e]:
                return NOT_ON_HOST, e
        by_pair = np.argsort(pairs)
        distinct = np.empty(g, np.int64)
        first = np.empty(g, np.int64)
        n = 0
        for i in range(g):
            if n == 0 or pairs[by_pair[i]] != distinct[n - 1]:
                distinct[n], first[n] = pairs[by_pair[i]], at_pair[by_pair[i]]
                n += 1
        distinct, first = distinct[:n], first[:n]
        guest_jobs, host_jobs = distinct // J, distinct % J
        own_jobs = np.sort(own_jobs)
        hosts_sorted = np.sort(host_jobs)
        for i in range(n):
            if (i and guest_jobs[i] == guest_jobs[i - 1]) or (i and hosts_sorted[i] == hosts_sorted[i - 1]) or \
                    _sorted_has(own_jobs, guest_jobs[i]) or _sorted_has(guest_jobs, host_jobs[i]):
                return NOT_PAIRS, first[i]
        for i in range(n):
            a, b = profile[guest_jobs[i]], profile[host_jobs[i]]
            if np.isnan(speed[a, b]) or np.isnan(speed[b, a]):
                return UNMEASURED, first[i]
    load = np.zeros(num_nodes, np.int64)
    for e in range(E):
        if gpus[e] > 0 and not (shared and host[e] >= 0):
            load[nodes[e]] += gpus[e]
    for node in range(num_nodes):
        if load[node] > per_node:
            return NODE_OVER, node
    if job_vc.size:
        for e in range(E):
            k = node_vc[nodes[e]]
            if gpus[e] > 0 and k != job_vc[jobs[e]] and not (vc_open.size and vc_open[k]):
                return OUTSIDE_VC, e
    return OK, -1


__all__ = ["plan_fault"]
