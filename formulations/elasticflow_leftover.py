"""ElasticFlow's published leftover-GPU hand-out (pkusys/ElasticFlow, ``scheduler.py``:
``allocate_free_gpus`` with ``get_marginal``) with the candidate plans of all jobs kept and made
again only where they changed.

Each round values every job that can take its next level within the free GPUs by the GPU time
of its plan re-made with that level fixed now, on the profile with its own plan handed back.
:func:`formulations.elasticflow_events.allocate_free` re-plans every job after every step, one
job at a time, as published; :class:`Candidates` keeps the handed-back profiles as one row per
job on the union of all breakpoints, updated by the job taken each round, and makes a job's
candidate again only where its row's breakpoints or fits changed up to the last time it read
(the published code re-plans it to the same result), in compiled loops
(:mod:`formulations.elasticflow_kernels`). Every candidate, plan and profile equals the
one-job-at-a-time code's to the last bit. This pays off from some 5 jobs on; below that
:func:`allocate_free` hands out as published.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import elasticflow_events as events
from . import elasticflow_kernels as kernels
from .elasticflow_compiled_plan import plan
from .elasticflow_events import Leftover, PlanJob, align, gpu_seconds


@dataclass
class Steps:
    """A step function as arrays: ``values[k]`` from ``times[k]`` on (a profile's free GPUs, a plan's
    GPU counts)."""

    times: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, d: dict) -> Steps:
        items = sorted(d.items())
        return cls(np.array([t for t, _ in items], dtype=float), np.array([v for _, v in items], dtype=np.int64))

    @classmethod
    def merged(cls, times: np.ndarray, values: np.ndarray) -> Steps:
        """Without the times whose value equals the previous one's (published ``merge_dict``)."""
        keep = np.ones(values.size, dtype=bool)
        keep[1:] = values[1:] != values[:-1]
        return cls(times[keep], values[keep])

    def as_dict(self) -> dict:
        return dict(zip(self.times.tolist(), self.values.tolist()))

#: the number of jobs from which :func:`allocate_free` hands out on :class:`Candidates`
BATCH_FROM = 5


