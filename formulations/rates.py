"""Throughput views the agnostic (heterogeneity-blind) variants optimize over."""

from __future__ import annotations

import numpy as np

from .problem import AllocationProblem

#: the worker type whose rate the agnostic FTF and makespan variants assume everywhere
REFERENCE_TYPE = "v100"


def unit_rates(problem: AllocationProblem) -> np.ndarray:
    """1 wherever the job can run: every type counts the same (agnostic max-min fairness)."""
    return (problem.throughputs > 0).astype(float)


def reference_rates(problem: AllocationProblem) -> np.ndarray:
    """Each job's rate on the reference type (v100; its fastest type where the cluster has
    no v100 or the job cannot run there), on every type where it can run."""
    T = problem.throughputs
    ref = T.max(axis=1)
    if REFERENCE_TYPE in problem.worker_types:
        on_ref = T[:, problem.worker_types.index(REFERENCE_TYPE)]
        ref = np.where(on_ref > 0, on_ref, ref)
    return np.where(T > 0, ref[:, None], 0.0)


def isolated_shares(problem: AllocationProblem) -> np.ndarray:
    """Gavel's isolated allocation: ``x_ij = (W_j / m) / s_i`` on the types where job i can
    run (T_ij > 0, s_i <= W_j), each row scaled down to sum <= 1. Feasible: type j carries
    at most ``sum_i s_i (W_j / m) / s_i = W_j``."""
    m = problem.num_jobs
    runnable = (problem.throughputs > 0) & (problem.scale_factors[:, None] <= problem.capacities[None, :])
    x = np.where(runnable, (problem.capacities[None, :] / m) / problem.scale_factors[:, None], 0.0)
    return x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)
