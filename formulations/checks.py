"""Invariants every allocation must satisfy (used by tests and by users).

Base constraints of Gavel's programs: ``x >= 0``; per type ``sum_c s_c x_cj <= W_j``;
per job ``sum_{c ∋ i} sum_j x_cj <= 1`` (alone and in pairs); gang sizes ``s_c <= W_j``
wherever ``x_cj > 0``; ``x_ij = 0`` where ``T_ij = 0`` and ``pair_x_pj = 0`` where both
co-located rates are 0. For an LP policy whose backend returned row duals,
:func:`certificate_gap` is the primal-dual gap of the last LP it solved.
"""

from __future__ import annotations

import numpy as np

from optim import lp_certificate

from .problem import Allocation

#: relative primal-dual gap above which an LP allocation is reported as not optimal
CERTIFICATE_TOLERANCE = 1e-4


def certificate_gap(allocation: Allocation) -> float | None:
    """Relative primal-dual gap of the allocation's last LP (None: no LP, no duals, approximate
    duals from a first-order solver, or a feasibility program: with a constant objective every
    feasible point is optimal, and an interior-point solver's duals there are noise of the
    order of its tolerance, of either sign)."""
    program, result = allocation.program, allocation.result
    if program is None or result is None or result.row_duals is None or result.x is None or result.first_order:
        return None
    if not program.c.any():
        return None
    if program.is_mip or program.log_terms is not None or program.hyperbolic is not None:
        return None
    return lp_certificate(program, result.x, result.row_duals).gap


def _cell_violations(allocation: Allocation, x: np.ndarray, runnable: np.ndarray, scale: np.ndarray,
                     label, tol: float) -> list[str]:
    p = allocation.problem
    out = []
    neg = np.argwhere(x < -tol)
    if neg.size:
        c, j = neg[0]
        out.append(f"{label(c)}: negative allocation {x[c, j]:.3g} on {p.worker_types[j]}")
    bad = np.argwhere(~runnable & (np.abs(x) > tol))
    if bad.size:
        c, j = bad[0]
        out.append(f"{label(c)}: allocated {x[c, j]:.3g} on {p.worker_types[j]} where it cannot run")
    gang = np.argwhere((scale[:, None] > p.capacities[None, :]) & (x > tol))
    if gang.size:
        c, j = gang[0]
        out.append(f"{label(c)}: needs {scale[c]} GPUs but {p.worker_types[j]} has {p.capacities[j]:g}")
    return out


def allocation_violations(allocation: Allocation, tol: float = 1e-6) -> list[str]:
    """Human-readable violations of the base constraints and the LP certificate (empty = valid)."""
    p, x = allocation.problem, allocation.x
    if x.shape != (p.num_jobs, p.num_types):
        return [f"allocation has shape {x.shape}, expected ({p.num_jobs}, {p.num_types})"]
    pairs = p.job_pairs()
    pair_x = np.zeros((len(pairs), p.num_types)) if allocation.pair_x is None else allocation.pair_x
    if pair_x.shape != (len(pairs), p.num_types):
        return [f"pair allocation has shape {pair_x.shape}, expected ({len(pairs)}, {p.num_types})"]
    if not (np.isfinite(x).all() and np.isfinite(pair_x).all()):
        return ["allocation has non-finite entries"]
    out = _cell_violations(allocation, x, p.throughputs > 0, p.scale_factors, p.describe_job, tol)
    out += _cell_violations(
        allocation, pair_x, pairs.rates.sum(axis=2) > 0, p.scale_factors[pairs.first],
        lambda q: f"pair of {p.describe_job(pairs.first[q])} and {p.describe_job(pairs.second[q])}", tol)
    used = allocation.gpus_used()
    for j in np.flatnonzero(used > p.capacities * (1 + tol) + tol):
        out.append(f"{p.worker_types[j]}: {used[j]:.6g} GPUs allocated, capacity {p.capacities[j]:g}")
    per_job = allocation.time_fractions()
    for i in np.flatnonzero(per_job > 1 + tol)[:5]:
        out.append(f"{p.describe_job(i)}: time fractions sum to {per_job[i]:.6g} > 1")
    gap = certificate_gap(allocation)
    if gap is not None and gap > CERTIFICATE_TOLERANCE:
        out.append(f"LP optimality certificate: primal-dual gap {gap:.2e} > {CERTIFICATE_TOLERANCE:g}")
    return out
