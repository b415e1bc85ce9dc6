"""ElasticFlow's published leftover-GPU hand-out (pkusys/ElasticFlow, ``scheduler.py``:
``allocate_free_gpus`` with ``get_marginal``) on the event-time planner of
:mod:`formulations.elasticflow_events`.

Each round values every job that can take its next level within the free GPUs by the GPU time
of its plan re-made with that level fixed now, on the profile with its own plan handed back
(published ``get_marginal``'s first half). :class:`Candidates` keeps these profiles as
one row per job on the union of all breakpoints, updated by the job taken each round, makes the
candidate plans of all jobs at once, and keeps each job's last candidate with the periods it
read: a job whose periods, free-GPU levels and work left are unchanged keeps its value (the
published code re-plans it to the same result). Arrays only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .elasticflow_events import (
    MAXSIZE,
    Outcome,
    PlanJob,
    Profile,
    align,
    align_all,
    forward_walk,
    gpu_seconds,
    level_walk,
    plan_job,
)


class Candidates:
    """The jobs of one hand-out: their levels and rates padded (levels past a job's last are never
    <= a free count); each job's profile with its own plan handed back as a row of ``free`` on
    ``grid`` (every breakpoint, plan change, end and A), with ``moves`` where it changes; and the
    candidate plan last made for each job (``kind``: 0 none, left to ``plan_job``; 1 done in its
    first period; 2 made on its periods), ``fresh`` while nothing it read has changed since."""

    def __init__(self, jobs: list[PlanJob], profile: Profile, now: float, slot: float, total: int):
        J = len(jobs)
        width = max((job.levels.size for job in jobs), default=0)
        self.levels = np.full((J, width), np.iinfo(np.int64).max)
        self.rates = np.zeros((J, width))
        for i, job in enumerate(jobs):
            self.levels[i, :job.levels.size], self.rates[i, :job.rates.size] = job.levels, job.rates
        self.nlev = (self.levels <= total).sum(axis=1)
        self.last = np.array([job.levels[-1] if job.levels.size else 0 for job in jobs], dtype=np.int64)
        #: fit[i, f + 1]: position of job i's largest level <= f free GPUs, f from -1 to ``top``
        self.top = max(total, max((int(job.levels[-1]) for job in jobs if job.levels.size), default=0))
        self.fit = np.full((J, self.top + 2), -1)
        for i, job in enumerate(jobs):
            self.fit[i] = np.searchsorted(job.levels, np.arange(-1, self.top + 1), side="right") - 1
        self.deadline = np.array([job.deadline for job in jobs])
        self.need = np.array([job.need for job in jobs])
        self.A = np.array([align(now, job.deadline, slot) for job in jobs])
        self.now, self.slot, self.total = now, slot, total
        times = [profile.times, self.A[self.A >= now], np.array([job.end for job in jobs])]
        self.grid = _unique(np.concatenate(times + [job.times for job in jobs]))
        self.base = _on(profile, self.grid, total)
        self.free = self.base + np.array([_held(job, self.grid) for job in jobs]).reshape(J, self.grid.size)
        self.moves = np.zeros(self.free.shape, dtype=bool)
        self.moves[:, 1:] = self.free[:, 1:] != self.free[:, :-1]
        self.fresh, self.kind = np.zeros(J, dtype=bool), np.zeros(J, dtype=np.int8)
        #: per job: its candidate's level, GPU·s, the last time it read, end and real end; for kind
        #: 2 its periods (start times), GPUs per period and the period meeting the need
        self.up, self.cost, self.reach = np.zeros(J, dtype=np.int64), np.zeros(J), np.zeros(J)
        self.end, self.real_end = np.zeros(J), np.zeros(J)
        self.length, self.stop = np.zeros(J, dtype=np.int64), np.zeros(J, dtype=np.int64)
        self.starts, self.gpus = np.zeros((J, 0)), np.zeros((J, 0), dtype=np.int64)

    def handed_back(self, i: int) -> Profile:
        """Job i's profile with its own plan handed back: every breakpoint k with first change <= k
        < end gains the GPUs the plan holds at k. (The published code adds each change's difference
        to the breakpoints after it, one change at a time; in integers the sums telescope to this.)"""
        return Profile.merged(self.grid, self.free[i])

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
        now, n, grid = self.now, rows.size, self.grid
        A, deadline, moves = self.A[rows], self.deadline[rows], self.moves[rows]
        # the first period at ``up`` GPUs to nxt (A without a breakpoint after now); done there
        first = np.where(moves.any(axis=1), moves.argmax(axis=1), grid.size)
        nxt = np.where(first < grid.size, grid[np.minimum(first, grid.size - 1)], A)
        rate = self.rates[rows, (self.levels[rows] < ups[:, None]).sum(axis=1)]
        real_end = np.ceil(now + self.need[rows] / rate)
        end = align_all(now, real_end, self.slot)
        fast = (nxt >= end) & (deadline >= real_end)
        cost = np.full(n, np.nan)
        cost[fast] = ups[fast] * (end[fast] - now)
        need = self.need[rows] - np.where(nxt != A, nxt - now, deadline - now) * rate
        # the periods in [nxt, A): where the row's profile changes, and A; packed left
        cols = np.arange(grid.size)
        a = np.searchsorted(grid, A)
        window = moves.copy()
        window[np.arange(n), np.minimum(a, grid.size - 1)] |= a < grid.size
        window &= (cols >= first[:, None]) & (cols < a[:, None])
        window[fast] = False
        ri, ci = np.nonzero(window)
        length = np.bincount(ri, minlength=n)
        width = int(length.max(initial=0))
        pos = np.arange(ri.size) - (np.cumsum(length) - length)[ri]
        starts = np.empty((n, width + 1))
        starts[:] = deadline[:, None]
        starts[ri, pos] = grid[ci]
        fits = np.full((n, width), -1)
        fits[ri, pos] = self.fit[rows[ri], np.clip(self.free[rows[ri], ci], -1, self.top) + 1]
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

    def outcome(self, i: int) -> Outcome | None:
        """Job i's candidate (None where left to ``plan_job``) and the profile it leaves: the row's
        profile less what the published ``ef_sim_allocation`` subtracts. Done in its first period:
        ``up`` on the breakpoints in [now, end), not on A where A is no breakpoint (the published
        code adds A to the profile and leaves it). Made on its periods: ``up`` to nxt and each
        period's GPUs to the next period (to A after the last), the last one's only to the end
        where the end falls inside it (the published code restores the count there)."""
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
            return Outcome(np.array([self.now]), np.array([up]), end, real_end, Profile.merged(times, row - taken),
                           real_end <= self.deadline[i])
        n, s = int(self.length[i]), int(self.stop[i])
        starts, gpus = self.starts[i, :n], self.gpus[i, :n] * (np.arange(n) <= s)
        after = starts[s + 1] if s + 1 < n else A
        keys = np.concatenate([[self.now], starts[:s + 1], [end if starts[s] < end < after else after]])
        held = np.concatenate([[up], gpus[:s + 1], [0]])
        left = Profile.merged(times, row - held[np.searchsorted(keys, times, side="right") - 1])
        plan = Profile.merged(np.concatenate([[self.now], starts]), np.concatenate([[up], gpus]))
        return Outcome(plan.times, plan.free, end, real_end, left, real_end <= self.deadline[i])

    def update(self, i: int, job: PlanJob, profile: Profile) -> None:
        """Job i took ``job``'s new plan, leaving ``profile``: the grid gains its new times, every
        other row the profile's change, row i its new profile without its new plan; a candidate
        stops being fresh where a row's breakpoints or fits change up to the last time it read."""
        new = np.append(profile.times, job.end)
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
        self.free[i] = base + _held(job, self.grid)
        self.moves[i, 1:] = self.free[i, 1:] != self.free[i, :-1]
        self.fresh[i] = False
        self.base = base


