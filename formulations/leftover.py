"""Leftover GPUs of one slot handed to jobs by marginal return (ElasticFlow's last planning step,
this project's rule; the published one is described below). Arrays only."""

from __future__ import annotations

import heapq

import numpy as np

from .problem import ProblemError


def distribute_leftover(gpus: np.ndarray, free: int, gpu_counts: np.ndarray, throughput: np.ndarray,
                        eligible: np.ndarray | None = None) -> np.ndarray:
    """Hand ``free`` leftover GPUs of one slot to jobs by marginal return.

    Each job's upgrade is its current size -> the next allowed size (from 0: the smallest
    allowed); its return is ΔT/Δn, throughput gained per added GPU. Repeatedly apply the
    eligible upgrade with the largest return among those with ΔT > 0 and Δn <= what is
    free (ties: lower job index); stop when none fits or none gains. A job whose next
    size gains nothing is not upgraded further (sizes beyond it are not considered).

    The published ``allocate_free_gpus`` differs: it ranks a job's upgrade by the change
    in the job's planned GPU-seconds over its whole remaining plan (re-planned by the
    greedy with the next size fixed in the current slot) per added GPU, in decreasing
    order as written (``sort(..., reverse=True)``), with jobs holding no GPU now ranked
    above all others; it upgrades the first job whose next size fits, re-ranks all, and
    repeats while GPUs are left, with no requirement that throughput rise.
    """
    cur = np.asarray(gpus, dtype=np.int64).copy()
    n = np.asarray(gpu_counts, dtype=np.int64)
    T = np.asarray(throughput, dtype=float)
    J, S = T.shape
    if cur.shape != (J,) or n.shape != (S,):
        raise ProblemError(f"distribute_leftover: gpus {cur.shape}, gpu_counts {n.shape}, throughput {T.shape}")
    allowed = np.isfinite(T) & (np.nan_to_num(T, nan=0.0) > 0)
    rate = np.where(allowed, np.nan_to_num(T, nan=0.0), 0.0)
    ok = np.ones(J, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool).reshape(J)
    pos = np.searchsorted(n, cur)
    at = np.clip(pos, 0, S - 1)
    if ((cur != 0) & ~((n[at] == cur) & allowed[np.arange(J), at])).any() or (cur < 0).any():
        raise ProblemError("distribute_leftover: every current size must be 0 or an allowed size")
    free = int(free)
    nxt = [np.flatnonzero(allowed[j]).tolist() for j in range(J)]
    heap = []

    def push(j: int) -> None:
        """Queue job j's next upgrade (the allowed size after its current one)."""
        sizes = nxt[j]
        now_rate = 0.0
        while sizes and n[sizes[0]] <= cur[j]:
            now_rate = rate[j, sizes.pop(0)]
        if sizes and rate[j, sizes[0]] > now_rate:
            dn = int(n[sizes[0]] - cur[j])
            heapq.heappush(heap, (-(rate[j, sizes[0]] - now_rate) / dn, j, dn))

    for j in np.flatnonzero(ok).tolist():
        push(j)
    while heap and free > 0:
        _, j, dn = heapq.heappop(heap)
        if dn > free:
            continue  # free only shrinks: this upgrade never fits again
        cur[j] += dn
        free -= dn
        push(j)
    return cur
