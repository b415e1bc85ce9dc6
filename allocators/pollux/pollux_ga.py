"""Pollux's published genetic algorithm (``pollux-ga``), the baseline the exact program (``pollux``)
is compared against on the same terms (:class:`~allocators.pollux.pollux.Decision`).

As the published policy runs it (NSGA-II over states of GPUs per job per node, J × K):

- two objectives, both maximized: the p-mean of the jobs' scaled speedups, a job whose row
  differs from its current GPUs times its restart penalty; and cluster utility, Σ_j speedup_j
  over the GPUs of the nodes in use (speedups unscaled, no penalty);
- 100 states, 100 generations (the first is the initial population); each generation makes 100
  children: parents by binary tournaments (lower Pareto rank, then larger crowding distance,
  then a coin), one-cut crossover between jobs with probability 0.9 (children swap the rows
  before the cut), then every child is mutated and repaired, and duplicates are dropped;
  survivors by non-dominated sorting and crowding distance;
- mutation: a row goes back to the current GPUs with probability 0.1; a row is picked with
  probability 0.1 and each of its entries zeroed with probability 0.1; entry (j, n) of a node
  with a free GPU is chosen with probability p1 + p2 − p1·p2 (p1: 1 / jobs that fit on the node,
  p2: 1 / the jobs already on it, for those) and set to a uniform count between its value and the
  node's GPUs;
- repair, in order: on each node only the first (in job order) of the jobs spread over nodes
  keeps its GPUs there; a job's GPUs beyond its cap are dropped on randomly ordered nodes; on each
  node GPUs beyond its capacity are dropped from the last jobs;
- the initial population is the current allocation and the last decision's Pareto set, each row
  given to its own job (the published code hands rows over by rank, which can give one job's row
  to another: not reproduced); the plan is the member of the Pareto set with the largest p-mean.

Seeded: one generator per policy (``seed``), so a run is reproducible.
"""

from __future__ import annotations

import numpy as np

from allocators.base import ProgramClass
from allocators.pollux.pollux import Decision, Pollux, SpeedupPolicy
from allocators.slot_plans import JobsView
from formulations.pollux import EPSILON, P, p_mean, solve_allocation
from optim import SolveOptions

#: most nodes one job may span (the published repair's limit)
MAX_NODES = 16


