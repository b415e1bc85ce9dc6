"""``gandiva``: equal shares, with random packing of jobs when the cluster is oversubscribed."""

from __future__ import annotations

import random

import numpy as np

from allocators.gavel.heuristic import HeuristicPolicy, PairIndex, adjacency, pair_gain, pair_runnable
from formulations import Allocation, AllocationProblem
from formulations.rates import equal_shares, runnable
from optim import SolveOptions


class Gandiva(HeuristicPolicy):
    """Gandiva's time slicing and introspective packing (as Gavel models it).

    If the jobs' total demand fits the cluster (``sum_i s_i <= sum_j W_j``): the isolated
    allocation. Otherwise the jobs not yet paired are randomly matched among
    ``problem.pairs`` (a random maximal matching: jobs in random order, each takes a random
    still-unmatched candidate partner; pairs always have equal scale factors). A new pair is
    kept only if its normalized throughput ``max_j (rate_a / T_aj + rate_b / T_bj)`` is >= 1;
    the others run alone this call and are retried on later calls. Then every combination
    (kept pair or unpaired job, C in all) gets an equal share, ``(W_j / C) / s_c`` on each
    type it can run on, each row scaled down to sum <= 1 — Gavel's "equal share". Each job
    lies in exactly one combination, so its total time is that row's sum (<= 1), and
    capacity holds as for ``isolated``.

    State: the kept pairs, by job id, while both jobs remain and the pair stays in
    ``problem.pairs`` with normalized throughput >= 1 (Gandiva's introspection).

    ``gavel_compat=True`` replays the published policy (:class:`PublishedGandiva`).
    """

    name = "gandiva"
    fixed_type_order = True
    uses_pairs = True
    supports_gavel_compat = True

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, seed: int = 0,
                 gavel_compat: bool = False):
        super().__init__(solver, options)
        self._rng = np.random.default_rng(seed)
        self._partners: dict[int, int] = {}
        self._published = PublishedGandiva(seed) if gavel_compat else None

    def allocate(self, problem: AllocationProblem) -> Allocation:
        if self._published is not None:
            x, pair_x, notes = self._published.allocate(problem)
            return self._allocation(problem, x, notes, pair_x)
        W, s = problem.capacities, problem.scale_factors
        notes: list[str] = []
        kept = self._kept_pairs(problem, notes)
        if s.sum() <= W.sum():
            notes.append("demand fits the cluster: isolated shares, no packing")
            return self._allocation(problem, equal_shares(W, s, runnable(problem)), notes)
        if problem.pairs is None:
            notes.append("no candidate pairs in the problem: equal shares to single jobs")
        pairs = problem.job_pairs()
        busy = np.zeros(problem.num_jobs, dtype=bool)
        busy[pairs.first[kept]] = busy[pairs.second[kept]] = True
        new = self._random_pairs(problem, busy)
        good = new[_best_gain(problem, new) >= 1.0]
        if new.size > good.size:
            notes.append(f"{new.size - good.size} of {new.size} random pairs dropped (normalized throughput < 1)")
        for p in good:
            a, b = int(problem.job_ids[pairs.first[p]]), int(problem.job_ids[pairs.second[p]])
            self._partners[a], self._partners[b] = b, a
        chosen = np.concatenate([kept, good])
        busy[pairs.first[chosen]] = busy[pairs.second[chosen]] = True
        singles = np.flatnonzero(~busy)
        scale = np.concatenate([s[singles], s[pairs.first[chosen]]])
        shares = equal_shares(W, scale, np.vstack([runnable(problem)[singles], pair_runnable(problem, chosen)]))
        x = np.zeros((problem.num_jobs, problem.num_types))
        x[singles] = shares[:singles.size]
        pair_x = np.zeros((len(pairs), problem.num_types))
        pair_x[chosen] = shares[singles.size:]
        return self._allocation(problem, x, notes, pair_x)

    def _kept_pairs(self, problem: AllocationProblem, notes: list[str]) -> np.ndarray:
        """Indices in ``problem.pairs`` of the remembered pairs still valid; forgets the rest."""
        row_of = {int(jid): i for i, jid in enumerate(problem.job_ids)}
        known = [(a, b) for a, b in self._partners.items() if a < b]
        self._partners = {}
        if not known:
            return np.zeros(0, dtype=np.int64)
        rows = np.array([(row_of.get(a, -1), row_of.get(b, -1)) for a, b in known]).reshape(-1, 2)
        present = (rows >= 0).all(axis=1)
        p = np.where(present, PairIndex(problem)(np.maximum(rows[:, 0], 0), np.maximum(rows[:, 1], 0)), -1)
        valid = p >= 0
        valid[valid] = _best_gain(problem, p[valid]) >= 1.0
        worse = int((present & ~valid).sum())
        if worse:
            notes.append(f"{worse} packed pair(s) split: no longer a candidate or normalized throughput < 1")
        for a, b in np.asarray(known)[valid]:
            self._partners[int(a)], self._partners[int(b)] = int(b), int(a)
        return p[valid]

    def _random_pairs(self, problem: AllocationProblem, busy: np.ndarray) -> np.ndarray:
        """A random maximal matching of the free jobs over their candidate pairs."""
        pairs = problem.job_pairs()
        adj = adjacency(problem, np.flatnonzero(~busy[pairs.first] & ~busy[pairs.second]))
        open_ = ~busy
        chosen = []
        for i in self._rng.permutation(np.flatnonzero(~busy)):
            if not open_[i]:
                continue
            lo, hi = adj.indptr[i], adj.indptr[i + 1]
            ok = open_[adj.indices[lo:hi]]
            if not ok.any():
                continue
            pick = self._rng.integers(ok.sum())
            k, p = adj.indices[lo:hi][ok][pick], adj.data[lo:hi][ok][pick] - 1
            open_[i] = open_[k] = False
            chosen.append(p)
        return np.asarray(chosen, dtype=np.int64)


