"""What ``schedopt check`` verifies of one allocation, as plain functions (no hypothesis here).

Every check returns None when the property holds and a :class:`Violation` (what failed, and the
numbers that show it) otherwise. ``thr_i(x)`` is job i's effective throughput (steps/s, its
co-located rates included) and ``w_i`` its weight.

- :func:`invariants`: finite shares, ``0 <= x <= 1``, capacity per type, time budget per job, gang
  sizes, nothing where a job cannot run, and the LP's primal-dual certificate
  (:func:`formulations.allocation_violations`).
- :func:`sharing_incentive`: ``thr_i(x) >= thr_i(e)`` for the equal split ``e``: every job gets
  ``w_i / sum_k w_k`` of every type it can run on (``1/n`` each when the weights are equal), in
  gangs of its scale factor, its time capped at 1.
- :func:`pareto_efficiency`: no feasible allocation raises some job's throughput without lowering
  another's: the LP ``max sum_i g_i  s.t.  thr_i(y) / r_i = thr_i(x) / r_i + g_i, g >= 0`` over the
  same shares ``y`` (``r_i``: job i's best isolated rate) has optimum 0.
- :func:`envy_freeness`: no job prefers another's shares, scaled to its own weight, to its own:
  ``T_i . x_i >= f_ik T_i . x_k`` with ``f_ik = (w_i / w_k) / max(1, t_k w_i / w_k)`` (``t_k``: k's time
  fraction; a job cannot run more than all the time), for jobs of equal scale factor (gangs of other
  sizes are not comparable); defined on allocations without co-location.
- :func:`strategy_proofness`: a job that reports its throughputs times ``factors`` does not gain:
  its true throughput under the allocation of the misreported problem is at most ``thr_i(x)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from formulations import Allocation, AllocationProblem, JobPairs, allocation_violations, combinations
from formulations.rates import runnable
from optim import Model, solve

#: slack every comparison allows: relative, and absolute as a fraction of the job's best isolated
#: rate (interior-point shares are exact to about 1e-6 relative once decoded, and leave ~1e-10
#: steps/s on shares that are 0 at the optimum)
RTOL, ATOL = 1e-5, 1e-6
#: relative slack of strategy-proofness: the two allocations come from two solves, each exact
#: only to its solver's tolerance (LP bisections, e.g. finish-time fairness, stop at ~1e-5)
SP_RTOL = 1e-4


@dataclass
class Violation:
    """A property that failed: one line saying which and why, and the numbers behind it."""

    message: str
    details: dict = field(default_factory=dict)


def invariants(allocation: Allocation) -> Violation | None:
    x = allocation.x
    problems = allocation_violations(allocation)
    if np.isfinite(x).all() and (x > 1 + 1e-6).any():
        i, j = np.argwhere(x > 1 + 1e-6)[0]
        problems.insert(0, f"{allocation.problem.describe_job(i)}: share {x[i, j]:.6g} > 1 on "
                           f"{allocation.problem.worker_types[j]}")
    if allocation.objective is not None and not np.isfinite(allocation.objective):
        problems.append(f"objective is {allocation.objective}")
    return Violation("; ".join(problems[:3]), {"violations": problems}) if problems else None


def equal_split(problem: AllocationProblem) -> np.ndarray:
    """The weighted equal split ``e`` of :func:`sharing_incentive`."""
    share = problem.weights / problem.weights.sum()
    e = np.where(runnable(problem), problem.capacities[None, :] * share[:, None] / problem.scale_factors[:, None], 0.0)
    return e / np.maximum(e.sum(axis=1, keepdims=True), 1.0)


def sharing_incentive(allocation: Allocation) -> Violation | None:
    p = allocation.problem
    got = allocation.effective_throughput()
    split = (p.throughputs * equal_split(p)).sum(axis=1)
    short = got < split * (1 - RTOL) - ATOL * p.throughputs.max(axis=1)
    if not short.any():
        return None
    i = int(np.argmax(np.where(short, (split - got) / np.maximum(split, 1e-300), -np.inf)))
    return Violation(f"{p.describe_job(i)} gets {got[i]:.6g} steps/s, less than {split[i]:.6g} under the equal split",
                     {"job": int(p.job_ids[i]), "throughput": got.tolist(), "equal_split_throughput": split.tolist()})


def pareto_efficiency(allocation: Allocation) -> Violation | None:
    p = allocation.problem
    space = combinations.packed(p) if allocation.pair_x is not None else combinations.singles(p)
    best = p.throughputs.max(axis=1)
    model = Model("pareto_improvement")
    y = space.add_allocation(model)
    gain = model.add_variables("gain", p.num_jobs, lb=0.0)
    current = allocation.effective_throughput() / best
    eye = np.eye(p.num_jobs)
    model.add_rows("improvement", {y: space.throughput_map(1.0 / best), gain: -eye}, lo=current, hi=current)
    model.set_objective({gain: 1.0}, sense="max")
    result = solve(model, "highs")
    if not result.has_solution:  # the current throughputs are out of reach: the allocation was infeasible
        return Violation(f"no feasible allocation reaches the policy's throughputs ({result.status})")
    g = result.value("gain")
    if g.max(initial=0.0) <= 1e-5:
        return None
    i = int(np.argmax(g))
    better = space.throughput_map() @ result.value("x").reshape(-1)
    return Violation(f"{p.describe_job(i)} can gain {g[i] * best[i]:.6g} steps/s ({g[i]:.2%} of its best rate) "
                     f"with no job losing", {"job": int(p.job_ids[i]), "throughput": (current * best).tolist(),
                                              "improved_throughput": np.asarray(better).tolist()})


def envy_freeness(allocation: Allocation) -> Violation | None:
    p = allocation.problem
    if allocation.pair_x is not None and (allocation.pair_x > 1e-9).any():
        return None
    T, x, w, s = p.throughputs, allocation.x, p.weights, p.scale_factors
    ratio = w[:, None] / w[None, :]  # ratio[i, k]: i's entitlement over k's
    time = x.sum(axis=1)
    factor = ratio / np.maximum(1.0, time[None, :] * ratio)  # k's shares scaled to i's weight, at most all the time
    value = (T @ x.T) * factor  # value[i, k]: steps/s job i makes on k's shares, so scaled
    own = np.diag(value).copy()
    envy = (value > own[:, None] * (1 + RTOL) + ATOL * T.max(axis=1)[:, None]) & (s[:, None] == s[None, :])
    np.fill_diagonal(envy, False)
    if not envy.any():
        return None
    i, k = np.argwhere(envy)[0]
    return Violation(f"{p.describe_job(i)} envies {p.describe_job(k)}: {value[i, k]:.6g} steps/s on its shares "
                     f"(scaled by the weights {w[i]:g} / {w[k]:g}) against {own[i]:.6g} on its own",
                     {"job": int(p.job_ids[i]), "envied": int(p.job_ids[k])})


def misreported(problem: AllocationProblem, job: int, factors: np.ndarray) -> AllocationProblem:
    """``problem`` with job ``job``'s throughputs (alone and in its pairs) times ``factors``."""
    T = problem.throughputs.copy()
    T[job] *= factors
    pairs = problem.pairs
    if pairs is not None and len(pairs):
        rates = pairs.rates.copy()
        rates[pairs.first == job, :, 0] *= factors
        rates[pairs.second == job, :, 1] *= factors
        pairs = JobPairs(pairs.first, pairs.second, rates)
    return dataclasses.replace(problem, throughputs=T, pairs=pairs)


