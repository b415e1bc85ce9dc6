"""Gavel's max-min fairness (least attained service): agnostic, heterogeneity-aware, packed.

    maximize z   s.t.  z <= k_i thr_i(x)   for every job i,   base rows (see combinations)

with ``k_i = s_i / (w_i prop_i)``, ``prop_i = sum_j T_ij W_j / sum_k W_k`` and
``thr_i(x)`` job i's throughput under x. Variant "perf" (``max_min_fairness_perf``)
uses the measured throughputs; "agnostic" (``max_min_fairness``) replaces every runnable
T_ij by 1 (so ``k_i thr_i = s_i / w_i sum_j x_ij``); "packed"
(``max_min_fairness_packed``) adds the problem's co-located pairs as combinations, with
each member's co-located rate counting toward its throughput. ``z`` is the smallest
normalized share.

:func:`build_published` is Gavel's own program as its cvxpy code hands it to ECOS
(:mod:`formulations.published`), for ``--gavel-compat``. It differs from :func:`build` beyond the
layout: a column on every (job, type) cell, also where the job cannot run (Gavel's table gives
ResNet-50 at batch size 128 on 2 or more k80s a rate of 0), and the agnostic variant counts a
rate of 1 there. Those cells add nothing to the level, but they widen the optimal face, and so
they move the point an interior-point solver returns.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from optim import Basis, CanonicalModel, CsrArrays, Model, Result
from optim.basis import BASIC, LOWER, UPPER
from optim.level_balance import balance
from optim.sparse import scipy_sparse as sp

from . import combinations, published
from .combinations import Combinations
from .problem import Allocation, AllocationProblem

Variant = Literal["agnostic", "perf", "packed"]
VARIANTS: tuple[str, ...] = ("agnostic", "perf", "packed")


def effective_throughputs(problem: AllocationProblem, variant: Variant) -> np.ndarray:
    """The isolated throughput matrix the variant optimizes over."""
    if variant == "agnostic":
        return (problem.throughputs > 0).astype(float)
    if variant in ("perf", "packed"):
        return problem.throughputs
    raise ValueError(f"unknown max-min fairness variant {variant!r}; use one of {VARIANTS}")


def share_scale(problem: AllocationProblem, throughputs: np.ndarray) -> np.ndarray:
    """``k_i = s_i / (w_i prop_i)``: turns job i's throughput into its normalized share."""
    W = problem.capacities
    prop = (throughputs @ W) / W.sum()
    return problem.scale_factors / (problem.weights * prop)


def normalized_coefficients(problem: AllocationProblem, variant: Variant) -> np.ndarray:
    """``c_ij = k_i T_ij``: the per-job objective rows of the unpacked variants."""
    T = effective_throughputs(problem, variant)
    return T * share_scale(problem, T)[:, None]


def space(problem: AllocationProblem, variant: Variant) -> Combinations:
    """The combinations the variant allocates over."""
    T = effective_throughputs(problem, variant)
    return combinations.packed(problem) if variant == "packed" else combinations.singles(problem, T)


def add_max_min(model: Model, x, share: sp.csr_matrix | CsrArrays, keys: np.ndarray | None = None) -> None:
    """``maximize z  s.t.  z <= (share vec(x))_i`` for every row i of ``share`` (row keys ``keys``)."""
    z = model.add_variables("z", 1, lb=-np.inf)
    model.add_rows("fairness", {z: np.ones((share.shape[0], 1)), x: CsrArrays.of(share, -1.0)}, hi=0.0, keys=keys)
    model.set_objective({z: 1.0}, sense="max")


def build(problem: AllocationProblem, variant: Variant = "perf") -> Model | CanonicalModel:
    """The max-min fairness LP (see module docstring); over single jobs assembled as arrays
    (:func:`~formulations.combinations.singles_program`)."""
    if variant != "packed":
        return combinations.singles_program(problem, f"max_min_fairness[{variant}]",
                                            level=normalized_coefficients(problem, variant))
    combos = space(problem, variant)
    model = Model(f"max_min_fairness[{variant}]")
    x = combos.add_allocation(model)
    k = share_scale(problem, effective_throughputs(problem, variant))
    add_max_min(model, x, combos.throughput_rows(k), problem.job_ids)
    return model


