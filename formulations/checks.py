"""Invariants every allocation must satisfy (used by tests and by users).

Base constraints of Gavel's programs: ``x >= 0``; per type ``sum_i s_i x_ij <= W_j``;
per job ``sum_j x_ij <= 1``; and ``x_ij = 0`` where ``T_ij = 0``.
"""

from __future__ import annotations

import numpy as np

from .problem import Allocation


def allocation_violations(allocation: Allocation, tol: float = 1e-6) -> list[str]:
    """Human-readable violations of the base constraints (empty list = valid)."""
    p, x = allocation.problem, allocation.x
    out = []
    if x.shape != (p.num_jobs, p.num_types):
        return [f"allocation has shape {x.shape}, expected ({p.num_jobs}, {p.num_types})"]
    if not np.isfinite(x).all():
        out.append("allocation has non-finite entries")
        return out
    neg = np.argwhere(x < -tol)
    if neg.size:
        i, j = neg[0]
        out.append(f"{p.describe_job(i)}: negative allocation {x[i, j]:.3g} on {p.worker_types[j]}")
    used = allocation.gpus_used()
    for j in np.flatnonzero(used > p.capacities * (1 + tol) + tol):
        out.append(f"{p.worker_types[j]}: {used[j]:.6g} GPUs allocated, capacity {p.capacities[j]:g}")
    per_job = x.sum(axis=1)
    for i in np.flatnonzero(per_job > 1 + tol)[:5]:
        out.append(f"{p.describe_job(i)}: time fractions sum to {per_job[i]:.6g} > 1")
    zero = np.argwhere((p.throughputs <= 0) & (np.abs(x) > tol))
    if zero.size:
        i, j = zero[0]
        out.append(f"{p.describe_job(i)}: allocated {x[i, j]:.3g} on {p.worker_types[j]} where it cannot run")
    return out