def strategy_proofness(allocate: Callable[[AllocationProblem], Allocation], allocation: Allocation, job: int,
                       factors: np.ndarray) -> Violation | None:
    """``allocate``: a fresh policy's allocation of a problem (the misreported one)."""
    p = allocation.problem
    lie = allocate(misreported(p, job, factors))
    truly = Allocation(p, lie.x, allocation.policy, pair_x=lie.pair_x).effective_throughput()[job]
    honest = allocation.effective_throughput()[job]
    if truly <= honest * (1 + SP_RTOL) + ATOL * p.throughputs[job].max():
        return None
    return Violation(f"{p.describe_job(job)} gains by reporting its throughputs times {factors.tolist()}: "
                     f"{truly:.6g} steps/s against {honest:.6g} when honest",
                     {"job": int(p.job_ids[job]), "factors": factors.tolist(), "honest": float(honest),
                      "misreporting": float(truly), "misreported_allocation": lie.x.tolist()})


def replay(recorded: dict, allocation: Allocation, make: Callable[..., object]) -> Violation | None:
    """The check a counterexample document names (``recorded["check"]``) run again on
    ``allocation`` of its problem (``schedopt solve --problem``); ``make(solver=None)``: a fresh
    policy (on ``solver``, default the one that gave ``allocation``)."""
    check, problem = recorded["check"], allocation.problem
    if check == "invariants":
        return invariants(allocation)
    if check == "determinism":
        again = make().allocate(problem)
        same = np.array_equal(again.x, allocation.x)
        return None if same else Violation("a second fresh policy object gave other shares")
    if check == "solver_agreement":
        values = {spec: make(spec).allocate(problem).objective for spec in recorded.get("objectives", {})}
        spread = max(values.values()) - min(values.values()) if values else 0.0
        if spread <= 1e-5 * max(1.0, *(abs(v) for v in values.values())):
            return None
        return Violation(f"objectives differ by {spread:.3g}: {values}")
    if check == "strategy_proofness":
        job = int(np.flatnonzero(problem.job_ids == recorded["job"])[0])
        return strategy_proofness(lambda p: make().allocate(p), allocation, job,
                                  np.asarray(recorded["factors"], dtype=float))
    if check in PROPERTY_CHECKS:
        return PROPERTY_CHECKS[check](allocation)
    raise ValueError(f"counterexample of an unknown check {check!r}")


#: the fair-division properties by name (``schedopt check --properties``)
PROPERTY_CHECKS = {
    "sharing_incentive": sharing_incentive,
    "pareto_efficiency": pareto_efficiency,
    "envy_freeness": envy_freeness,
    "strategy_proofness": strategy_proofness,
}
