"""POP-style partitioning (Narayanan et al., SOSP'21): solve k small programs instead of one.

``Partitioned(policy, k)`` wraps any policy whose ``allocate`` solves one snapshot:

* **jobs**: a permutation drawn from ``np.random.default_rng(seed)`` (afresh on every call, so
  a fixed seed and snapshot give the same split) is dealt round-robin: the job at permuted
  position r goes to part ``r mod k`` (``ceil(m/k)`` or ``floor(m/k)`` jobs per part), kept in
  input order inside its part;
* **GPUs** (:func:`split_capacities`): part p gets ``floor(W_j/k)`` GPUs of type j plus one
  unit of the remainder ``r_j = W_j - k floor(W_j/k)`` (a fractional W_j's last unit is
  fractional) if ``(p - o_j) mod k < r_j``, with ``o_j = floor(sum_{j'<j} r_j') mod k``: the
  remainders are dealt round-robin across types, so ``sum_p W_pj = W_j`` exactly, 10 GPUs / 3
  parts -> 4, 3, 3, and the parts' GPU totals differ by at most one (integer counts);
* part p's sub-problem keeps its jobs (with their per-job fields), the types it got GPUs of
  (with their prices) and the co-located pairs of two of its jobs; the wrapped policy solves
  it, sequentially or in ``workers`` processes, and its allocation fills part p's rows and
  columns of the merged one; every other cell (another part's GPUs, pairs across parts) is 0.
  As the parts' GPUs sum to the cluster's and each part meets its own capacities and time
  budgets, the merge meets the full problem's.

Degenerate parts are no error: a part with no jobs is not solved (its GPUs stay idle), and a
job that cannot run in its part (no GPUs there of a type it runs on, or fewer than its scale
factor, e.g. when k exceeds the GPU count) gets a zero row, counted in
``PartitionReport.unplaced`` and in the notes.

The result is a :class:`PartitionedAllocation` (an Allocation plus a :class:`PartitionReport`:
parts, per-part sizes and solve times). No single program was solved, so ``result`` and
``program`` are None; ``objective`` is None unless ``compare_exact``, which also solves the
unpartitioned problem and reports ``quality_ratio = f(merged) / f(exact)``, f being the
wrapped program's objective on the full problem (:func:`program_objective`; <= 1 for a
maximized objective such as max-min fairness, up to solver tolerance).

Users reach it by name: ``make_policy("max_min_fairness_perf@pop4")`` wraps the named policy
with k = 4, seed 0, sequential (``POP_SUFFIX``); construct :class:`Partitioned` for the rest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from allocators.base import FormulationPolicy, Policy
from allocators.registry import POP_SUFFIX
from allocators.round_plans import RoundPlanner
from formulations import Allocation, AllocationProblem, JobPairs
from optim import Timings, solve, tally
from optim.tally import add_spent


def split_capacities(capacities: np.ndarray, k: int) -> np.ndarray:
    """GPUs per part and type, shape (k, n), columns summing to ``capacities`` (rule above)."""
    W = np.asarray(capacities, dtype=float)
    base = np.floor(W / k)
    rest = W - k * base
    offset = np.floor(np.cumsum(rest) - rest) % k
    rank = (np.arange(k)[:, None] - offset[None, :]) % k
    return base + np.clip(rest - rank, 0.0, 1.0)


def split_jobs(num_jobs: int, k: int, seed: int) -> np.ndarray:
    """The part of every job, shape (m,): a seeded permutation dealt round-robin."""
    part = np.empty(num_jobs, dtype=np.int64)
    part[np.random.default_rng(seed).permutation(num_jobs)] = np.arange(num_jobs) % k
    return part


@dataclass(frozen=True)
class PartitionReport:
    """``part[i]``: job i's part; ``jobs[p]``, ``gpus[p, j]``: part p's jobs and GPUs of type j;
    ``seconds[p]``: wall time of part p's ``allocate`` (0: not solved); ``unplaced``: rows of
    the jobs no part could run (zero allocation); ``exact_*`` and ``quality_ratio``: filled
    with ``compare_exact`` (module doc)."""

    seed: int
    part: np.ndarray
    jobs: np.ndarray
    gpus: np.ndarray
    seconds: np.ndarray
    unplaced: np.ndarray
    wall_seconds: float
    exact_objective: float | None = None
    exact_seconds: float | None = None
    quality_ratio: float | None = None

    @property
    def num_parts(self) -> int:
        return int(self.jobs.shape[0])


@dataclass(kw_only=True)
class PartitionedAllocation(Allocation):
    """An allocation merged from the parts' allocations, with how it was partitioned."""

    report: PartitionReport = field(repr=False)