class PolluxGA(SpeedupPolicy):
    name = "pollux-ga"
    needs_goodput = True
    program = ProgramClass.HEURISTIC
    adaptive_batch = True

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, p: float = P, seed: int = 0,
                 population: int = 100, generations: int = 100, compare: bool = False):
        """``compare``: also solve the exact program (as ``pollux`` does, time limit included) at every
        decision and log its p-mean beside the GA's (``program_p_mean`` in solves.csv)."""
        super().__init__(solver, options)
        self.p, self.size, self.generations = p, population, generations
        self.rng = np.random.default_rng(seed)
        self.compare = compare
        self.front: dict[int, np.ndarray] = {}
        self._log: list[dict] = []

    def choose(self, view: JobsView, terms: Decision) -> np.ndarray:
        state, value = self.evolve(terms)
        row = {"time": view.now, "jobs": int(terms.jobs.size), "p_mean": value}
        if self.compare:
            problem = terms.problem()
            exact = solve_allocation(problem, self.solver, Pollux(self.solver, self.options).solve_options())
            chosen = exact.option >= 0
            row["program_p_mean"] = p_mean(np.where(chosen, problem.speedup[np.maximum(exact.option, 0)], 0.0),
                                           self.p)
            row["program_status"] = exact.status.value
        self._log.append(row)
        return state

    def evolve(self, terms: Decision) -> tuple[np.ndarray, float]:
        """The plan of largest p-mean in the last generation's Pareto set, and its p-mean."""
        rng = self.rng
        pop = _unique(self.repair(self._seeds(terms), terms))
        f = self.evaluate(pop, terms)
        for _ in range(self.generations - 1):
            rank, crowd = _rank_and_crowding(f, rng)
            children = self.offspring(pop, rank, crowd, terms)
            merged = _unique(np.concatenate([pop, children]))
            fm = self.evaluate(merged, terms)
            keep = _survivors(fm, self.size, rng)
            pop, f = merged[keep], fm[keep]
        rank, _ = _rank_and_crowding(f, rng)
        best = np.flatnonzero(rank == 0)
        pick = best[int(np.argmax(f[best, 0]))]
        self.front = {int(j): pop[best][:, k] for k, j in enumerate(terms.jobs)}
        return pop[pick], float(f[pick, 0])

    def _seeds(self, terms: Decision) -> np.ndarray:
        """The current allocation, then the last Pareto set with each job's own row (zeros for new jobs)."""
        size = len(next(iter(self.front.values()))) if self.front else 0
        seeds = np.zeros((1 + size, *terms.current.shape), dtype=np.int64)
        seeds[0] = terms.current
        for k, j in enumerate(terms.jobs.tolist()):
            if j in self.front:
                seeds[1:, k] = self.front[j]
        return seeds

    def evaluate(self, pop: np.ndarray, terms: Decision) -> np.ndarray:
        """(states, 2): p-mean with the restart penalty, cluster utility."""
        replicas = pop.sum(axis=2)
        spread = ((pop > 0).sum(axis=2) > 1).astype(np.int64)
        jobs = np.arange(terms.jobs.size)[None, :]
        s = terms.speedup[jobs, spread, replicas]
        changed = (pop != terms.current[None]).any(axis=2)
        scored = s * np.where(changed, terms.penalty[None, :], 1.0)
        base = scored + EPSILON
        mean = np.exp(np.log(base).mean(axis=1)) if self.p == 0 else (base ** self.p).mean(axis=1) ** (1 / self.p)
        used = ((pop.sum(axis=1) > 0) * terms.capacity[None, :]).sum(axis=1)
        utility = np.where(used > 0, (s / terms.scale).sum(axis=1) / np.maximum(used, 1), 0.0)
        return np.column_stack([mean, utility])

    def offspring(self, pop: np.ndarray, rank: np.ndarray, crowd: np.ndarray, terms: Decision) -> np.ndarray:
        rng, n = self.rng, pop.shape[0]
        picks = np.concatenate([rng.permutation(n) for _ in range(-(-2 * self.size // n))])[:2 * self.size]
        a, b = picks[0::2], picks[1::2]
        better = (rank[a] < rank[b]) | ((rank[a] == rank[b]) & (crowd[a] > crowd[b]))
        tie = (rank[a] == rank[b]) & (crowd[a] == crowd[b])
        winners = np.where(tie, np.where(rng.random(a.size) < 0.5, a, b), np.where(better, a, b))
        mothers, fathers = pop[winners[0::2]], pop[winners[1::2]]
        J = pop.shape[1]
        cut = np.where(rng.random(mothers.shape[0]) < 0.9, rng.integers(0, J, mothers.shape[0]), 0)
        before = np.arange(J)[None, :] < cut[:, None]
        first = np.where(before[:, :, None], fathers, mothers)
        second = np.where(before[:, :, None], mothers, fathers)
        return self.repair(self.mutate(np.concatenate([first, second]), terms), terms)

    def mutate(self, pop: np.ndarray, terms: Decision) -> np.ndarray:
        rng = self.rng
        pop = pop.copy()
        C, J, K = pop.shape
        reset = rng.random((C, J)) < 0.1
        pop[reset] = np.broadcast_to(terms.current, pop.shape)[reset]
        zero = (rng.random((C, J)) < 0.1)[:, :, None] & (rng.random(pop.shape) < 0.1)
        pop[zero] = 0
        free = terms.capacity[None, :] - pop.sum(axis=1)
        fits = np.broadcast_to((free >= 1)[:, None, :], pop.shape)
        on = fits & (pop > 0)
        p1 = fits / np.maximum(fits.sum(axis=1, keepdims=True), 1)
        p2 = on / np.maximum(on.sum(axis=1, keepdims=True), 1)
        chosen = rng.random(pop.shape) < p1 + p2 - p1 * p2
        top = np.broadcast_to(terms.capacity[None, None, :], pop.shape)
        grown = rng.integers(pop, top + 1)
        return np.where(chosen, grown, pop)

    def repair(self, pop: np.ndarray, terms: Decision) -> np.ndarray:
        pop = pop.copy()
        spread = ((pop > 0).sum(axis=2) > 1)[:, :, None] & (pop > 0)
        pop[spread & (np.cumsum(spread, axis=1) > 1)] = 0
        order = np.argsort(self.rng.random(pop.shape), axis=2)
        shuffled = np.take_along_axis(pop, order, axis=2)
        before = np.cumsum(shuffled, axis=2) - shuffled
        shuffled = np.minimum(shuffled, np.maximum(terms.most[None, :, None] - before, 0))
        shuffled[np.cumsum(shuffled > 0, axis=2) > MAX_NODES] = 0
        pop = np.empty_like(pop)
        np.put_along_axis(pop, order, shuffled, axis=2)
        before = np.cumsum(pop, axis=1) - pop
        return np.minimum(pop, np.maximum(terms.capacity[None, None, :] - before, 0))

    def solve_log(self) -> list[dict]:
        return self._log


def _unique(pop: np.ndarray) -> np.ndarray:
    _, first = np.unique(pop.reshape(pop.shape[0], -1), axis=0, return_index=True)
    return pop[np.sort(first)]


def _fronts(f: np.ndarray) -> np.ndarray:
    """Pareto rank of each point (0: not dominated), both objectives maximized."""
    ge = (f[:, None, :] >= f[None, :, :]).all(axis=2)
    gt = (f[:, None, :] > f[None, :, :]).any(axis=2)
    dominates = ge & gt
    rank = np.full(f.shape[0], -1)
    left = np.ones(f.shape[0], dtype=bool)
    level = 0
    while left.any():
        top = left & ~dominates[left].any(axis=0)
        rank[top] = level
        left &= ~top
        level += 1
    return rank


def _crowding(f: np.ndarray) -> np.ndarray:
    n = f.shape[0]
    if n <= 2:
        return np.full(n, np.inf)
    dist = np.zeros(n)
    for k in range(f.shape[1]):
        order = np.argsort(f[:, k], kind="stable")
        span = f[order[-1], k] - f[order[0], k]
        dist[order[[0, -1]]] = np.inf
        if span > 0:
            dist[order[1:-1]] += (f[order[2:], k] - f[order[:-2], k]) / span
    return dist


def _rank_and_crowding(f: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    rank = _fronts(f)
    crowd = np.zeros(f.shape[0])
    for level in np.unique(rank):
        members = np.flatnonzero(rank == level)
        crowd[members] = _crowding(f[members])
    return rank, crowd


def _survivors(f: np.ndarray, size: int, rng) -> np.ndarray:
    rank, crowd = _rank_and_crowding(f, rng)
    order = np.lexsort((rng.random(f.shape[0]), -crowd, rank))
    return order[:size]