def _unique(t: np.ndarray) -> np.ndarray:
    t = np.sort(t)
    return t[np.concatenate(([True], t[1:] != t[:-1]))] if t.size else t


def _on(profile: Profile, times: np.ndarray, total: int) -> np.ndarray:
    """The profile's free GPUs at ``times`` (``total`` before its first breakpoint)."""
    return np.concatenate(([total], profile.free))[np.searchsorted(profile.times, times, side="right")]


def _held(job: PlanJob, times: np.ndarray) -> np.ndarray:
    """The GPUs ``job``'s plan holds at ``times`` (from its first change to its end)."""
    at = np.searchsorted(job.times, times, side="right") - 1
    return np.where((at >= 0) & (times < job.end), job.counts[np.maximum(at, 0)], 0)


def _next(marks: np.ndarray) -> np.ndarray:
    """Per cell, the smallest mark in the cells after it (``marks`` holds a column or the width)."""
    out = np.empty_like(marks)
    out[:, :-1] = np.minimum.accumulate(marks[:, :0:-1], axis=1)[:, ::-1]
    out[:, -1] = marks.shape[1]
    return out


@dataclass
class Leftover:
    """What :func:`allocate_free` leaves: the ``profile``, the plan ends its scale-ups
    ``replaced``, and the jobs ``ranked`` as its last sort by marginal GPU time left them."""

    profile: Profile
    replaced: set
    ranked: list


