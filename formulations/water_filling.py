"""Gavel's hierarchical max-min fairness ("water filling"), in the lexicographic sense.

Shares are those of :mod:`formulations.max_min_fairness` (variants "agnostic", "perf",
"packed"): ``u_i(x) = k_i thr_i(x)`` with ``k_i = s_i / (w_i prop_i)``. Frozen jobs keep
their level; the others are *active* (the current tier) or not yet served (no rows).
With ``e = SLACK`` (1e-8), repeat until no job is active:

1. level LP: ``L = max z  s.t.  z <= u_i (active),  u_i >= (1-e) level_i (frozen),  base rows``;
2. bottleneck MILP over binaries ``z_i`` (active i): ``max sum_i z_i  s.t.
   u_i >= (1-e) L + delta z_i (active),  u_i >= (1-e) level_i (frozen),  base rows``;
3. freeze the active jobs with ``z_i = 0`` at level ``L``.

The indicator row is linear in ``z`` (no big-M). ``delta = delta_rel * max(L, L0)`` with
``L0`` the first level (> 0), so ``delta = delta_rel * L`` except in the fifo second tier,
whose levels may be 0. Every MILP and frozen row is divided by its reference level, so the
solver sees ``u_i / L - delta_rel z_i >= 1 - e``: ``delta_rel`` (default 1e-4) is
dimensionless and 1e4 times ``e``, which is itself 10 times the feasibility tolerance the
solves get (FEASIBILITY_TOL; at HiGHS 1.15's default MIP tolerance 1e-6 many of these
feasible MILPs are declared infeasible). The slack keeps every MILP strictly feasible (the
level LP's solution, ``z = 0``) instead of on the optimal face; it costs a frozen job at
most ``e`` of its level, and what others gain from that is ``e`` times the rate at which
shares trade (negligible on Gavel's table; up to ~1e-3 relative on random near-degenerate
throughput matrices whose rates trade at ~1e5).

What is exact: ``L`` is the LP optimum, so the first level equals the single max-min LP.
A job with ``z_i = 1`` truly exceeds ``L``, so the frozen set contains every true
bottleneck; and since at the next level ``L2`` all non-bottlenecks sit at ``>= L2``
together, the MILP frees exactly them whenever ``L2 >= L (1 + delta_rel)``. Levels closer
than that may merge (a job frozen up to ``delta_rel`` early). If the MILP frees every
active job or finds no solution (solver trouble), the jobs whose level row has a positive
LP dual are frozen instead: complementary slackness pins them at ``L`` in every optimal
solution, so they are bottlenecks, and the duals sum to 1 so there is one; without duals
all active jobs are frozen. If a later level LP fails, the previous allocation stands.
Notes report each of these.

Entities (optional): ``entities`` labels each job, ``entity_weights`` maps a label to
``W_e`` (default 1). Split "fairness": ``w_i <- W_e w_i / sum_{k in e} w_k``, one tier.
Split "fifo": the oldest job of each entity (largest time since arrival, ties by job id;
job-id order when arrival ages are unknown) gets weight ``W_e`` in tier 1; the entity's
other jobs keep their own weights and are water-filled in tier 2 on the capacity tier 1
leaves (tier-1 levels pinned). Tier-2 jobs have no rows while tier 1 fills.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from optim import (
    Model,
    Result,
    SolveOptions,
    SolverFailedError,
    Status,
    VarBlock,
    solve,
)
from optim.sparse import scipy_sparse as sp

from . import combinations
from .combinations import Combinations
from .max_min_fairness import (
    Variant,
    add_max_min,
    effective_throughputs,
    share_scale,
    space,
)
from .problem import Allocation, AllocationProblem

DELTA_REL = 1e-4
SLACK = 1e-8
FEASIBILITY_TOL = 1e-9
ENTITY_SPLITS: tuple[str, ...] = ("fairness", "fifo")
POLICY_NAMES = {
    "agnostic": "max_min_fairness_water_filling",
    "perf": "max_min_fairness_water_filling_perf",
    "packed": "max_min_fairness_water_filling_packed",
}
SolveFn = Callable[[Model], Result]


def solve_options(options: SolveOptions | None = None) -> SolveOptions:
    """``options`` with the feasibility tolerance FEASIBILITY_TOL unless they set one."""
    options = options or SolveOptions()
    return options if options.feasibility_tol is not None else replace(options, feasibility_tol=FEASIBILITY_TOL)


def job_weights(problem: AllocationProblem, entities: Sequence[Hashable] | None = None,
                entity_weights: Mapping[Hashable, float] | None = None,
                split: str = "fairness") -> tuple[np.ndarray, np.ndarray]:
    """``(w, tier)``: each job's weight after the entity split and its tier (0 or 1)."""
    if split not in ENTITY_SPLITS:
        raise ValueError(f"unknown entity split {split!r}; use one of {', '.join(ENTITY_SPLITS)}")
    m = problem.num_jobs
    if entities is None:
        if entity_weights is not None:
            raise ValueError("entity weights need entities (one entity label per job)")
        return problem.weights.copy(), np.zeros(m, dtype=np.int64)
    labels = list(entities)
    if len(labels) != m:
        raise ValueError(f"entities: expected one label per job ({m}), got {len(labels)}")
    W = dict.fromkeys(labels, 1.0) if entity_weights is None else dict(entity_weights)
    for i, label in enumerate(labels):
        if label not in W:
            raise ValueError(f"{problem.describe_job(i)}: entity {label!r} has no weight")
        if not (np.isfinite(W[label]) and W[label] > 0):
            raise ValueError(f"entity {label!r}: weight must be finite and > 0, got {W[label]}")
    index = {label: k for k, label in enumerate(dict.fromkeys(labels))}
    group = np.array([index[label] for label in labels], dtype=np.int64)
    entity_w = np.array([W[label] for label in labels], dtype=float)
    if split == "fairness":
        total = np.bincount(group, weights=problem.weights)
        return entity_w * problem.weights / total[group], np.zeros(m, dtype=np.int64)
    order = np.lexsort((problem.job_ids, -problem.elapsed()))
    _, first = np.unique(group[order], return_index=True)
    oldest = order[first]
    weights, tier = problem.weights.copy(), np.ones(m, dtype=np.int64)
    weights[oldest], tier[oldest] = entity_w[oldest], 0
    return weights, tier