def program_objective(policy: FormulationPolicy, allocation: Allocation) -> float:
    """The objective of ``policy``'s program on ``allocation.problem`` with its allocation
    block fixed to ``allocation`` (singles, then pairs): the program's value of that point."""
    problem = allocation.problem
    canon = policy.formulation.build(problem, policy.variant).canonical()
    block = canon.blocks["x"]
    cells = np.zeros(block.shape)
    cells[: problem.num_jobs] = allocation.x
    if block.shape[0] > problem.num_jobs and allocation.pair_x is not None:
        cells[problem.num_jobs:] = allocation.pair_x
    lo, hi = canon.col_lo.copy(), canon.col_hi.copy()
    lo[block.columns] = hi[block.columns] = cells.ravel()
    return float(solve(replace(canon, col_lo=lo, col_hi=hi), policy.solver, policy.options).objective)


def _solve_part(policy: Policy, problem: AllocationProblem
                ) -> tuple[np.ndarray, np.ndarray | None, list[str], float, Timings]:
    """One part's (x, pair_x, notes, wall seconds, its builds and solves (:func:`optim.tally`));
    module-level so that processes can run it."""
    start = time.perf_counter()
    with tally() as spent:
        allocation = policy.allocate(problem)
    return allocation.x, allocation.pair_x, allocation.notes, time.perf_counter() - start, spent


def _sub_problem(problem: AllocationProblem, rows: np.ndarray, gpus: np.ndarray
                 ) -> tuple[AllocationProblem | None, np.ndarray, np.ndarray, np.ndarray]:
    """Part (rows, gpus) as a problem over the rows that can run in it: (problem or None if no
    row can, those rows, its types, the full problem's indices of its pairs)."""
    types = np.flatnonzero(gpus > 0)
    T = problem.throughputs[np.ix_(rows, types)]
    rows = rows[((T > 0) & (problem.scale_factors[rows, None] <= gpus[None, types])).any(axis=1)]
    if rows.size == 0:
        return None, rows, types, np.zeros(0, dtype=np.int64)
    position = np.full(problem.num_jobs, -1)
    position[rows] = np.arange(rows.size)
    pairs, kept, sub_pairs = problem.pairs, np.zeros(0, dtype=np.int64), None
    if pairs is not None:
        kept = np.flatnonzero((position[pairs.first] >= 0) & (position[pairs.second] >= 0))
        sub_pairs = JobPairs(position[pairs.first[kept]], position[pairs.second[kept]], pairs.rates[kept][:, types])

    def per_job(name: str) -> np.ndarray | None:
        value = getattr(problem, name)
        return None if value is None else value[rows]

    sub = AllocationProblem(
        worker_types=tuple(problem.worker_types[j] for j in types), capacities=gpus[types],
        job_ids=problem.job_ids[rows], job_types=tuple(problem.job_types[i] for i in rows),
        scale_factors=problem.scale_factors[rows], weights=problem.weights[rows],
        throughputs=problem.throughputs[np.ix_(rows, types)], remaining_steps=per_job("remaining_steps"),
        time_since_arrival=per_job("time_since_arrival"), slo_remaining=per_job("slo_remaining"),
        prices=None if problem.prices is None else problem.prices[types], pairs=sub_pairs,
    )
    return sub, rows, types, kept


