"""Pollux's goodput model of a job: a fitted model of step time, the statistical efficiency of
the batch size, and the batch size that maximizes their product.

On N nodes and R replicas, with per-GPU (micro-)batch m and s extra accumulation micro-steps
(global batch M = R·m·(s + 1)):

- compute of one micro-step ``T_c = α_c + β_c·m``;
- synchronization ``T_n = α_n + β_n·max(R − 2, 1e-8)`` across nodes (N > 1),
  ``α_r + β_r·max(R − 2, 1e-8)`` within one node (N = 1 < R), ~0 on one GPU;
- a step overlaps the last micro-step's compute with synchronization:
  ``T = s·T_c + (T_c^γ + T_n^γ)^(1/γ)``, 1 ≤ γ ≤ 10;
- goodput, in progress (iterations at the initial batch M0) per second, is ``gain(M) / T`` with
  ``gain(M) = (var + sqr) / (var / (M / M0) + sqr)`` (:func:`simulator.applications.gain`).

:func:`fit_perf_params` fits (α_c, β_c, α_n, β_n, α_r, β_r, γ) to measured (compute, step) times
as the published agent does; :func:`optimize` picks the batch (m, s) of best goodput for a
placement; :func:`batch_config` is the rule for a fixed global batch.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from simulator.applications import gain

_TINY = 1e-8
#: candidate global batch sizes :func:`optimize` tries, geometrically spaced
CANDIDATES = 50
INITIAL = (0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001)


class PerfParams(NamedTuple):
    """The step-time model's parameters (s, s per sample, s, s per replica, s, s per replica, —)."""

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float


def _network(p, nodes, replicas):
    x = np.maximum(np.asarray(replicas, dtype=float) - 2, _TINY)
    alpha = np.where(nodes > 1, p[2], np.where(replicas > 1, p[4], _TINY))
    beta = np.where(nodes > 1, p[3], np.where(replicas > 1, p[5], _TINY))
    return alpha, beta, x


def step_seconds(p: PerfParams, nodes, replicas, atomic, accum) -> np.ndarray:
    """The model's seconds per optimizer step (see the module docstring), vectorized."""
    nodes, replicas = np.asarray(nodes), np.asarray(replicas)
    compute = p[0] + p[1] * np.asarray(atomic, dtype=float)
    alpha, beta, x = _network(p, nodes, replicas)
    network = alpha + beta * x
    g = p[6]
    sync = np.exp(np.logaddexp(g * np.log(compute), g * np.log(network)) / g)
    return accum * compute + sync


def fit_perf_params(nodes, replicas, atomic, compute_time, step_time) -> PerfParams:
    """Least squares on log times (RMS error of compute plus of step time), with the published
    priors: ``1e-3 (γ − 1)² + 1e-2 ((β_n / α_n)² + (β_r / α_r)²)``; parameters the points cannot
    identify are pinned (one batch seen: α_c = mean compute / 2; no multi-node points: α_n, β_n;
    no single-node multi-GPU points: α_r, β_r; no point beyond 2 replicas: β_n, β_r), and without
    multi-node points the network is assumed at least 10% slower across nodes than within one."""
    nodes, replicas = np.asarray(nodes, dtype=float), np.asarray(replicas, dtype=float)
    atomic = np.asarray(atomic, dtype=float)
    log_c, log_t = np.log(np.asarray(compute_time, dtype=float)), np.log(np.asarray(step_time, dtype=float))
    start = np.array(INITIAL)
    lo = np.array([_TINY] * 6 + [1.0])
    hi = np.array([np.inf] * 6 + [10.0])
    pinned = np.zeros(7, dtype=bool)
    if np.unique(atomic).size == 1:
        start[0], pinned[0] = np.mean(np.exp(log_c)) / 2, True
    multi_node = (nodes > 1).any()
    if not multi_node:
        start[[2, 3]], pinned[[2, 3]] = _TINY, True
    if not ((nodes == 1) & (replicas > 1)).any():
        start[[4, 5]], pinned[[4, 5]] = _TINY, True
    if not (replicas > 2).any():
        start[[3, 5]], pinned[[3, 5]] = _TINY, True
    lo[pinned], hi[pinned] = start[pinned], start[pinned]
    from scipy.optimize import Bounds, minimize  # imported here: 0.18 s that only Pollux runs need

    data = (nodes, replicas, atomic, log_c, log_t)
    with _blas().limit(limits=1, user_api="blas"):
        theta = minimize(fit_loss, start, args=data, jac=True, method="L-BFGS-B",
                         bounds=Bounds(lo, hi, keep_feasible=True)).x
    theta[pinned] = start[pinned]
    if not multi_node:
        theta[2] = max(theta[2], 1.1 * theta[4])
        theta[3] = max(theta[3], 1.1 * theta[5])
    return PerfParams(*map(float, theta))


