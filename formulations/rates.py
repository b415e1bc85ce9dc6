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


def runnable(problem: AllocationProblem) -> np.ndarray:
    """(m, n): job i can run alone on type j (T_ij > 0 and s_i <= W_j)."""
    return (problem.throughputs > 0) & (problem.scale_factors[:, None] <= problem.capacities[None, :])


def pair_runnable(problem: AllocationProblem, which: np.ndarray | None = None) -> np.ndarray:
    """(P, n) for the pairs ``which`` (default all): the pair can share type j (some
    co-located rate > 0 and s_p <= W_j)."""
    pairs = problem.job_pairs()
    which = np.arange(len(pairs)) if which is None else np.asarray(which, dtype=np.int64)
    fits = problem.scale_factors[pairs.first[which]][:, None] <= problem.capacities[None, :]
    return (pairs.rates[which].sum(axis=2) > 0) & fits


def equal_shares(capacities: np.ndarray, scale: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """``x_cj = (W_j / C) / s_c`` where combination c runs on type j, each row then scaled
    down to sum <= 1. Feasible: ``sum_c s_c x_cj <= sum_c W_j / C = W_j``, and the row
    scaling only lowers entries. C = 0 gives an empty matrix."""
    C = scale.shape[0]
    x = np.where(runs, capacities[None, :] / max(C, 1) / scale[:, None], 0.0)
    return x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)


def isolated_shares(problem: AllocationProblem) -> np.ndarray:
    """Gavel's isolated allocation: equal shares of every type among the m jobs."""
    return equal_shares(problem.capacities, problem.scale_factors, runnable(problem))
