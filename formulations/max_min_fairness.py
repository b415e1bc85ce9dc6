"""Gavel's max-min fairness (least attained service): agnostic, heterogeneity-aware, packed.

    maximize z   s.t.  z <= k_i thr_i(x)   for every job i,   base rows (see combinations)

with ``k_i = s_i / (w_i prop_i)``, ``prop_i = sum_j T_ij W_j / sum_k W_k`` and
``thr_i(x)`` job i's throughput under x. Variant "perf" (``max_min_fairness_perf``)
uses the measured throughputs; "agnostic" (``max_min_fairness``) replaces every runnable
T_ij by 1 (so ``k_i thr_i = s_i / w_i sum_j x_ij``); "packed"
(``max_min_fairness_packed``) adds the problem's co-located pairs as combinations, with
each member's co-located rate counting toward its throughput. ``z`` is the smallest
normalized share.

The published program has a column for every (job, type) cell, also where the job cannot run
(rate 0: Gavel's table gives ResNet-50 at batch size 128 on 2 or more k80s a rate of 0; or more
GPUs than the type has); ours fixes those at 0 unless built with ``every_cell``. Where the rate
is 0 they add nothing to z but widen the optimal face, so they move the point an interior-point
solver returns (``--gavel-compat``). The published agnostic program also counts a rate of 1 on
them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import numpy as np

from optim import CsrArrays, Model, Result
from optim.sparse import scipy_sparse as sp

from . import combinations
from .combinations import Combinations
from .problem import Allocation, AllocationProblem

Variant = Literal["agnostic", "perf", "packed"]
VARIANTS: tuple[str, ...] = ("agnostic", "perf", "packed")


def effective_throughputs(problem: AllocationProblem, variant: Variant, every_cell: bool = False) -> np.ndarray:
    """The isolated throughput matrix the variant optimizes over (``every_cell``: the published
    agnostic program's 1 on every type, also where the job cannot run)."""
    if variant == "agnostic":
        return np.ones(problem.throughputs.shape) if every_cell else (problem.throughputs > 0).astype(float)
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


def space(problem: AllocationProblem, variant: Variant, every_cell: bool = False) -> Combinations:
    """The combinations the variant allocates over (``every_cell``: each may take every type)."""
    if variant == "packed":
        combos = combinations.packed(problem)
    else:
        combos = combinations.singles(problem, effective_throughputs(problem, variant, every_cell))
    return replace(combos, runnable=np.ones_like(combos.runnable)) if every_cell else combos


def add_max_min(model: Model, x, share: sp.csr_matrix | CsrArrays, keys: np.ndarray | None = None) -> None:
    """``maximize z  s.t.  z <= (share vec(x))_i`` for every row i of ``share`` (row keys ``keys``)."""
    z = model.add_variables("z", 1, lb=-np.inf)
    model.add_rows("fairness", {z: np.ones((share.shape[0], 1)), x: CsrArrays.of(share, -1.0)}, hi=0.0, keys=keys)
    model.set_objective({z: 1.0}, sense="max")


def build(problem: AllocationProblem, variant: Variant = "perf", *, every_cell: bool = False) -> Model:
    """The max-min fairness LP (see module docstring); ``every_cell``: with the published program's
    columns where a job cannot run (:func:`~formulations.combinations.only_runnable` takes their
    shares back)."""
    combos = space(problem, variant, every_cell)
    model = Model(f"max_min_fairness[{variant}]")
    x = combos.add_allocation(model)
    k = share_scale(problem, effective_throughputs(problem, variant, every_cell))
    add_max_min(model, x, combos.throughput_rows(k), problem.job_ids)
    return model


def decode(problem: AllocationProblem, model: Model, result: Result, policy: str) -> Allocation:
    """The allocation in ``result``; its objective is the max-min level z."""
    return combinations.decode(problem, model, result, policy, objective=float(result.value("z")[0]))