class Candidates:
    """The jobs of one hand-out: their levels and rates padded (levels past a job's last are never
    <= a free count); each job's profile with its own plan handed back as a row of ``free`` on
    ``grid`` (every breakpoint, plan change, end and A), with ``moves`` where it changes; and the
    candidate plan last made for each job (``kind``: 0 none, left to ``plan_job``; 1 done in its
    first period; 2 made on its periods), ``fresh`` while nothing it read has changed since.
    The loops over them are compiled (:mod:`formulations.elasticflow_kernels`)."""

    #: columns the buffers hold past the first grid (they double when the grid outgrows them)
    spare = 64

    def __init__(self, jobs: list[PlanJob], profile: Steps, now: float, slot: float, total: int):
        J = len(jobs)
        width = max((len(job.levels) for job in jobs), default=0)
        self.levels = np.full((J, width), np.iinfo(np.int64).max)
        self.rates = np.zeros((J, width))
        for i, job in enumerate(jobs):
            self.levels[i, :len(job.levels)], self.rates[i, :len(job.rates)] = job.levels, job.rates
        self.nlev = (self.levels <= total).sum(axis=1)
        self.count = np.array([len(job.levels) for job in jobs], dtype=np.int64)
        #: fit[i, f + 1]: position of job i's largest level <= f free GPUs, f from -1 to ``top``
        self.top = max(total, max((job.levels[-1] for job in jobs if job.levels), default=0))
        self.fit = kernels.fits(self.levels, self.top)
        self.deadline = np.array([job.deadline for job in jobs])
        self.need = np.array([job.need for job in jobs])
        self.A = np.array([align(now, job.deadline, slot) for job in jobs])
        self.now, self.slot, self.total = float(now), float(slot), int(total)
        plans = [sorted(job.alloc.items()) for job in jobs]
        times = np.array([t for plan in plans for t, _ in plan], dtype=float)
        values = np.array([v for plan in plans for _, v in plan], dtype=np.int64)
        first = np.cumsum([0] + [len(plan) for plan in plans])
        ends = np.array([job.end for job in jobs], dtype=float)
        grid = _unique(np.concatenate([profile.times, self.A[self.A >= now], ends, times]))
        #: buffers with spare columns (the grid only grows); ``grid``, ``base``, ``free``, ``moves``
        #: are views of their first ``size`` columns
        self.size, cap = grid.size, grid.size + self.spare
        self._grid, self._base = np.empty(cap), np.empty(cap, dtype=np.int64)
        self._free, self._moves = np.empty((J, cap), dtype=np.int64), np.zeros((J, cap), dtype=bool)
        self._grid[:grid.size] = grid
        self._base[:grid.size] = np.concatenate(([total], profile.values))[
            np.searchsorted(profile.times, grid, side="right")]
        kernels.held(grid, self._base[:grid.size], times, values, first, ends, self._free)
        self._moves[:, 1:grid.size] = self._free[:, 1:grid.size] != self._free[:, :grid.size - 1]
        self._view()
        self.fresh, self.kind = np.zeros(J, dtype=bool), np.zeros(J, dtype=np.int8)
        #: per job: its candidate's level, GPU·s, the last time it read, end and real end; for kind
        #: 2 its periods (start times), GPUs per period and the period meeting the need
        self.up, self.cost, self.reach = np.zeros(J, dtype=np.int64), np.zeros(J), np.zeros(J)
        self.end, self.real_end = np.zeros(J), np.zeros(J)
        self.length, self.stop = np.zeros(J, dtype=np.int64), np.zeros(J, dtype=np.int64)
        self.starts, self.gpus = np.zeros((J, cap)), np.zeros((J, cap), dtype=np.int64)

    def _view(self) -> None:
        n = self.size
        self.grid, self.base = self._grid[:n], self._base[:n]
        self.free, self.moves = self._free[:, :n], self._moves[:, :n]

    def _room(self, size: int) -> None:
        """Buffers of at least ``size`` columns (twice as many if they grow), the first ``self.size`` kept."""
        if size <= self._grid.size:
            return
        cap, n, J = 2 * size, self.size, self._free.shape[0]
        grid, base = np.empty(cap), np.empty(cap, dtype=np.int64)
        free, moves = np.empty((J, cap), dtype=np.int64), np.zeros((J, cap), dtype=bool)
        grid[:n], base[:n], free[:, :n], moves[:, :n] = self.grid, self.base, self.free, self.moves
        self._grid, self._base, self._free, self._moves = grid, base, free, moves
        self.starts = np.pad(self.starts, ((0, 0), (0, cap - self.starts.shape[1])))
        self.gpus = np.pad(self.gpus, ((0, 0), (0, cap - self.gpus.shape[1])))
        self._view()

    def handed_back(self, i: int) -> Steps:
        """Job i's profile with its own plan handed back (published ``get_marginal``'s first half, as
        :func:`~formulations.elasticflow_events._without`): every breakpoint k with first change <=
        k < end gains the GPUs the plan holds at k."""
        return Steps.merged(self.grid, self.free[i])

    def marginal(self, has: np.ndarray, ups: np.ndarray, spare: int, held: np.ndarray, value: np.ndarray) -> None:
        """Each job's marginal GPU time into ``value`` (:func:`~formulations.elasticflow_kernels.marginal`:
        the candidate of a job with ``has`` GPUs, ``ups`` GPUs fixed now, is the GPU·s of
        ``plan_job(self.handed_back(i), ..., assigned=up)``, made again only where not fresh)."""
        kernels.marginal(has, ups, spare, held, value, self._grid, self.size, self._free, self._moves, self.levels,
                         self.count, self.rates, self.nlev, self.fit, self.top, self.A, self.deadline, self.need,
                         self.now, self.slot, self.total, self.up, self.cost, self.kind, self.fresh, self.end,
                         self.real_end, self.reach, self.length, self.stop, self.starts, self.gpus)

    def outcome(self, i: int, up: int) -> tuple[Steps, float, float, Steps]:
        """Job i's plan with ``up`` GPUs now on its row's profile, its end and real end, and the
        profile it leaves: the fresh candidate's (the row's profile less what the published
        ``ef_sim_allocation`` subtracts: :func:`~formulations.elasticflow_kernels.outcome`), else
        the compiled ``plan_job``'s."""
        if self.fresh[i]:
            plan_times, plan_gpus, end, real_end, times, free = kernels.outcome(
                i, self._grid, self.size, self._free, self._moves, self.now, self.A[i], self.up[i], self.end[i],
                self.real_end[i], self.kind[i], self.length[i], self.stop[i], self.starts, self.gpus)
        else:
            keys, vals = kernels.row(self._grid, self.size, self._free, self._moves, i)
            plan_times, plan_gpus, end, real_end, _, times, free = plan(
                keys, vals, self.now, self.levels[i], self.count[i], self.rates[i], self.need[i], self.deadline[i],
                self.slot, self.total, up)
        return Steps(plan_times, plan_gpus), float(end), float(real_end), Steps(times, free)

    def update(self, i: int, plan: Steps, end: float, profile: Steps) -> None:
        """Job i took ``plan`` (held until ``end``), leaving ``profile``: the grid gains its new times,
        every other row the profile's change, row i its new profile without its new plan; a
        candidate stops being fresh where a row's breakpoints or fits change up to the last time
        it read (:func:`~formulations.elasticflow_kernels.update`)."""
        self._room(self.size + profile.times.size + 1)
        self.size = kernels.update(self._grid, self.size, self._free, self._moves, self._base, profile.times,
                                   profile.values, self.total, i, plan.times, plan.values, float(end), self.fresh,
                                   self.reach, self.fit, self.top)
        self._view()