@functools.cache
def _blas():
    """The process's BLAS libraries. A fit runs on one BLAS thread: L-BFGS-B's products of 7
    parameters gain nothing from more, and OpenBLAS's idle threads spin, taking the CPU from the
    simulation (twice its CPU time) and from any run beside it."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def fit_loss(theta, nodes, replicas, atomic, log_c, log_t):
    """The fitted loss of :func:`fit_perf_params` at ``theta`` and its gradient."""
    inter, intra = nodes > 1, (nodes == 1) & (replicas > 1)
    x = np.maximum(replicas - 2, _TINY)
    a_c, b_c, a_n, b_n, a_r, b_r, g = theta
    c = a_c + b_c * atomic
    n = np.where(inter, a_n + b_n * x, np.where(intra, a_r + b_r * x, _TINY + _TINY * x))
    lc, ln = np.log(c), np.log(n)
    log_s = np.logaddexp(g * lc, g * ln)
    wc, wn = np.exp(g * lc - log_s), np.exp(g * ln - log_s)
    e1, e2 = lc - log_c, log_s / g - log_t
    r1, r2 = np.sqrt(np.mean(e1 ** 2)), np.sqrt(np.mean(e2 ** 2))
    value = r1 + r2 + 1e-3 * (g - 1) ** 2 + 1e-2 * ((b_n / a_n) ** 2 + (b_r / a_r) ** 2)
    k1 = e1 / (len(e1) * max(r1, 1e-300))
    k2 = e2 / (len(e2) * max(r2, 1e-300))
    dc = k1 / c + k2 * wc / c
    dn = k2 * wn / n
    grad = np.array([
        dc.sum(), (dc * atomic).sum(),
        dn[inter].sum() - 2e-2 * b_n ** 2 / a_n ** 3, (dn * x)[inter].sum() + 2e-2 * b_n / a_n ** 2,
        dn[intra].sum() - 2e-2 * b_r ** 2 / a_r ** 3, (dn * x)[intra].sum() + 2e-2 * b_r / a_r ** 2,
        (k2 * (-log_s / g ** 2 + (wc * lc + wn * ln) / g)).sum() + 2e-3 * (g - 1),
    ])
    return value, grad


def batch_config(batch, replicas, init_batch: int, max_local: int, max_batch: int):
    """Per-GPU batch m and extra micro-steps s for global batch ``batch`` on ``replicas`` GPUs:
    ``s = ⌈(batch / R) / max_local⌉ − 1`` (at least 1 on one GPU beyond M0, so the gradient noise
    can be measured), ``m = ⌈(batch / R) / (s + 1)⌉``, m capped so that R·m·(s + 1) ≤ max_batch."""
    replicas = np.asarray(replicas)
    local = np.asarray(batch, dtype=float) / replicas
    accum = np.ceil(local / max_local - _TINY) - 1
    accum = np.where((replicas == 1) & (local > init_batch + _TINY), np.maximum(accum, 1), accum)
    atomic = np.ceil(local / (accum + 1) - _TINY)
    atomic = np.minimum(atomic, np.floor(max_batch / (replicas * (accum + 1))))
    return atomic.astype(np.int64), accum.astype(np.int64)


def optimize(p: PerfParams, sqr: float, var: float, init_batch: int, nodes, replicas, max_batch: int,
             min_local: int, max_local: int, accumulation: bool = True):
    """(goodput, m, s) of the best of :data:`CANDIDATES` global batches spaced geometrically from
    max(M0, min_local·R) to ``max_batch``, per (nodes, replicas) pair (arrays of one shape); a
    candidate whose per-GPU batch leaves [min_local, max_local] has goodput 0; ties go to the
    smaller batch."""
    nodes = np.atleast_1d(np.asarray(nodes))
    replicas = np.atleast_1d(np.asarray(replicas))
    shape = np.broadcast(nodes, replicas).shape
    n, r = np.broadcast_to(nodes, shape).ravel(), np.broadcast_to(replicas, shape).ravel()
    lo = np.maximum(init_batch, min_local * r).astype(float)
    batch = np.geomspace(lo, np.full(lo.shape, float(max_batch)), CANDIDATES, axis=1)
    local = batch / r[:, None]
    if accumulation:
        accum = np.ceil(local / max_local - _TINY) - 1
        accum = np.where((r[:, None] == 1) & (local > init_batch + _TINY), np.maximum(accum, 1), accum)
    else:
        accum = np.zeros(local.shape)
    atomic = np.ceil(local / (accum + 1) - _TINY)
    realised = r[:, None] * atomic * (accum + 1)
    seconds = step_seconds(p, n[:, None], r[:, None], atomic, accum)
    good = gain(realised / init_batch, sqr, var) / seconds
    good = np.where((atomic >= min_local) & (atomic <= max_local), good, 0.0)
    best = np.argmax(good, axis=1)
    rows = np.arange(best.size)
    return (good[rows, best].reshape(shape), atomic[rows, best].astype(np.int64).reshape(shape),
            accum[rows, best].astype(np.int64).reshape(shape))