def share_map(problem: AllocationProblem, variant: Variant,
              weights: np.ndarray | None = None) -> tuple[Combinations, sp.csr_matrix]:
    """The variant's combinations and ``diag(k) E`` (row i: ``u_i`` over ``vec(x)``) under
    job ``weights`` (default: the problem's)."""
    combos = space(problem, variant)
    return combos, combos.throughput_map(_scale(problem, variant, weights))


def normalized_shares(allocation: Allocation, variant: Variant, weights: np.ndarray | None = None) -> np.ndarray:
    """``u_i = k_i thr_i(x)`` of any allocation under job ``weights`` (default: the problem's);
    for a water filling, at least ``1 - SLACK`` of each job's level."""
    problem = allocation.problem
    if variant == "packed":
        thr = allocation.effective_throughput()
    else:
        thr = (effective_throughputs(problem, variant) * allocation.x).sum(axis=1)
    return _scale(problem, variant, weights) * thr


def level_lp(combos: Combinations, share: sp.csr_matrix, active: np.ndarray, levels: np.ndarray,
             floor: float = 1.0, slack: float = SLACK) -> Model:
    """Maximize the smallest share ``z`` of the ``active`` jobs (rows "fairness"); jobs with a
    finite ``levels[i]`` keep ``u_i >= (1 - slack) levels[i]`` (rows "frozen", scaled by
    ``1/max(level, floor)``)."""
    model = Model("water_filling_level")
    x = combos.add_allocation(model)
    add_max_min(model, x, share[active])
    _add_frozen(model, x, share, levels, floor, slack)
    return model