def start_basis(problem: AllocationProblem, model: Model, variant: Variant = "perf") -> Basis | None:
    """A primal feasible basis of :func:`build`'s LP ("perf" or "agnostic") for its simplex method.

    No job passes ``Z = min_i max_j c_ij`` (``c = k T`` on runnable cells): the level of the job
    whose best rate is lowest, all its time at that rate. Every job runs alone on one type where
    its rate reaches Z, first the one of largest ``c_ij W_j``; then the types are balanced for Z
    (:func:`optim.level_balance.balance`). The level is the largest these choices reach, ``z = min(min_j W_j /
    sum_{i on j} s_i / c_ij, Z)`` (weighted by a merged problem's class sizes). Basic: z, each
    job's chosen cell, the time budgets' slacks and the capacities' but the one that sets z (else
    the worst job's time budget); every fairness row and every other cell at its bound. None where
    some job can run nowhere.

    Where the balanced choice fits every type, z = Z and the basis is optimal: the only nonzero
    duals are the worst job's (fairness row 1, time budget its best rate Z), which price every
    other cell at most 0. On Gavel's instances (64-100,000 jobs) primal simplex then pivots 0-1
    times (5-12 without the balance, 50-100 from the slack basis)."""
    coef = normalized_coefficients(problem, variant)
    m, n = coef.shape
    canon = model.canonical()
    x, rows = model.blocks["x"], canon.row_blocks
    runs = (canon.col_hi[x.columns].reshape(m, n) > 0) & (coef > 0)  # the model's runnable cells
    top = np.where(runs, coef, 0.0).max(axis=1, initial=0.0)
    if m == 0 or top.min() <= 0:
        return None
    worst = int(top.argmin())
    allowed = runs & (coef >= top[worst])  # cells where a job's rate reaches Z
    W = problem.capacities.astype(float)
    best = np.where(allowed, coef * W, -1.0).argmax(axis=1)
    gpus = problem.scale_factors * combinations.multiplicity(problem)
    with np.errstate(divide="ignore"):
        per_level = np.where(allowed, gpus[:, None] / coef, np.inf)
    best, load = balance(per_level, allowed, W, best, top[worst])
    by_type = np.divide(W, load, out=np.full(n, np.inf), where=load > 0)
    columns = np.full(canon.num_vars, LOWER, dtype=np.int8)
    columns[x.start + np.arange(m) * n + best] = BASIC
    columns[model.blocks["z"].start] = BASIC
    status = np.full(canon.num_rows, BASIC, dtype=np.int8)
    status[rows["fairness"]] = UPPER
    j = int(by_type.argmin())
    status[rows["capacity"].start + j if by_type[j] <= top[worst] else rows["time_budget"].start + worst] = UPPER
    return Basis(columns, status)


def decode(problem: AllocationProblem, model: Model, result: Result, policy: str) -> Allocation:
    """The allocation in ``result``; its objective is the max-min level z."""
    return combinations.decode(problem, model, result, policy, objective=float(result.value("z")[0]))


def published_coefficients(rates: np.ndarray, scale: np.ndarray, weights: np.ndarray,
                           capacities: np.ndarray) -> np.ndarray:
    """Gavel's ``c_ij = T_ij s_i / (w_i prop_i)`` computed as its code does, operation for
    operation (in the published order), so that every coefficient is the same to the last bit:
    ``prop_i = sum_j T_ij x_j`` with the proportional shares ``x_j = (W_j / m) / sum_k (W_k / m)``."""
    m, n = rates.shape
    share = capacities / m  # every row of the published (m, n) array; its rows' sums are equal
    share = share / np.sum(share[None, :], axis=1)[0]
    proportional = np.sum(np.multiply(rates, share[None, :]), axis=1).reshape((m, 1))
    per_job = np.multiply((1.0 / weights).reshape((m, 1)), 1.0 / proportional.reshape((m, 1)))
    return np.multiply(rates * per_job.reshape((m, 1)), np.repeat(scale.astype(float)[:, None], n, axis=1))


def build_published(problem: AllocationProblem, variant: Variant = "perf") -> CanonicalModel:
    """Gavel's max-min program ("perf" or "agnostic") in the published layout
    (:func:`~formulations.published.layout`; the agnostic program's rate is 1 on every type):
    columns ``t`` (minus the level), then ``x``; rows ``-t - c_i . x_i <= 0``
    (:func:`published_coefficients`), then the base rows; minimize ``t``. Read it back with
    :func:`decode_published`."""
    if variant not in ("perf", "agnostic"):
        raise ValueError(f"the published layout covers max_min_fairness[perf|agnostic], not [{variant}]")
    jobs, types = published.published_order(problem)
    rates = problem.throughputs[np.ix_(jobs, types)] if variant == "perf" else np.ones((jobs.size, types.size))
    c = published_coefficients(rates, problem.scale_factors[jobs], problem.weights[jobs], problem.capacities[types])
    return published.layout(problem, f"max_min_fairness[{variant}]", (jobs, types), epigraph=c)


def decode_published(problem: AllocationProblem, result: Result, policy: str) -> Allocation:
    """The allocation of a solved :func:`build_published` (clipped to [0, 1], nothing where a job
    cannot run: :func:`~formulations.published.published_allocation`); its objective is the level."""
    return Allocation(problem, published.published_allocation(problem, result), policy,
                      objective=-float(result.value("t")[0]), result=result, notes=[*result.notes, published.NOTE])
