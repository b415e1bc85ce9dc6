"""Pieces the heuristic baselines share: shares, arrival order, pair gains, kept placements."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from allocators.base import Policy, ProgramClass
from formulations import Allocation, AllocationProblem
from formulations.rates import pair_runnable, runnable
from optim.sparse import scipy_sparse as sp


class HeuristicPolicy(Policy):
    """A policy computed directly, without a solver (``solver`` and ``options`` are ignored)."""

    program = ProgramClass.HEURISTIC

    def _allocation(self, problem: AllocationProblem, x: np.ndarray, notes: list[str] | None = None,
                    pair_x: np.ndarray | None = None) -> Allocation:
        """The Allocation; ``pair_x`` only for space-sharing policies on problems with pairs."""
        if problem.pairs is None or not self.uses_pairs:
            pair_x = None
        return Allocation(problem, x, self.name, notes=notes or [], pair_x=pair_x)


def arrival_order(problem: AllocationProblem) -> np.ndarray:
    """Job rows oldest first: larger time since arrival first, ties (or no times) by job id."""
    return np.lexsort((problem.job_ids, -problem.elapsed()))


def pair_gain(problem: AllocationProblem, which: np.ndarray | None = None) -> np.ndarray:
    """(P, n) for the pairs ``which`` (default all): summed normalized throughput
    ``rate_a / T_aj + rate_b / T_bj`` on each type (a member with T_kj = 0 adds 0); 0 where
    the pair cannot share the type."""
    pairs = problem.job_pairs()
    which = np.arange(len(pairs)) if which is None else np.asarray(which, dtype=np.int64)
    T, rates = problem.throughputs, pairs.rates[which]
    alone = np.stack([T[pairs.first[which]], T[pairs.second[which]]], axis=2)
    ratio = np.divide(rates, alone, out=np.zeros(rates.shape), where=alone > 0)
    return np.where(pair_runnable(problem, which), ratio.sum(axis=2), 0.0)


def adjacency(problem: AllocationProblem, which: np.ndarray | None = None) -> sp.csr_matrix:
    """(m, m) CSR: entry (a, b) = 1 + index in ``problem.pairs`` of the pair {a, b}, for the
    pairs ``which`` (default all); row a's neighbours, ascending, are
    ``indices[indptr[a]:indptr[a + 1]]``."""
    pairs = problem.job_pairs()
    which = np.arange(len(pairs)) if which is None else which
    a, b = pairs.first[which], pairs.second[which]
    adj = sp.csr_matrix((np.concatenate([which, which]) + 1, (np.concatenate([a, b]), np.concatenate([b, a]))),
                        shape=(problem.num_jobs, problem.num_jobs))
    adj.sort_indices()
    return adj


class PairIndex:
    """Looks up the index in ``problem.pairs`` of unordered job-row pairs (-1: not a pair)."""

    def __init__(self, problem: AllocationProblem):
        pairs = problem.job_pairs()
        self._m = problem.num_jobs
        keys = self._key(pairs.first, pairs.second)
        self._order = np.argsort(keys)
        self._keys = keys[self._order]

    def _key(self, a, b) -> np.ndarray:
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        return np.minimum(a, b) * self._m + np.maximum(a, b)

    def __call__(self, a, b) -> np.ndarray:
        keys = self._key(a, b)
        if self._keys.size == 0:
            return np.full(keys.shape, -1)
        pos = np.minimum(np.searchsorted(self._keys, keys), self._keys.size - 1)
        return np.where(self._keys[pos] == keys, self._order[pos], -1)


@dataclass
class Placement:
    """Whole-type placements: ``x`` and ``pair_x`` (1.0 on the type a job or pair runs on),
    GPUs still ``free`` per type, ``waiting`` job rows in arrival order, and ``notes``."""

    x: np.ndarray
    pair_x: np.ndarray
    free: np.ndarray
    waiting: list[int]
    notes: list[str]


def resume(problem: AllocationProblem, order: np.ndarray, placed: dict[int, str],
           partners: dict[int, int]) -> Placement:
    """Re-place running jobs (non-preemptive policies) in arrival ``order``.

    ``placed`` maps job id -> worker type it runs on, ``partners`` job id -> co-located job id
    (symmetric). Both are updated in place: departed jobs are forgotten; a pair that can no
    longer share its type is split (each member keeps the type alone if it still fits); a job
    whose type vanished, cannot run it, or lacks the GPUs (the cluster shrank) is requeued.
    """
    ids = [int(v) for v in problem.job_ids]
    present = set(ids)
    for jid in [k for k in placed if k not in present]:
        del placed[jid]
    for jid in [k for k, v in partners.items() if k not in present or v not in present]:
        del partners[jid]
    row_of = {jid: i for i, jid in enumerate(ids)}
    fits = runnable(problem)
    lookup = PairIndex(problem) if partners else None
    s = problem.scale_factors
    x = np.zeros((problem.num_jobs, problem.num_types))
    pair_x = np.zeros((len(problem.job_pairs()), problem.num_types))
    free = problem.capacities.astype(float).copy()
    waiting, notes, seated = [], [], set()
    for i in order.tolist():
        jid = ids[i]
        if i in seated:
            continue
        if jid not in placed:
            waiting.append(i)
            continue
        name = placed[jid]
        j = problem.worker_types.index(name) if name in problem.worker_types else -1
        k = row_of.get(partners.get(jid))
        p = int(lookup(i, k)) if k is not None else -1
        if k is not None and (p < 0 or j < 0 or not pair_runnable(problem, [p])[0, j]):
            notes.append(f"{problem.describe_job(i)} and {problem.describe_job(k)} can no longer share {name}; "
                         "split")
            del partners[jid], partners[ids[k]]
            k = None
        if j < 0 or free[j] < s[i] or (k is None and not fits[i, j]):
            notes.append(f"{problem.describe_job(i)} lost its place on {name}; requeued")
            del placed[jid]
            if k is not None:
                del partners[jid], partners[ids[k]]
            waiting.append(i)
            continue
        free[j] -= s[i]
        if k is None:
            x[i, j] = 1.0
        else:
            pair_x[p, j] = 1.0
            seated.add(k)
    return Placement(x, pair_x, free, waiting, notes)
