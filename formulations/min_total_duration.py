"""Gavel's makespan policy as one LP (POP's rewrite; no bisection).

    maximize u   s.t.  thr_i(x) >= R_i u   for every job i,   base rows

``u = 1 / makespan``: every job finishes its R_i remaining steps within 1/u seconds at
its allocated rate. For conditioning, rows are divided by R_i and u is measured in units
of ``1 / S``, S = the longest time any job needs alone at its best rate (a makespan lower
bound), so the LP's u is O(1) and the makespan is S / u. Variants: "perf" (measured
rates), "agnostic" (the reference-type rate on every type, see :mod:`formulations.rates`),
"packed" (plus co-located pairs).
The allocation's objective is the makespan 1/u in seconds.

The published Gavel policy instead bisects on the makespan T over the feasibility
programs of :func:`build_deadline` (every job done within T, constant objective) and
keeps the solution of the last feasible T; :mod:`allocators.gavel.min_total_duration` does
the same with ``gavel_compat``, over :func:`build_deadline_published`, which lays the
program out as the published code does.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from optim import CanonicalModel, Model, Result

from . import combinations, published
from .combinations import Combinations
from .problem import Allocation, AllocationProblem
from .rates import REFERENCE_TYPE, reference_rates, runnable

Variant = Literal["agnostic", "perf", "packed"]
VARIANTS: tuple[str, ...] = ("agnostic", "perf", "packed")


def rates(problem: AllocationProblem, variant: Variant) -> np.ndarray:
    """(m, n): the rates a single job runs at in the variant, 0 where it cannot run."""
    T = reference_rates(problem) if variant == "agnostic" else problem.throughputs
    return np.where(runnable(problem), T, 0.0)


def space(problem: AllocationProblem, variant: Variant) -> Combinations:
    """The combinations (with the rates) the variant allocates over."""
    if variant == "agnostic":
        return combinations.singles(problem, reference_rates(problem))
    if variant == "perf":
        return combinations.singles(problem)
    if variant == "packed":
        return combinations.packed(problem)
    raise ValueError(f"unknown min_total_duration variant {variant!r}; use one of {VARIANTS}")


def build(problem: AllocationProblem, variant: Variant = "perf", scale: float | None = None
          ) -> Model | CanonicalModel:
    """The makespan LP (see module docstring); ``scale``: S (default ``time_scale(problem,
    variant)``; give the full problem's S when building over a subset of its pairs). Over single
    jobs it is assembled as arrays (:func:`~formulations.combinations.singles_program`)."""
    R = problem.require("remaining_steps", f"min_total_duration[{variant}]")
    S = time_scale(problem, variant) if scale is None else scale
    if variant != "packed":
        T = reference_rates(problem) if variant == "agnostic" else problem.throughputs
        level = np.where(T > 0, T * (S / R)[:, None], 0.0)
        return combinations.singles_program(problem, f"min_total_duration[{variant}]", level=level, finish=True)
    combos = space(problem, variant)
    model = Model(f"min_total_duration[{variant}]")
    x = combos.add_allocation(model)
    u = model.add_variables("u", 1, lb=0.0)
    model.add_rows("finish", {x: combos.throughput_rows(S / R), u: -np.ones((problem.num_jobs, 1))}, lo=0.0,
                   keys=problem.job_ids)
    model.set_objective({u: 1.0}, sense="max")
    return model


def build_deadline(problem: AllocationProblem, variant: Variant, deadline: float) -> Model:
    """Feasibility program: ``thr_i(x) T / R_i >= 1`` for every job (rows of order 1, so
    absolute tolerances stay relative), base rows, constant objective (Gavel's bisection
    step)."""
    R = problem.require("remaining_steps", f"min_total_duration[{variant}]")
    combos = space(problem, variant)
    model = Model(f"min_total_duration[{variant}] within {deadline:.6g} s")
    x = combos.add_allocation(model)
    model.add_rows("finish", {x: combos.throughput_rows(deadline / R)}, lo=1.0)
    model.set_objective({x: 0.0}, sense="max")
    return model


def build_deadline_published(problem: AllocationProblem, variant: Variant, deadline: float) -> CanonicalModel:
    """Gavel's own feasibility program for makespan ``deadline`` ("perf" or "agnostic"),
    laid out as its cvxpy code hands it to the solver, so that an interior-point solver
    that stops inside the feasible set stops at the published point.

    Columns: ``x`` over (jobs by id) x (types by name), column-major; free bounds. Rows, all
    ``<=`` and in this order: ``-x <= 0``; ``sum_i s_i x_ij <= W_j``; ``sum_j x_ij <= 1``;
    ``-sum_j T_ij x_ij <= -R_i / deadline`` (the "agnostic" rate is the v100 rate on
    every type, as published, 0 included; without v100, :func:`reference_rates`). Read it back
    with :func:`~formulations.published.published_allocation`."""
    if variant not in ("perf", "agnostic"):
        raise ValueError(f"the published layout covers min_total_duration[perf|agnostic], not [{variant}]")
    R = problem.require("remaining_steps", f"min_total_duration[{variant}]")
    jobs, types = published.published_order(problem)
    T = problem.throughputs[np.ix_(jobs, types)]
    if variant == "agnostic" and REFERENCE_TYPE in problem.worker_types:
        T = np.repeat(T[:, [sorted(problem.worker_types).index(REFERENCE_TYPE)]], len(types), axis=1)
    elif variant == "agnostic":
        T = reference_rates(problem)[np.ix_(jobs, types)]
    return published.layout(problem, f"min_total_duration[{variant}] within {deadline:.6g} s", (jobs, types),
                            after=-T, after_hi=-R[jobs] / deadline)


def time_scale(problem: AllocationProblem, variant: Variant) -> float:
    """S = max_i R_i / (job i's best rate, alone or in a pair): no allocation finishes sooner."""
    best = (reference_rates(problem) if variant == "agnostic" else problem.throughputs).max(axis=1)
    if variant == "packed" and problem.pairs is not None:
        pairs = problem.pairs
        np.maximum.at(best, pairs.first, pairs.rates[:, :, 0].max(axis=1, initial=0.0))
        np.maximum.at(best, pairs.second, pairs.rates[:, :, 1].max(axis=1, initial=0.0))
    return float((problem.require("remaining_steps", f"min_total_duration[{variant}]") / best).max())


def decode(problem: AllocationProblem, model: Model, result: Result, policy: str, variant: Variant,
           scale: float | None = None) -> Allocation:
    """The allocation; its objective is the makespan S/u (seconds), S as in :func:`build`."""
    u = float(result.value("u")[0])
    S = time_scale(problem, variant) if scale is None else scale
    return combinations.decode(problem, model, result, policy, objective=S / u if u > 0 else np.inf)