def bottleneck_milp(combos: Combinations, share: sp.csr_matrix, active: np.ndarray, level: float,
                    levels: np.ndarray, floor: float, delta_rel: float = DELTA_REL, slack: float = SLACK) -> Model:
    """Maximize the number of ``active`` jobs that rise together to ``level + delta``
    (binary block ``improves``), every job keeping ``1 - slack`` of its level (the active
    ones ``level``); ``delta = delta_rel * max(level, floor)``."""
    model = Model("water_filling_bottlenecks")
    x = combos.add_allocation(model)
    improves = model.add_variables("improves", active.size, vtype="binary")
    ref = max(level, floor)
    model.add_rows("improve", {x: share[active] / ref, improves: -delta_rel * sp.identity(active.size)},
                   lo=(1 - slack) * level / ref)
    _add_frozen(model, x, share, levels, floor, slack)
    model.set_objective({improves: 1.0}, sense="max")
    return model


@dataclass(frozen=True)
class WaterFilling:
    """A water filling: its allocation (objective: the smallest level), each job's frozen
    level in its tier's share units (NaN where a failed LP left it unfrozen; a job's share
    in the allocation is at least ``1 - SLACK`` of it) and the number of LP and MILP solves."""

    allocation: Allocation
    levels: np.ndarray
    lp_solves: int
    milp_solves: int


def water_fill(problem: AllocationProblem, variant: Variant = "perf", solve_fn: SolveFn | None = None, *,
               entities: Sequence[Hashable] | None = None, entity_weights: Mapping[Hashable, float] | None = None,
               entity_split: str = "fairness", delta_rel: float = DELTA_REL,
               policy: str | None = None) -> WaterFilling:
    """The lexicographically max-min fair allocation and its levels (module docstring).
    ``solve_fn`` solves each LP and MILP (default: HiGHS with :func:`solve_options`)."""
    if not 0 < delta_rel < 1:
        raise ValueError(f"delta_rel must lie in (0, 1), got {delta_rel}")
    policy = policy or POLICY_NAMES[variant]
    weights, tier = job_weights(problem, entities, entity_weights, entity_split)
    combos, share = share_map(problem, variant, weights)
    if problem.num_jobs == 0:
        return WaterFilling(combos.allocation(np.zeros((0, problem.num_types)), policy, notes=["no jobs"]),
                            np.zeros(0), 0, 0)
    run = _Run(combos, share, delta_rel, solve_fn or (lambda model: solve(model, "highs", solve_options())),
               np.full(problem.num_jobs, np.nan))
    for t in range(int(tier.max()) + 1):
        if not run.fill(np.flatnonzero(tier == t)):
            break
    if (tier == 1).any():
        run.notes.append(f"fifo entities: {int((tier == 1).sum())} younger jobs water-filled in a second "
                         "tier on the capacity the oldest job of each entity leaves")
    allocation = combinations.decode(problem, run.lp, run.result, policy, objective=min(run.steps))
    summary = f"water filling: {run.lps} LP and {run.milps} MILP solves; {_describe_levels(run.steps, delta_rel)}"
    allocation.notes += [summary, *run.notes]
    return WaterFilling(allocation, run.levels, run.lps, run.milps)


def solve_water_filling(problem: AllocationProblem, variant: Variant = "perf", solve_fn: SolveFn | None = None,
                        **kwargs) -> Allocation:
    """:func:`water_fill`'s allocation (keyword arguments as there)."""
    return water_fill(problem, variant, solve_fn, **kwargs).allocation


