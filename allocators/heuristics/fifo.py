"""FIFO baselines: ``fifo`` (random type), ``fifo_perf`` (fastest type), ``fifo_packed``.

Jobs are served in arrival order (longest waiting first, ties by job id). Each takes a whole
worker type slot: allocation 1.0 on one type with s_i GPUs still free. ``fifo`` keeps a
job's type until it leaves (non-preemptive: running jobs are re-placed first, then waiting
jobs start in order); ``fifo_perf`` and ``fifo_packed`` place every job afresh on each
call, as the published policies do. As in Gavel the queue is strict: the first waiting job
that finds no type blocks every job behind it (no backfilling).
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from formulations import Allocation, AllocationProblem
from optim import SolveOptions

from ._common import (
    HeuristicPolicy,
    Placement,
    adjacency,
    arrival_order,
    pair_gain,
    resume,
    runnable,
)


class _Fifo(HeuristicPolicy):
    """State: ``_placed`` job id -> worker type, ``_partners`` job id -> co-located job id."""

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        super().__init__(solver, options)
        self._placed: dict[int, str] = {}
        self._partners: dict[int, int] = {}

    @abstractmethod
    def _choose(self, problem: AllocationProblem, i: int, options: np.ndarray) -> int:
        """The type job i takes among ``options`` (types with room where it runs)."""

    def _start(self, problem: AllocationProblem, placement: Placement) -> list[int]:
        """Start waiting jobs in order; returns the rows still waiting."""
        fits, s = runnable(problem), problem.scale_factors
        for pos, i in enumerate(placement.waiting):
            options = np.flatnonzero(fits[i] & (placement.free >= s[i]))
            if options.size == 0:
                return placement.waiting[pos:]
            j = self._choose(problem, i, options)
            placement.x[i, j] = 1.0
            placement.free[j] -= s[i]
            self._placed[int(problem.job_ids[i])] = problem.worker_types[j]
        return []

    def allocate(self, problem: AllocationProblem) -> Allocation:
        placement = resume(problem, arrival_order(problem), self._placed, self._partners)
        self._start(problem, placement)
        return self._allocation(problem, placement.x, placement.notes, placement.pair_x)


class Fifo(_Fifo):
    """Heterogeneity-agnostic FIFO: a uniformly random type among those with room
    (``np.random.default_rng(seed)``, one draw per started job).

    ``gavel_compat=True`` reproduces a defect of the published policy: its random draw is
    never used, and every job gets allocation 1.0 on the last worker type in name order
    (v100 for Gavel's cluster), however many GPUs that type has; the round mechanism then
    time-shares that one type among all jobs and leaves the others idle."""

    name = "fifo"
    supports_gavel_compat = True

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, seed: int = 0,
                 gavel_compat: bool = False):
        super().__init__(solver, options)
        self._rng = np.random.default_rng(seed)
        self.gavel_compat = gavel_compat

    def _choose(self, problem: AllocationProblem, i: int, options: np.ndarray) -> int:
        return int(self._rng.choice(options))

    def allocate(self, problem: AllocationProblem) -> Allocation:
        if not self.gavel_compat:
            return super().allocate(problem)
        x = np.zeros(problem.throughputs.shape)
        x[:, problem.worker_types.index(max(problem.worker_types))] = 1.0
        return self._allocation(problem, x, ["gavel_compat: every job on the last worker type by name"])


class FifoPerf(_Fifo):
    """Heterogeneity-aware FIFO: the fastest type (largest T_ij; ties: first type) with room.

    As in the published policy, every call places all jobs afresh in arrival order: a
    running job moves to a faster type that an earlier job has left (and ``fifo_packed``
    re-forms its pairs), rather than keeping its first type until it finishes."""

    name = "fifo_perf"

    def _choose(self, problem: AllocationProblem, i: int, options: np.ndarray) -> int:
        return int(options[np.argmax(problem.throughputs[i, options])])

    def _resume(self, problem: AllocationProblem) -> Placement:
        self._placed.clear()
        self._partners.clear()
        return resume(problem, arrival_order(problem), self._placed, self._partners)

    def allocate(self, problem: AllocationProblem) -> Allocation:
        placement = self._resume(problem)
        self._start(problem, placement)
        return self._allocation(problem, placement.x, placement.notes, placement.pair_x)


class FifoPacked(FifoPerf):
    """``fifo_perf`` plus packing: after the free GPUs are taken, the waiting jobs in order are
    co-located with a running job on that job's type when the pair is in ``problem.pairs``
    and its summed normalized throughput there (``rate_a / T_aj + rate_b / T_bj``) exceeds
    ``packing_threshold``. Each waiting job picks the running job with the highest such
    gain (ties: the earlier row); a running job takes at most one partner (the pair's
    allocation 1.0 replaces its single one). The first waiting job with no partner ends
    packing (strict FIFO).
    """

    name = "fifo_packed"
    uses_pairs = True

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None,
                 packing_threshold: float = 1.5):
        super().__init__(solver, options)
        self.packing_threshold = packing_threshold

    def allocate(self, problem: AllocationProblem) -> Allocation:
        placement = self._resume(problem)
        queue = self._start(problem, placement)
        if not len(problem.job_pairs()):
            placement.notes.append("no candidate pairs in the problem: no packing (as fifo_perf)")
        elif queue:
            self._pack(problem, placement, queue)
        return self._allocation(problem, placement.x, placement.notes, placement.pair_x)

    def _pack(self, problem: AllocationProblem, placement: Placement, queue: list[int]) -> None:
        adj = adjacency(problem)
        alone = placement.x.sum(axis=1) > 0
        host_type = np.where(alone, placement.x.argmax(axis=1), -1)
        for i in queue:
            other = adj.indices[adj.indptr[i]:adj.indptr[i + 1]]
            involved = adj.data[adj.indptr[i]:adj.indptr[i + 1]] - 1
            types = host_type[other]
            gain = pair_gain(problem, involved)[np.arange(involved.size), np.maximum(types, 0)]
            scores = np.where(types >= 0, gain, -np.inf)
            if scores.size == 0 or scores.max() <= self.packing_threshold:
                return
            best = int(np.argmax(scores))
            p, k, j = involved[best], int(other[best]), int(types[best])
            placement.x[k, j] = 0.0
            placement.pair_x[p, j] = 1.0
            host_type[k] = -1
            a, b = int(problem.job_ids[i]), int(problem.job_ids[k])
            self._placed[a] = problem.worker_types[j]
            self._partners[a], self._partners[b] = b, a