def allocate_free(jobs: list[PlanJob], profile: Profile, now: float, slot: float, total: int) -> Leftover:
    """Hand the GPUs free now to ``jobs`` by marginal GPU time (published ``allocate_free_gpus``):
    each job that can take its next level within the free GPUs is valued by (GPU·s of its plan
    re-made with that level now − GPU·s of its plan) / added GPUs (+∞ for a job without GPUs,
    −∞ for one that cannot grow); the jobs are sorted by value, ties in their previous order
    (first: planning order); the first that can grow takes its level and re-made plan; repeat
    while GPUs are free. Updates the jobs' plans."""
    free = total - sum(job.gpus for job in jobs)
    replaced: set = set()
    if free <= 0:
        return Leftover(profile, replaced, list(range(len(jobs))))
    candidates = Candidates(jobs, profile, now, slot, total)
    gpus = np.array([job.gpus for job in jobs], dtype=np.int64)
    ups = np.array([job.next_level() for job in jobs], dtype=np.int64)
    cost = np.array([job.cost for job in jobs])

    def remade(i: int) -> Outcome:
        return plan_job(candidates.handed_back(i), now, jobs[i], slot, total, assigned=int(ups[i]))

    def marginal() -> np.ndarray:
        value = np.full(len(jobs), -MAXSIZE)
        grows = (ups > gpus) & (ups - gpus <= free)
        value[grows & (gpus == 0)] = MAXSIZE
        rows = np.flatnonzero(grows & (gpus > 0))
        if rows.size:
            new, done = candidates.costs(rows, ups[rows])
            for k in np.flatnonzero(~done):
                out = remade(rows[k])
                new[k] = gpu_seconds(out.times, out.counts, out.end)
            value[rows] = (new - cost[rows]) / (ups[rows] - gpus[rows])
        return value

    order = np.arange(len(jobs))
    while True:
        order = order[np.argsort(-marginal()[order], kind="stable")]
        grows = ((ups > gpus) & (ups - gpus <= free))[order]
        if free <= 0 or not grows.any():
            break
        pick = int(order[np.argmax(grows)])
        job, out = jobs[pick], candidates.outcome(pick) or remade(pick)
        free -= int(ups[pick] - gpus[pick])
        profile = out.profile
        replaced.add(job.end)
        job.adopt(out)
        candidates.update(pick, job, profile)
        gpus[pick], ups[pick], cost[pick] = job.gpus, job.next_level(), job.cost
    return Leftover(profile, replaced, order.tolist())