class Partitioned(Policy):
    """``policy`` solved on k random parts of the jobs and GPUs, merged (module doc).

    ``workers``: solve the parts in that many processes (None or 1: sequentially; the
    wrapped policy is pickled, and state it changes in a process does not come back).
    ``compare_exact``: also solve the whole problem and report the quality ratio (the wrapped
    policy must be one program, a :class:`FormulationPolicy`)."""

    def __init__(self, policy: Policy, k: int, *, seed: int = 0, workers: int | None = None,
                 compare_exact: bool = False):
        if isinstance(policy, RoundPlanner):
            raise TypeError(f"policy {policy.name!r} plans rounds, not one allocation: it cannot be partitioned")
        if int(k) != k or k < 1:
            raise ValueError(f"the number of parts must be an integer >= 1, got {k}")
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if compare_exact and not isinstance(policy, FormulationPolicy):
            raise TypeError(f"compare_exact needs a policy that is one program; {policy.name!r} is not")
        self.policy, self.k, self.seed, self.workers, self.compare_exact = policy, int(k), seed, workers, compare_exact
        policy.warm_resolve = False  # consecutive calls solve different parts: nothing to re-solve warm
        self.name = f"{policy.name}{POP_SUFFIX}{self.k}"
        self.program, self.uses_pairs = policy.program, policy.uses_pairs
        self.fixed_type_order, self.system = policy.fixed_type_order, policy.system
        self.solver, self.options = policy.solver, policy.options

    def allocate(self, problem: AllocationProblem) -> PartitionedAllocation:
        start = time.perf_counter()
        m, n, k = problem.num_jobs, problem.num_types, self.k
        part, gpus = split_jobs(m, k, self.seed), split_capacities(problem.capacities, k)
        subs = [_sub_problem(problem, np.flatnonzero(part == p), gpus[p]) for p in range(k)]
        solved = [p for p, (sub, *_) in enumerate(subs) if sub is not None]
        tasks = [subs[p][0] for p in solved]
        if self.workers is None or self.workers == 1 or len(tasks) < 2:
            outputs = [_solve_part(self.policy, sub) for sub in tasks]
        else:
            from concurrent.futures import ProcessPoolExecutor  # here: 3 ms of imports a run without workers skips

            with ProcessPoolExecutor(max_workers=min(self.workers, len(tasks))) as pool:
                outputs = list(pool.map(_solve_part, [self.policy] * len(tasks), tasks))
            for *_, spent in outputs:  # solved in other processes: their time joins this one's tallies
                add_spent(spent)

        x = np.zeros((m, n))
        pair_x = np.zeros((len(problem.job_pairs()), n)) if problem.pairs is not None and self.uses_pairs else None
        seconds, notes = np.zeros(k), []
        for p, (sub_x, sub_pair_x, sub_notes, secs, _) in zip(solved, outputs):
            _, rows, types, kept = subs[p]
            x[np.ix_(rows, types)] = sub_x
            if pair_x is not None and sub_pair_x is not None:
                pair_x[np.ix_(kept, types)] = sub_pair_x
            seconds[p] = secs
            notes += [f"part {p}: {note}" for note in sub_notes]
        placed = np.zeros(m, dtype=bool)
        for _, rows, _, _ in subs:
            placed[rows] = True
        unplaced = np.flatnonzero(~placed)
        jobs = np.bincount(part, minlength=k)
        notes.insert(0, f"POP: {k} parts (seed {self.seed}); sizes and solve times in the allocation's report")
        if unplaced.size:
            notes.insert(1, f"POP: {unplaced.size} jobs cannot run on their part's GPUs and get no allocation")
        merged = PartitionedAllocation(
            problem, x, self.name, notes=notes, pair_x=pair_x,
            report=PartitionReport(self.seed, part, jobs, gpus, seconds, unplaced, time.perf_counter() - start),
        )
        if self.compare_exact:
            self._compare(merged)
        return merged

    def _compare(self, merged: PartitionedAllocation) -> None:
        """Solve the whole problem and fill ``merged``'s objective and quality ratio."""
        start = time.perf_counter()
        exact = self.policy.allocate(merged.problem)
        exact_seconds = time.perf_counter() - start
        merged.objective = program_objective(self.policy, merged)
        exact_objective = program_objective(self.policy, exact)
        ratio = merged.objective / exact_objective if exact_objective else float("nan")
        merged.report = replace(merged.report, exact_objective=exact_objective, exact_seconds=exact_seconds,
                                quality_ratio=ratio)
        merged.notes.insert(1, f"POP: quality ratio {ratio:.4f} (objective {merged.objective:.6g}, "
                               f"unpartitioned {exact_objective:.6g} in {exact_seconds:.3f} s)")