def _unique(t: np.ndarray) -> np.ndarray:
    t = np.sort(t)
    return t[np.concatenate(([True], t[1:] != t[:-1]))] if t.size else t


def allocate_free(jobs: list[PlanJob], profile: dict, now: float, slot: float, total: int) -> Leftover:
    """Hand the GPUs free now to ``jobs`` by marginal GPU time, as
    :func:`formulations.elasticflow_events.allocate_free` (same plans, profile and ranking), on
    :class:`Candidates` from :data:`BATCH_FROM` jobs on."""
    if len(jobs) < BATCH_FROM:
        return events.allocate_free(jobs, profile, now, slot, total)
    return batched(jobs, profile, now, slot, total)


def batched(jobs: list[PlanJob], profile: dict, now: float, slot: float, total: int) -> Leftover:
    """:func:`formulations.elasticflow_events.allocate_free` on :class:`Candidates`: each job that can
    take its next level within the free GPUs is valued by (GPU·s of its plan re-made with that
    level now − GPU·s of its plan) / added GPUs (+∞ for a job without GPUs, −∞ for one that cannot
    grow); the jobs are sorted by value, ties in their previous order (first: planning order); the
    first that can grow takes its level and re-made plan; repeat while GPUs are free. Updates the
    jobs' plans."""
    free = total - sum(job.gpus for job in jobs)
    replaced: set = set()
    if free <= 0:
        return Leftover(profile, replaced, list(range(len(jobs))))
    left = Steps.of(profile)
    candidates = Candidates(jobs, left, now, slot, total)
    gpus = np.array([job.gpus for job in jobs], dtype=np.int64)
    ups = np.array([job.next_level() for job in jobs], dtype=np.int64)
    cost = np.array([gpu_seconds(job.alloc, job.end) for job in jobs])
    value = np.empty(len(jobs))
    order = np.arange(len(jobs))
    while True:
        candidates.marginal(gpus, ups, free, cost, value)
        order = order[np.argsort(-value[order], kind="stable")]
        grows = ((ups > gpus) & (ups - gpus <= free))[order]
        if free <= 0 or not grows.any():
            break
        pick = int(order[np.argmax(grows)])
        job = jobs[pick]
        plan, end, real_end, left = candidates.outcome(pick, ups[pick])
        free -= int(ups[pick] - gpus[pick])
        replaced.add(job.end)
        job.alloc, job.end, job.real_end, job.gpus = plan.as_dict(), end, real_end, int(plan.values[0])
        candidates.update(pick, plan, end, left)
        gpus[pick], ups[pick], cost[pick] = job.gpus, job.next_level(), gpu_seconds(job.alloc, job.end)
    return Leftover(left.as_dict(), replaced, order.tolist())
