"""Gavel's max-min fairness (least attained service), agnostic and heterogeneity-aware.

    maximize z   s.t.  z <= sum_j c_ij x_ij          for every job i
                       sum_i s_i x_ij <= W_j         for every worker type j
                       sum_j x_ij <= 1,  x >= 0,  x_ij = 0 where T_ij = 0

with ``c_ij = T_ij s_i / (w_i prop_i)`` and ``prop_i = sum_j T_ij W_j / sum_k W_k``.
Variant "perf" (``max_min_fairness_perf``) uses the measured throughputs; variant
"agnostic" (``max_min_fairness``) replaces every runnable T_ij by 1, so ``c_ij = s_i /
w_i``: every type the job can run on counts the same (a type where it cannot run stays
excluded). ``z`` is the smallest normalized share.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp

from optim import Model, Result

from .problem import Allocation, AllocationProblem

Variant = Literal["perf", "agnostic"]
VARIANTS: tuple[str, ...] = ("perf", "agnostic")


def effective_throughputs(problem: AllocationProblem, variant: Variant) -> np.ndarray:
    """The throughput matrix the variant optimizes over."""
    if variant == "agnostic":
        return (problem.throughputs > 0).astype(float)
    if variant == "perf":
        return problem.throughputs
    raise ValueError(f"unknown max-min fairness variant {variant!r}; use one of {VARIANTS}")


def normalized_coefficients(problem: AllocationProblem, variant: Variant) -> np.ndarray:
    """``c_ij = T_ij s_i / (w_i prop_i)``: the per-job objective rows."""
    T = effective_throughputs(problem, variant)
    W = problem.capacities
    prop = (T @ W) / W.sum()
    return T * (problem.scale_factors / (problem.weights * prop))[:, None]


def base_constraints(model: Model, problem: AllocationProblem, x) -> None:
    """Capacity rows ``sum_i s_i x_ij <= W_j`` and time rows ``sum_j x_ij <= 1``."""
    m, n = problem.num_jobs, problem.num_types
    cells = np.arange(m * n)
    capacity = sp.csr_matrix(
        (np.repeat(problem.scale_factors.astype(float), n), (np.tile(np.arange(n), m), cells)), shape=(n, m * n)
    )
    model.add_rows("capacity", {x: capacity}, hi=problem.capacities)
    per_job = sp.csr_matrix((np.ones(m * n), (np.repeat(np.arange(m), n), cells)), shape=(m, m * n))
    model.add_rows("time_budget", {x: per_job}, hi=1.0)


def build(problem: AllocationProblem, variant: Variant = "perf") -> Model:
    """The max-min fairness LP (see module docstring)."""
    m, n = problem.num_jobs, problem.num_types
    coef = normalized_coefficients(problem, variant)
    model = Model(f"max_min_fairness[{variant}]")
    x = model.add_variables("x", (m, n), lb=0.0, ub=np.where(problem.throughputs > 0, 1.0, 0.0))
    z = model.add_variables("z", 1, lb=-np.inf)
    base_constraints(model, problem, x)
    cells = np.arange(m * n)
    rows = np.repeat(np.arange(m), n)
    level = sp.csr_matrix((coef.reshape(-1), (rows, cells)), shape=(m, m * n))
    model.add_rows("fairness", {z: np.ones((m, 1)), x: -level}, hi=0.0)
    model.set_objective({z: 1.0}, sense="max")
    return model


def decode(problem: AllocationProblem, result: Result, policy: str) -> Allocation:
    """The allocation in ``result`` (tiny negatives from the solver clipped to 0)."""
    x = np.where(problem.throughputs > 0, np.clip(result.value("x"), 0.0, None), 0.0)
    return Allocation(problem, x, policy, objective=float(result.value("z")[0]), result=result,
                      notes=list(result.notes))