def _best_gain(problem: AllocationProblem, which: np.ndarray) -> np.ndarray:
    """Normalized throughput of the pairs ``which`` on their best type."""
    return pair_gain(problem, which).max(axis=1, initial=0.0)


class PublishedGandiva:
    """The published ``gandiva`` policy's steps, defects included (``--gavel-compat``).

    State: job id -> partner id (None: alone), the published ``_assigned_combinations``.
    Each call first forgets every job that runs alone, every pair with a departed member and
    every pair whose normalized throughput, summed over all types (0 if a member's co-located
    rate is 0 on any type), is below 1. If the jobs' demand fits the cluster, every job gets
    an equal share. Otherwise the jobs not in a pair, in id order, are paired by n tries of
    Python's ``random.Random(seed).sample(jobs, 2)`` (n = how many there were; a try that
    draws unequal scale factors is lost), with no throughput check, and the rest run alone.
    Every combination c of the C formed gets ``(W_j / C) / s_c`` of every type, each row
    scaled down to sum <= 1; shares on types where a job cannot run, and those of drawn
    pairs that are not candidates (``problem.pairs``), are left unused, as the published
    mechanism never runs them.
    """

    def __init__(self, seed: int):
        self._rng = random.Random(seed)
        self._partner: dict[int, int | None] = {}

    def allocate(self, problem: AllocationProblem) -> tuple[np.ndarray, np.ndarray, list[str]]:
        ids = [int(v) for v in problem.job_ids]
        row = {jid: i for i, jid in enumerate(ids)}
        W, s = problem.capacities, problem.scale_factors
        pairs, lookup = problem.job_pairs(), PairIndex(problem)
        gain = _summed_gain(problem)
        drop = set()
        for jid, other in self._partner.items():
            if (jid not in row or other is None or other not in row
                    or (p := int(lookup(row[jid], row[other]))) < 0 or gain[p] < 1.0):
                drop.update((jid, other))
        for jid in drop:
            self._partner.pop(jid, None)
        x = np.zeros((problem.num_jobs, problem.num_types))
        pair_x = np.zeros((len(pairs), problem.num_types))
        if s.sum() <= W.sum():
            x[:] = _published_shares(W, s)
            return x * runnable(problem), pair_x, ["demand fits the cluster: equal shares, no packing"]
        pool = sorted(jid for jid in ids if jid not in self._partner)
        for _ in range(len(pool)):
            if len(pool) < 2:
                break
            a, b = self._rng.sample(pool, 2)
            if s[row[a]] == s[row[b]]:
                pool.remove(a)
                pool.remove(b)
                self._partner[a], self._partner[b] = b, a
        self._partner.update(dict.fromkeys(pool))
        singles = [row[jid] for jid, other in self._partner.items() if other is None]
        duos = [(row[a], row[b]) for a, b in self._partner.items() if b is not None and a < b]
        shares = _published_shares(W, np.array([s[i] for i in singles] + [s[a] for a, _ in duos], dtype=float))
        x[singles] = shares[:len(singles)] * runnable(problem)[singles]
        p = lookup([a for a, _ in duos], [b for _, b in duos]) if duos else np.zeros(0, dtype=np.int64)
        known = p >= 0
        pair_x[p[known]] = shares[len(singles):][known] * pair_runnable(problem, p[known])
        return x, pair_x, [f"gavel_compat: {len(duos)} random pair(s), {int((~known).sum())} of them not "
                           "candidates (left idle)"]


def _summed_gain(problem: AllocationProblem) -> np.ndarray:
    """(P,): the published normalized throughput of each candidate pair, summed over all
    types, 0 where a member's co-located rate is 0 on any type."""
    pairs = problem.job_pairs()
    T = problem.throughputs
    alone = np.stack([T[pairs.first], T[pairs.second]], axis=2)
    ratio = np.divide(pairs.rates, alone, out=np.zeros(pairs.rates.shape), where=alone > 0)
    return np.where((pairs.rates > 0).all(axis=(1, 2)), ratio.sum(axis=(1, 2)), 0.0)


def _published_shares(W: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``(W_j / C) / s_c`` on every type, rows scaled down to sum <= 1 (no runnable mask)."""
    return equal_shares(W, scale, np.ones((scale.size, W.size), dtype=bool))
