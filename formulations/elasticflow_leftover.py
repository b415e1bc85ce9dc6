"""ElasticFlow's published leftover-GPU hand-out (pkusys/ElasticFlow, ``scheduler.py``:
``allocate_free_gpus`` with ``get_marginal``) with the candidate plans of many jobs made at once.

Each round values every job that can take its next level within the free GPUs by the GPU time
of its plan re-made with that level fixed now, on the profile with its own plan handed back.
:func:`formulations.elasticflow_events.allocate_free` re-plans every job after every step, one
job at a time, as published; :class:`Candidates` keeps the handed-back profiles as one row per
job on the union of all breakpoints, updated by the job taken each round, makes the candidate
plans of all jobs at once (numpy arrays over jobs and breakpoints), and makes a job's candidate
again only where its row's breakpoints or fits changed up to the last time it read (the
published code re-plans it to the same result). Every candidate, plan and profile equals the
one-job-at-a-time code's to the last bit. Arrays pay off from some 30 jobs on; below that
:func:`allocate_free` hands out as published (numpy's per-call cost exceeds the work).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import elasticflow_events as events
from .elasticflow_events import MAXSIZE, Leftover, PlanJob, align, gpu_seconds, plan_job


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

#: the number of jobs from which :func:`allocate_free` makes the candidates at once
BATCH_FROM = 28


def align_all(start: float | np.ndarray, t: np.ndarray, slot: float) -> np.ndarray:
    """:func:`~formulations.elasticflow_events.align` elementwise (numpy's float floor division and
    remainder are Python's)."""
    d = t - start
    return start + (np.floor_divide(d, slot) + (np.remainder(d, slot) > 0)) * slot


def level_walk(window: np.ndarray, seconds: np.ndarray, fits: np.ndarray, nlev: np.ndarray, rates: np.ndarray,
               need: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row (a job; columns its periods, ``window`` marks those in [start, A)): the first level
    position q < ``nlev`` whose backward walk reaches ``need``, at level position q a period of
    ``fits`` (position of the largest level <= its free GPUs) running position min(q, fit) for
    ``seconds``, and the column where it does; -1 and -1 where none does. The first level for
    every row, then all the others at once for the rows it does not bring to the deadline."""
    rows, cols = seconds.shape
    ok = window & (fits >= 0) & (nlev > 0)[:, None]
    fitted = rates[np.arange(rows)[:, None], np.maximum(fits, 0)] * seconds
    step = np.where(fits >= 0, rates[:, :1] * seconds, fitted) * ok
    hit = ok & (np.cumsum(step[:, ::-1], axis=1)[:, ::-1] >= need[:, None])  # sequential, from the last period
    found = np.where(hit.any(axis=1), 0, -1)
    more = np.flatnonzero((found < 0) & (nlev > 1))
    if more.size:
        q = np.arange(1, int(nlev[more].max()))[:, None, None]
        okq = ok[more] & (q < nlev[more][:, None])
        step = np.where(fits[more] >= q, rates[more, 1:q.size + 1].T[:, :, None] * seconds[more], fitted[more]) * okq
        hits = okq & (np.cumsum(step[..., ::-1], axis=2)[..., ::-1] >= need[more][:, None])
        reached = hits.any(axis=2)
        first = reached.argmax(axis=0)
        found[more] = np.where(reached.any(axis=0), first + 1, -1)
        hit[more] = hits[first, np.arange(more.size)]
    return found, np.where(found >= 0, cols - 1 - hit[:, ::-1].argmax(axis=1), -1)


def forward_walk(window: np.ndarray, seconds: np.ndarray, fits: np.ndarray, after: np.ndarray, found: np.ndarray,
                 levels: np.ndarray, rates: np.ndarray,
                 need: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The forward plan of each row's window periods: position ``found`` in the periods ``after``
    the point, the one below before, capped by the fit. Returns each period's GPUs and rate,
    the iterations left before each period and after the last (one more column; subtracted in
    period order), and the first period at or after the point whose iterations meet them (-1: none)."""
    j = np.minimum(found[:, None] - ~after, fits)
    at = np.arange(fits.shape[0])[:, None] * levels.shape[1] + np.maximum(j, 0)
    gpus = levels.take(at) * (j >= 0)
    rate = rates.take(at)
    runs = window & (gpus > 0)
    iters = seconds * rate * runs
    left = np.subtract.accumulate(np.concatenate([need[:, None], iters], axis=1), axis=1)
    done = runs & after & (iters >= left[:, :-1])
    return gpus, rate, left, np.where(done.any(axis=1), done.argmax(axis=1), -1)


class Candidates:
    """The jobs of one hand-out: their levels and rates padded (levels past a job's last are never
    <= a free count); each job's profile with its own plan handed back as a row of ``free`` on
    ``grid`` (every breakpoint, plan change, end and A), with ``moves`` where it changes; and the
    candidate plan last made for each job (``kind``: 0 none, left to ``plan_job``; 1 done in its
    first period; 2 made on its periods), ``fresh`` while nothing it read has changed since."""

    def __init__(self, jobs: list[PlanJob], profile: Steps, now: float, slot: float, total: int):
        J = len(jobs)
        width = max((len(job.levels) for job in jobs), default=0)
        self.levels = np.full((J, width), np.iinfo(np.int64).max)
        self.rates = np.zeros((J, width))
        for i, job in enumerate(jobs):
            self.levels[i, :len(job.levels)], self.rates[i, :len(job.rates)] = job.levels, job.rates
        self.nlev = (self.levels <= total).sum(axis=1)
        self.last = np.array([job.levels[-1] if job.levels else 0 for job in jobs], dtype=np.int64)
        #: fit[i, f + 1]: position of job i's largest level <= f free GPUs, f from -1 to ``top``
        self.top = max(total, int(self.last.max(initial=0)))
        self.fit = np.full((J, self.top + 2), -1)
        for i, job in enumerate(jobs):
            self.fit[i] = np.searchsorted(job.levels, np.arange(-1, self.top + 1), side="right") - 1
        self.deadline = np.array([job.deadline for job in jobs])
        self.need = np.array([job.need for job in jobs])
        self.A = np.array([align(now, job.deadline, slot) for job in jobs])
        self.now, self.slot, self.total = now, slot, total
        #: each job's plan (GPUs from each change on) and end
        self.plans = [Steps.of(job.alloc) for job in jobs]
        self.ends = np.array([job.end for job in jobs])
        self.grid = _unique(np.concatenate([profile.times, self.A[self.A >= now], self.ends]
                                           + [plan.times for plan in self.plans]))
        self.base = _on(profile, self.grid, total)
        self.free = self.base + np.array([_held(plan, end, self.grid) for plan, end in zip(self.plans, self.ends)]
                                         ).reshape(J, self.grid.size)
        self.moves = np.zeros(self.free.shape, dtype=bool)
        self.moves[:, 1:] = self.free[:, 1:] != self.free[:, :-1]
        self.fresh, self.kind = np.zeros(J, dtype=bool), np.zeros(J, dtype=np.int8)
        #: per job: its candidate's level, GPU·s, the last time it read, end and real end; for kind
        #: 2 its periods (start times), GPUs per period and the period meeting the need
        self.up, self.cost, self.reach = np.zeros(J, dtype=np.int64), np.zeros(J), np.zeros(J)
        self.end, self.real_end = np.zeros(J), np.zeros(J)
        self.length, self.stop = np.zeros(J, dtype=np.int64), np.zeros(J, dtype=np.int64)
        self.starts, self.gpus = np.zeros((J, 0)), np.zeros((J, 0), dtype=np.int64)

    def handed_back(self, i: int) -> Steps:
        """Job i's profile with its own plan handed back (published ``get_marginal``'s first half, as
        :func:`~formulations.elasticflow_events._without`): every breakpoint k with first change <=
        k < end gains the GPUs the plan holds at k."""
        return Steps.merged(self.grid, self.free[i])

    def costs(self, rows: np.ndarray, ups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """GPU·s of each ``rows`` job's plan made with ``ups`` GPUs fixed now on its profile with its
        own plan handed back, i.e. of ``plan_job(self.handed_back(i), ..., assigned=up)``, where
        it finishes in its first period or a level reaches its deadline and a period meets its
        need (``done``); NaN for the others. Made again only where not fresh."""
        stale = ~self.fresh[rows]
        if stale.any():
            self._make(rows[stale], ups[stale])
        return self.cost[rows], self.kind[rows] > 0

    def _make(self, rows: np.ndarray, ups: np.ndarray) -> None:
        """Make the candidates of ``rows``, all at once."""
        now, n, grid, size = self.now, rows.size, self.grid, self.grid.size
        A, deadline, moves = self.A[rows], self.deadline[rows], self.moves[rows]
        # the first period at ``up`` GPUs to nxt (A without a breakpoint after now); done there
        first = np.where(moves.any(axis=1), moves.argmax(axis=1), size)
        nxt = np.where(first < size, grid.take(np.minimum(first, size - 1)), A)
        rate = self.rates[rows, (self.levels[rows] < ups[:, None]).sum(axis=1)]
        real_end = np.ceil(now + self.need[rows] / rate)
        end = align_all(now, real_end, self.slot)
        fast = (nxt >= end) & (deadline >= real_end)
        cost = np.where(fast, ups * (end - now), np.nan)
        need = self.need[rows] - np.where(nxt != A, nxt - now, deadline - now) * rate
        # the periods in [nxt, A): where the row's profile changes; packed left, the deadline after
        # the last (its period runs to the deadline, not to A)
        cols = np.arange(size)
        window = moves & (cols >= np.where(fast, size, first)[:, None]) & (cols < np.searchsorted(grid, A)[:, None])
        ri, ci = np.nonzero(window)
        length = np.bincount(ri, minlength=n)
        width = int(length.max(initial=0))
        pos = np.arange(ri.size) - (np.cumsum(length) - length)[ri]
        starts = np.empty((n, width + 1))
        starts[:] = deadline[:, None]
        starts[ri, pos] = grid.take(ci)
        fits = np.full((n, width), -1)
        at = rows.take(ri)
        level = np.clip(self.free.take(at * size + ci), -1, self.top) + 1
        fits[ri, pos] = self.fit.take(at * self.fit.shape[1] + level)
        valid = np.arange(width) < length[:, None]
        kind = fast.astype(np.int8)
        todo = np.flatnonzero(~fast & (length > 0))
        if todo.size:
            made, ok, gpus, stop, ends = self._made(rows[todo], ups[todo], need[todo], starts[todo], fits[todo],
                                                    starts[todo, 1:] - starts[todo, :-1], valid[todo])
            cost[todo], kind[todo[ok]] = made, 2
            t, k = todo[ok], rows[todo[ok]]
            if width > self.starts.shape[1]:
                grow = ((0, 0), (0, max(width, 2 * self.starts.shape[1]) - self.starts.shape[1]))
                self.starts, self.gpus = np.pad(self.starts, grow), np.pad(self.gpus, grow)
            self.starts[k, :width], self.gpus[k, :width] = starts[t, :width], gpus[ok]
            self.length[k], self.stop[k], end[t], real_end[t] = length[t], stop[ok], ends[0][ok], ends[1][ok]
        self.up[rows], self.cost[rows], self.kind[rows], self.fresh[rows] = ups, cost, kind, kind > 0
        self.end[rows], self.real_end[rows], self.reach[rows] = end, real_end, np.where(fast, nxt, np.maximum(nxt, A))

    def _made(self, rows: np.ndarray, ups: np.ndarray, need: np.ndarray, starts: np.ndarray, fits: np.ndarray,
              seconds: np.ndarray, valid: np.ndarray) -> tuple:
        """The candidate plans of ``rows`` on their packed periods: the level walk, the forward plan,
        and the GPU·s of ``up`` now, each period's GPUs to the period meeting the need, 0 after,
        equal neighbours merged (published ``merge_dict``, then ``get_marginal``'s sum in time
        order). Returns the GPU·s, ``ok`` where a level and a period were found, each period's
        GPUs, the period meeting the need, and (end, real end)."""
        levels, rates = self.levels[rows], self.rates[rows]
        n, width, k = rows.size, fits.shape[1], np.arange(rows.size)
        found, point = level_walk(valid, seconds, fits, self.nlev[rows], rates, need)
        after = np.arange(width)[None, :] >= point[:, None]
        gpus, rate, left, stop = forward_walk(valid, seconds, fits, after, found, levels, rates, need)
        ok = (found >= 0) & (stop >= 0)
        s = np.maximum(stop, 0)
        steps = np.ceil(left[k, s] / rate[k, s])
        end = starts[k, s] + align_all(0.0, steps, self.slot)
        value = np.empty((n, width + 1), dtype=np.int64)
        value[:, 0] = ups
        value[:, 1:] = gpus * (valid & (np.arange(width) <= s[:, None]))
        at = np.empty((n, width + 1))
        at[:, 0] = self.now
        at[:, 1:] = starts[:, :width]
        keep = np.ones((n, width + 1), dtype=bool)
        keep[:, 1:] = valid & (value[:, 1:] != value[:, :-1])
        following = _next(np.where(keep, np.arange(width + 1), width + 1))
        until = np.where(following <= width, at.take(k[:, None] * (width + 1) + np.minimum(following, width)),
                         end[:, None])
        cost = np.cumsum(value * (until - at) * keep, axis=1)[:, -1]  # the last kept change's to the end
        return np.where(ok, cost, np.nan), ok, gpus, stop, (end, starts[k, s] + steps)

    def outcome(self, i: int) -> tuple[Steps, float, float, Steps] | None:
        """Job i's candidate (None where left to ``plan_job``): its plan, end and real end, and the
        profile it leaves: the row's profile less what the published ``ef_sim_allocation``
        subtracts. Done in its first period: ``up`` on the breakpoints in [now, end), not on A where
        A is no breakpoint (the published code adds A to the profile and leaves it). Made on its
        periods: ``up`` to nxt and each period's GPUs to the next period (to A after the last), the
        last one's only to the end where the end falls inside it (the published code restores the
        count there)."""
        if not self.fresh[i]:
            return None
        up, end, real_end, A = int(self.up[i]), float(self.end[i]), float(self.real_end[i]), self.A[i]
        at = int(np.searchsorted(self.grid, end))
        times = self.grid if at < self.grid.size and self.grid[at] == end else np.insert(self.grid, at, end)
        row = self.free[i, np.searchsorted(self.grid, times, side="right") - 1]
        if self.kind[i] == 1:
            taken = up * (times < end)
            a = int(np.searchsorted(self.grid, A))
            if self.now < A < end and a and not self.moves[i, a]:
                after = self.moves[i, a:].argmax() + a if self.moves[i, a:].any() else self.grid.size
                taken[(times >= A) & (times < (self.grid[after] if after < self.grid.size else np.inf))] = 0
            return Steps(np.array([self.now]), np.array([up])), end, real_end, Steps.merged(times, row - taken)
        n, s = int(self.length[i]), int(self.stop[i])
        starts, gpus = self.starts[i, :n], self.gpus[i, :n] * (np.arange(n) <= s)
        after = starts[s + 1] if s + 1 < n else A
        keys = np.concatenate([[self.now], starts[:s + 1], [end if starts[s] < end < after else after]])
        held = np.concatenate([[up], gpus[:s + 1], [0]])
        left = Steps.merged(times, row - held[np.searchsorted(keys, times, side="right") - 1])
        plan = Steps.merged(np.concatenate([[self.now], starts]), np.concatenate([[up], gpus]))
        return plan, end, real_end, left

    def update(self, i: int, plan: Steps, end: float, profile: Steps) -> None:
        """Job i took ``plan`` (held until ``end``), leaving ``profile``: the grid gains its new times,
        every other row the profile's change, row i its new profile without its new plan; a
        candidate stops being fresh where a row's breakpoints or fits change up to the last time
        it read."""
        self.plans[i], self.ends[i] = plan, end
        new = np.append(profile.times, end)
        at = np.minimum(np.searchsorted(self.grid, new), self.grid.size - 1)
        new = _unique(new[self.grid[at] != new])
        if new.size:
            at = np.searchsorted(self.grid, new)
            self.free = np.insert(self.free, at, self.free[:, at - 1], axis=1)
            self.moves = np.insert(self.moves, at, False, axis=1)
            self.base = np.insert(self.base, at, self.base[at - 1])
            self.grid = np.insert(self.grid, at, new)
        base = _on(profile, self.grid, self.total)
        delta = base - self.base
        turns = np.flatnonzero(delta[1:] != delta[:-1]) + 1
        shift = np.flatnonzero(delta)
        fresh = np.flatnonzero(self.fresh)
        if fresh.size and (turns.size or shift.size):
            read, free = self.reach[fresh][:, None], self.free[fresh]
            # a row's breakpoint appears or goes where the change turns and the row was flat or now is
            step = free[:, turns] - free[:, turns - 1]
            moved = (step == 0) | (step == delta[turns - 1] - delta[turns])
            stale = (moved & (self.grid[turns] <= read)).any(axis=1)
            # fits change only below a row's largest level
            old = free[:, shift]
            near = np.flatnonzero(np.minimum(old, old + delta[shift]).min(axis=1, initial=self.top) < self.last[fresh])
            if near.size:
                row, old = fresh[near, None], old[near]
                refit = self.fit[row, np.clip(old, -1, self.top) + 1] != self.fit[
                    row, np.clip(old + delta[shift], -1, self.top) + 1]
                stale[near] |= (refit & (self.grid[shift] <= read[near])).any(axis=1)
            self.fresh[fresh] = ~stale
        self.free += delta
        self.moves[:, turns] = self.free[:, turns] != self.free[:, turns - 1]
        self.free[i] = base + _held(plan, end, self.grid)
        self.moves[i, 1:] = self.free[i, 1:] != self.free[i, :-1]
        self.fresh[i] = False
        self.base = base


def _unique(t: np.ndarray) -> np.ndarray:
    t = np.sort(t)
    return t[np.concatenate(([True], t[1:] != t[:-1]))] if t.size else t


def _on(profile: Steps, times: np.ndarray, total: int) -> np.ndarray:
    """The profile's free GPUs at ``times`` (``total`` before its first breakpoint)."""
    return np.concatenate(([total], profile.values))[np.searchsorted(profile.times, times, side="right")]


def _held(plan: Steps, end: float, times: np.ndarray) -> np.ndarray:
    """The GPUs ``plan`` holds at ``times`` (from its first change to ``end``)."""
    at = np.searchsorted(plan.times, times, side="right") - 1
    return np.where((at >= 0) & (times < end), plan.values[np.maximum(at, 0)], 0)


def _next(marks: np.ndarray) -> np.ndarray:
    """Per cell, the smallest mark in the cells after it (``marks`` holds a column or the width)."""
    out = np.empty_like(marks)
    out[:, :-1] = np.minimum.accumulate(marks[:, :0:-1], axis=1)[:, ::-1]
    out[:, -1] = marks.shape[1]
    return out


def allocate_free(jobs: list[PlanJob], profile: dict, now: float, slot: float, total: int) -> Leftover:
    """Hand the GPUs free now to ``jobs`` by marginal GPU time, as
    :func:`formulations.elasticflow_events.allocate_free` (same plans, profile and ranking), with
    the candidates of all jobs made at once from :data:`BATCH_FROM` jobs on."""
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

    def remade(i: int) -> events.Outcome:
        return plan_job(candidates.handed_back(i).as_dict(), now, jobs[i], slot, total, assigned=int(ups[i]))

    def marginal() -> np.ndarray:
        value = np.full(len(jobs), -MAXSIZE)
        grows = (ups > gpus) & (ups - gpus <= free)
        value[grows & (gpus == 0)] = MAXSIZE
        rows = np.flatnonzero(grows & (gpus > 0))
        if rows.size:
            new, done = candidates.costs(rows, ups[rows])
            for k in np.flatnonzero(~done):
                out = remade(rows[k])
                new[k] = gpu_seconds(out.alloc, out.end)
            value[rows] = (new - cost[rows]) / (ups[rows] - gpus[rows])
        return value

    order = np.arange(len(jobs))
    while True:
        order = order[np.argsort(-marginal()[order], kind="stable")]
        grows = ((ups > gpus) & (ups - gpus <= free))[order]
        if free <= 0 or not grows.any():
            break
        pick = int(order[np.argmax(grows)])
        job, made = jobs[pick], candidates.outcome(pick)
        if made is None:
            out = remade(pick)
            made = Steps.of(out.alloc), out.end, out.real_end, Steps.of(out.profile)
        plan, end, real_end, left = made
        free -= int(ups[pick] - gpus[pick])
        replaced.add(job.end)
        job.alloc, job.end, job.real_end, job.gpus = plan.as_dict(), end, real_end, int(plan.values[0])
        candidates.update(pick, plan, end, left)
        gpus[pick], ups[pick], cost[pick] = job.gpus, job.next_level(), gpu_seconds(job.alloc, job.end)
    return Leftover(left.as_dict(), replaced, order.tolist())
