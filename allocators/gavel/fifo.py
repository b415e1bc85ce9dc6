"""FIFO baselines: ``fifo`` (random type), ``fifo_perf`` (fastest type), ``fifo_packed``.

Jobs are served in arrival order (longest waiting first, ties by job id). Each takes a whole
worker type slot: allocation 1.0 on one type with s_i GPUs still free. ``fifo`` keeps a
job's type until it leaves (non-preemptive: running jobs are re-placed first, then waiting
jobs start in order); ``fifo_perf`` and ``fifo_packed`` place every job afresh on each
call, as the published policies do. As in Gavel the queue is strict: the first waiting job
that finds no type blocks every job behind it (no backfilling).
"""

from __future__ import annotations

import random
from abc import abstractmethod

import numpy as np

from allocators.gavel.heuristic import (
    HeuristicPolicy,
    Placement,
    adjacency,
    arrival_order,
    pair_gain,
    resume,
    runnable,
)
from formulations import Allocation, AllocationProblem
from optim import SolveOptions


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

    ``gavel_compat=True`` replays the published policy step by step, defects included. Its
    random draw (Python's ``random.Random(seed)``) picks among the types with room for the
    job but is never used: the job is put on the last type by name of the list of types that
    had free GPUs when the call began (v100 on an idle Gavel cluster), whatever that type's
    free GPUs, and that type's free count goes down (below zero too). When the count hits
    zero exactly, the drawn type, not the one used, leaves the list. A job starts only while
    some listed type shows room for its scale factor. A job that leaves hands its type to
    the first waiting job only if that job fits the type's count left after the running
    jobs before it in id order. The round mechanism then time-shares each used type among
    far more jobs than it has GPUs and leaves the other types idle."""

    name = "fifo"
    supports_gavel_compat = True

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, seed: int = 0,
                 gavel_compat: bool = False):
        super().__init__(solver, options)
        self._rng = np.random.default_rng(seed)
        self._published_rng = random.Random(seed)
        self.gavel_compat = gavel_compat

    def _choose(self, problem: AllocationProblem, i: int, options: np.ndarray) -> int:
        return int(self._rng.choice(options))

    def allocate(self, problem: AllocationProblem) -> Allocation:
        if not self.gavel_compat:
            return super().allocate(problem)
        names, s, T = problem.worker_types, problem.scale_factors, problem.throughputs
        row = {int(jid): i for i, jid in enumerate(problem.job_ids)}
        free = dict(zip(names, problem.capacities.tolist()))
        queue = sorted(jid for jid in row if jid not in self._placed)
        for jid in sorted(self._placed):
            name = self._placed[jid]
            if jid in row:
                free[name] -= s[row[jid]]
                continue
            del self._placed[jid]
            if queue and s[row[queue[0]]] <= free[name] and T[row[queue[0]], names.index(name)] > 0:
                free[name] -= s[row[queue[0]]]
                self._placed[queue.pop(0)] = name
        open_types = sorted(name for name in names if free[name] > 0)
        while queue and open_types:
            jid, stale = queue.pop(0), open_types[-1]
            room = [k for k, name in enumerate(open_types) if free[name] >= s[row[jid]]]
            if not room:
                break
            drawn = room[self._published_rng.randrange(len(room))]
            if T[row[jid], names.index(stale)] > 0:
                self._placed[jid] = stale
                free[stale] -= s[row[jid]]
                if free[stale] == 0:
                    open_types.pop(drawn)
        x = np.zeros(T.shape)
        for jid, name in self._placed.items():
            x[row[jid], names.index(name)] = 1.0
        return self._allocation(problem, x, ["gavel_compat: the published fifo's steps (jobs on the last worker "
                                             "type by name)"])


class FifoPerf(_Fifo):
    """Heterogeneity-aware FIFO: the fastest type (largest T_ij; ties: first type) with room.

    As in the published policy, every call places all jobs afresh in arrival order: a
    running job moves to a faster type that an earlier job has left (and ``fifo_packed``
    re-forms its pairs), rather than keeping its first type until it finishes."""

    name = "fifo_perf"
    fixed_type_order = True

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
