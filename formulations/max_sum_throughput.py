"""Gavel's throughput policies: total (cost-normalized) throughput, optionally with SLOs.

    maximize  sum_i sum_c sum_j E[i, (c, j)] x_cj / cost_j
    s.t.      thr_i(x) >= R_i / SLO_i    for jobs with an SLO (seconds left),   base rows

Over a merged problem (:mod:`formulations.classes`) each class's throughput counts n_c times.
``cost_j`` = the problem's price of type j for the cost-normalized variants (1 when no
prices are given, or for ``max_sum_throughput_perf``). Variants: "perf",
"normalized_by_cost_perf", "normalized_by_cost_perf_SLOs",
"normalized_by_cost_packed_SLOs" (the suffix of Gavel's policy names).

:func:`build_published` is Gavel's own program without SLOs, as its cvxpy code hands it to ECOS
(:mod:`formulations.published`, for ``--gavel-compat``): a column on every (job, type) cell,
which moves the point an interior-point solver returns where jobs tie.
"""

from __future__ import annotations

import numpy as np

from optim import CanonicalModel, Model, Result

from . import combinations, published
from .classes import MergedProblem
from .problem import Allocation, AllocationProblem

VARIANTS: tuple[str, ...] = (
    "perf", "normalized_by_cost_perf", "normalized_by_cost_perf_SLOs", "normalized_by_cost_packed_SLOs",
)


def _check(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"unknown max_sum_throughput variant {variant!r}; use one of {VARIANTS}")


def uses_prices(variant: str) -> bool:
    _check(variant)
    return "by_cost" in variant


def costs(problem: AllocationProblem, variant: str) -> np.ndarray:
    """``cost_j`` per worker type: the problem's prices for the cost-normalized variants, else 1."""
    return problem.prices if uses_prices(variant) and problem.prices is not None else np.ones(problem.num_types)


def uses_slos(variant: str) -> bool:
    _check(variant)
    return variant.endswith("_SLOs")


def slo_rates(problem: AllocationProblem) -> tuple[np.ndarray, np.ndarray]:
    """Jobs with an SLO and the rate each needs: ``R_i / SLO_i`` steps/s."""
    if problem.slo_remaining is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    jobs = np.flatnonzero(np.isfinite(problem.slo_remaining))
    R = problem.require("remaining_steps", "max_sum_throughput with SLOs")
    return jobs, R[jobs] / problem.slo_remaining[jobs]


def build(problem: AllocationProblem, variant: str = "perf", *, with_slos: bool = True) -> Model | CanonicalModel:
    """The throughput LP (see module docstring); ``with_slos=False`` drops the SLO rows. Over single
    jobs without SLO rows it is assembled as arrays (:func:`~formulations.combinations.singles_program`)."""
    jobs, needed = slo_rates(problem) if uses_slos(variant) and with_slos else (np.zeros(0, dtype=np.int64), None)
    name = f"max_sum_throughput[{variant}]"
    per_job = problem.counts if isinstance(problem, MergedProblem) else None  # a class's throughput, n_c times
    if "packed" not in variant and not jobs.size:
        per_cell = problem.throughputs if per_job is None else problem.throughputs * per_job[:, None]
        return combinations.singles_program(problem, name, objective=per_cell / costs(problem, variant))
    combos = combinations.packed(problem) if "packed" in variant else combinations.singles(problem)
    model = Model(name)
    x = combos.add_allocation(model)
    per_cell = combos.throughput_rows(per_job).column_sums().reshape(x.shape)
    model.set_objective({x: per_cell / costs(problem, variant)}, sense="max")
    if jobs.size:
        model.add_rows("slo", {x: combos.throughput_map()[jobs]}, lo=needed, keys=problem.job_ids[jobs])
    return model


def decode(problem: AllocationProblem, model: Model, result: Result, policy: str) -> Allocation:
    """The allocation; its objective is the (cost-normalized) total throughput."""
    return combinations.decode(problem, model, result, policy, objective=result.objective)


def build_published(problem: AllocationProblem, variant: str = "perf") -> CanonicalModel:
    """Gavel's throughput program without SLOs ("perf", "normalized_by_cost_perf") in the published
    layout (:func:`~formulations.published.layout`): ``x`` and the base rows; maximize
    ``sum T_ij / cost_j x_ij``. Read it back with :func:`decode_published`."""
    if variant not in ("perf", "normalized_by_cost_perf"):
        raise ValueError(f"the published layout covers max_sum_throughput[perf|normalized_by_cost_perf], "
                         f"not [{variant}]")
    jobs, types = published.published_order(problem)
    return published.layout(problem, f"max_sum_throughput[{variant}]", (jobs, types),
                            objective=problem.throughputs[np.ix_(jobs, types)] / costs(problem, variant)[types])


def decode_published(problem: AllocationProblem, result: Result, policy: str, variant: str = "perf") -> Allocation:
    """The allocation of a solved :func:`build_published` (clipped to [0, 1], nothing where a job
    cannot run); its objective is the program's at that allocation."""
    x = published.published_allocation(problem, result)
    return Allocation(problem, x, policy, objective=float((problem.throughputs * x / costs(problem, variant)).sum()),
                      result=result,
                      notes=[*result.notes, published.NOTE])