@dataclass
class _Run:
    """State of one water filling: frozen ``levels`` (NaN = not frozen), the level of each
    step, the last solved level LP and its result."""

    combos: Combinations
    share: sp.csr_matrix
    delta_rel: float
    solve_fn: SolveFn
    levels: np.ndarray
    steps: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lps: int = 0
    milps: int = 0
    lp: Model | None = None
    result: Result | None = None

    def fill(self, active: np.ndarray) -> bool:
        """Freeze every ``active`` job; False if a level LP failed (the previous allocation stands)."""
        while active.size:
            floor = self.steps[0] if self.steps else 1.0
            lp = level_lp(self.combos, self.share, active, self.levels, floor)
            result = self.solve_fn(lp)
            self.lps += 1
            if result.status is not Status.OPTIMAL or not result.has_solution:
                message = (f"level LP {self.lps} ({lp.num_vars} variables) ended {result.status} on "
                           f"{result.backend}: {result.message}")
                if self.result is None:
                    raise SolverFailedError(f"water filling: {message}")
                self.notes.append(f"{message}; kept the previous allocation, {active.size} jobs unfrozen")
                return False
            self.lp, self.result = lp, result
            level = float(result.value("z")[0])
            improves = np.zeros(active.size, dtype=bool)
            if active.size > 1:
                improves = self._improving(active, level, self.steps[0] if self.steps else level)
            self.levels[active[~improves]] = level
            self.steps.append(level)
            active = active[improves]
        return True

    def _improving(self, active: np.ndarray, level: float, floor: float) -> np.ndarray:
        """The active jobs the MILP frees, or (solver trouble) all but the dual-certified bottlenecks."""
        result = self.solve_fn(bottleneck_milp(self.combos, self.share, active, level, self.levels, floor,
                                               self.delta_rel))
        self.milps += 1
        if result.has_solution:
            improves = result.value("improves") > 0.5
            if not improves.all():
                return improves
            trouble = "froze no job"
        else:
            trouble = f"ended {result.status} without a solution"
        duals = self.result.row_duals
        if duals is not None:
            duals = duals[self.lp.canonical().row_blocks["fairness"]]
        if duals is None or not duals.max() > 0:
            self.notes.append(f"bottleneck MILP at level {level:.6g} {trouble}; froze all {active.size} active jobs")
            return np.zeros(active.size, dtype=bool)
        stuck = duals >= 1e-6 * duals.max()
        self.notes.append(f"bottleneck MILP at level {level:.6g} {trouble}; froze the {int(stuck.sum())} of "
                          f"{active.size} active jobs whose level row has a positive dual")
        return ~stuck


def _scale(problem: AllocationProblem, variant: Variant, weights: np.ndarray | None) -> np.ndarray:
    """``k_i = s_i / (w_i prop_i)`` with the given job weights."""
    k = share_scale(problem, effective_throughputs(problem, variant))
    return k if weights is None else k * problem.weights / weights


def _add_frozen(model: Model, x: VarBlock, share: sp.csr_matrix, levels: np.ndarray, floor: float,
                slack: float) -> None:
    """``u_i / r_i >= (1 - slack) level_i / r_i``, ``r_i = max(level_i, floor)``, for every frozen job."""
    frozen = np.flatnonzero(np.isfinite(levels))
    if frozen.size:
        ref = np.maximum(levels[frozen], floor)
        model.add_rows("frozen", {x: sp.diags(1.0 / ref) @ share[frozen]}, lo=(1 - slack) * levels[frozen] / ref)


def _describe_levels(steps: list[float], rel: float, shown: int = 8) -> str:
    """The levels, each within ``rel`` of the previous distinct one merged into it."""
    distinct: list[float] = []
    for v in sorted(steps):
        if not distinct or v > distinct[-1] * (1 + rel):
            distinct.append(v)
    text = ", ".join(f"{v:.6g}" for v in distinct[:shown])
    more = f", ... ({len(distinct) - shown} more)" if len(distinct) > shown else ""
    return f"{len(distinct)} distinct levels: {text}{more}"
