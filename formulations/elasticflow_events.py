"""ElasticFlow's published planner on its own event-time profile (pkusys/ElasticFlow,
``scheduler.py``: ``ef_sim_allocation``, ``get_marginal``, ``allocate_free_gpus``).

:func:`formulations.elasticflow.greedy_plan` restates the published greedy on a regular slot
grid; this module replays it as the published code computes it (the ``ef`` policy). The free-GPU
profile is a step function on event times t_0 < ... < t_m (``free[i]`` GPUs on [t_i, t_{i+1}),
``free[m]`` after t_m) that starts as {now: G} and gains a breakpoint at each planned job's
slot-aligned deadline and end; equal neighbours are merged after every change, so a job's
periods are the intervals between other jobs' ends and deadlines, not slots. Rules of the
replay, with Δ the scheduling slot and align(s, t) = s + ⌈(t − s)/Δ⌉Δ:

- levels: the job's allowed GPU counts ascending, up to the cluster size;
- level walk: A = align(now, deadline); for level q, walk the periods in [start, A) backward,
  the job taking the largest level <= min(q, free) in each (the last period runs to the
  deadline, not to A); the first q whose walk reaches the remaining iterations wins, at the
  period where it did (the *point*);
- forward plan: periods before the point at the largest level <= min(q_prev, free), from the
  point at <= min(q, free); the job ends in the period where its iterations are done, at
  real = period start + ⌈iterations left / rate⌉ s, and holds its GPUs until
  end = period start + align(0, real − period start);
- no level reaches the deadline: the largest level <= min(q_max, free) up to A, then after A
  the largest level that fits in each period until done, and past the profile's last
  breakpoint min(G, cap) GPUs (the published fallback, which rewrites the profile there as
  G − GPUs and G after the end); where the job ends after its deadline, the free count it
  restores is the original profile's at its last period (the published code reuses a variable
  that can hold an older period's value there: not replayed);
- a fixed first period (``assigned``): the job runs ``assigned`` GPUs from now to the next
  breakpoint (or its end, if it finishes there in time), then as above;
- leftover GPUs (:func:`formulations.elasticflow_leftover.allocate_free`): by the published
  marginal GPU time, each candidate plan made on the profile with the job's own plan handed
  back.

Profiles and plans are arrays (:class:`Profile`; a plan is its change times and GPU counts);
a period's level is position min(level's, free GPUs') among the job's levels, and the walks
are cumulative sums over the periods, in the published code's order of additions, so every
plan equals the published one to the last bit. :func:`level_walk` and :func:`forward_walk`
take one row per job: the leftover GPUs' candidate plans are made for all jobs at once.
Times and counts only; nothing about traces or simulators.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np

#: the published "infinitely late" deadline of a best-effort job, and its ±∞ marginal values
MAXSIZE = float(sys.maxsize)


def align(start: float, t: float, slot: float) -> float:
    """start + ⌈(t − start)/Δ⌉Δ, as the published ``align_to_time_slot`` computes it."""
    k = (t - start) // slot
    if (t - start) % slot > 0:
        k += 1
    return start + k * slot


def align_all(start: float | np.ndarray, t: np.ndarray, slot: float) -> np.ndarray:
    """:func:`align` elementwise (numpy's float floor division and remainder are Python's)."""
    d = t - start
    return start + (np.floor_divide(d, slot) + (np.remainder(d, slot) > 0)) * slot


@dataclass
class Profile:
    """Free GPUs as a step function of time: ``free[i]`` on [times[i], times[i+1]), the last step
    to infinity, the cluster's ``total`` before the first; no two neighbours equal."""

    times: np.ndarray
    free: np.ndarray

    @classmethod
    def flat(cls, now: float, total: int) -> Profile:
        return cls(np.array([float(now)]), np.array([int(total)], dtype=np.int64))

    @classmethod
    def merged(cls, times: np.ndarray, free: np.ndarray) -> Profile:
        """``times`` without those whose value equals the previous one's (published ``merge_dict``)."""
        keep = np.ones(free.size, dtype=bool)
        keep[1:] = free[1:] != free[:-1]
        return cls(times[keep], free[keep])

    def at(self, t: float, total: int) -> int:
        """Free GPUs at ``t``."""
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        return int(self.free[i]) if i >= 0 else total

    def has(self, t: float) -> bool:
        i = int(np.searchsorted(self.times, t))
        return i < self.times.size and self.times[i] == t


def gpu_seconds(times: np.ndarray, counts: np.ndarray, end: float) -> float:
    """GPU·s of a plan: each GPU count times the time to the next change, the last to ``end``
    (summed in time order, as the published ``get_marginal``)."""
    head = np.cumsum(counts[:-1] * np.diff(times))
    return (float(head[-1]) if head.size else 0) + int(counts[-1]) * (end - float(times[-1]))


@dataclass
class PlanJob:
    """One job for the planner: ``levels`` (the distinct GPU counts it may use, ascending), ``rates``
    (iterations/s at each level), iterations ``need``-ed, ``deadline``, and its current plan:
    ``gpus`` now, ``counts[k]`` GPUs from ``times[k]`` on (``times[0]`` = now), held until ``end``,
    done at ``real_end``; ``cost`` its GPU·s (:func:`gpu_seconds`)."""

    levels: np.ndarray
    rates: np.ndarray
    need: float
    deadline: float
    gpus: int = 0
    times: np.ndarray = field(default_factory=lambda: np.zeros(0))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    end: float = 0.0
    real_end: float = 0.0
    cost: float = 0.0

    def __post_init__(self) -> None:
        self.levels = np.asarray(self.levels, dtype=np.int64)
        self.rates = np.asarray(self.rates, dtype=float)
        self.times = np.asarray(self.times, dtype=float)
        self.counts = np.asarray(self.counts, dtype=np.int64)

    def index(self, ceiling: float) -> int:
        """The position of the largest level <= ceiling (-1 if none)."""
        return int(np.searchsorted(self.levels, ceiling, side="right")) - 1

    def rate(self, level: int) -> float:
        """The rate of the smallest level >= ``level`` (the first level's for 0, as published)."""
        return float(self.rates[np.searchsorted(self.levels, level)])

    def fit(self, ceiling: float) -> int:
        """The largest level <= ceiling (0 if none)."""
        i = self.index(ceiling)
        return int(self.levels[i]) if i >= 0 else 0

    def next_level(self) -> int:
        """The level above ``gpus`` (``gpus`` itself at the top)."""
        i = int(np.searchsorted(self.levels, self.gpus, side="right"))
        return int(self.levels[i]) if i < self.levels.size else self.gpus

    def adopt(self, out: Outcome) -> None:
        """Take ``out`` as the job's plan."""
        self.times, self.counts, self.end, self.real_end = out.times, out.counts, out.end, out.real_end
        self.gpus = int(out.counts[0])
        self.cost = gpu_seconds(out.times, out.counts, out.end)


@dataclass
class Outcome:
    """A plan for one job (change ``times``, GPU ``counts``, ``end``, ``real_end``; ``on_time`` iff
    ``real_end`` <= deadline) and the ``profile`` it leaves."""

    times: np.ndarray
    counts: np.ndarray
    end: float
    real_end: float
    profile: Profile
    on_time: bool


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


def _put(times: np.ndarray, free: np.ndarray, t: float, value: int) -> tuple[np.ndarray, np.ndarray]:
    """The breakpoint ``t`` set to ``value`` (added if absent)."""
    i = int(np.searchsorted(times, t))
    if i < times.size and times[i] == t:
        free[i] = value
        return times, free
    return _insert(times, i, t), _insert(free, i, value)


def _insert(a: np.ndarray, i: int, value) -> np.ndarray:
    return np.concatenate((a[:i], np.array([value], dtype=a.dtype), a[i:]))


def _outcome(times: list | np.ndarray, counts: list | np.ndarray, end: float, real_end: float, pt: np.ndarray,
             pf: np.ndarray, job: PlanJob) -> Outcome:
    """An outcome with equal neighbours merged in the plan and in the profile."""
    plan = Profile.merged(np.asarray(times, dtype=float), np.asarray(counts, dtype=np.int64))
    return Outcome(plan.times, plan.free, end, real_end, Profile.merged(pt, pf), real_end <= job.deadline)


def plan_job(profile: Profile, now: float, job: PlanJob, slot: float, total: int, assigned: int = 0) -> Outcome:
    """The published plan of ``job`` on ``profile`` from ``now`` (module doc), optionally with
    ``assigned`` GPUs fixed for the first period."""
    A = align(now, job.deadline, slot)
    pt, pf, added = profile.times, profile.free.copy(), -1  # added: where A was inserted
    if A >= now and not profile.has(A):
        added = int(np.searchsorted(pt, A))
        pt, pf = _insert(pt, added, A), _insert(pf, added, profile.at(A, total))
    need, start, head = job.need, now, ([], [])
    if assigned:
        i = int(np.searchsorted(profile.times, now, side="right"))
        nxt = float(profile.times[i]) if i < profile.times.size else A
        rate = job.rate(assigned)
        real_end = math.ceil(now + need / rate)
        end = align(now, real_end, slot)
        if nxt >= end and job.deadline >= real_end:
            return _first_period(profile, pt, pf, added, now, job, assigned, end, real_end, total)
        need -= ((nxt - now) if nxt != A else job.deadline - now) * rate
        pf[np.searchsorted(pt, now)] -= assigned
        start, head = nxt, ([now], [assigned])
    w0, wa = int(np.searchsorted(pt, start)), int(np.searchsorted(pt, A))
    nlev = int(np.searchsorted(job.levels, total, side="right"))
    if wa > w0:
        window = pt[w0:wa]
        seconds = (np.concatenate((window[1:], [job.deadline])) - window)[None, :]
        fits = (np.searchsorted(job.levels, pf[w0:wa], side="right") - 1)[None, :]
        ones = np.ones_like(fits, dtype=bool)
        found, point = level_walk(ones, seconds, fits, np.array([nlev]), job.rates[None, :], np.array([need]))
        if found[0] >= 0:
            point_t = float(window[point[0]])
            walk = forward_walk(ones, seconds, fits, (window >= point_t)[None, :], found, job.levels[None, :],
                                job.rates[None, :], np.array([need]))
            return _forward(profile, pt, pf, w0, wa, A, now, start, job, head, int(found[0]), point_t, walk, slot,
                            total)
    return _late(profile, pt, pf, w0, A, now, start, job, head, need, nlev, slot, total)


def _first_period(profile: Profile, pt: np.ndarray, pf: np.ndarray, added: int, now: float, job: PlanJob,
                  assigned: int, end: float, real_end: float, total: int) -> Outcome:
    """The job finishes in time in its fixed first period: the breakpoints of the original profile
    in [now, end) lose ``assigned`` GPUs (an inserted A keeps its count, as published) and ``end``
    gets the last one's original count."""
    lo, hi = np.searchsorted(profile.times, [now, end])
    at = np.arange(lo, hi)
    pf[at + ((added >= 0) & (at >= added))] -= assigned
    if not profile.has(end):
        pt, pf = _put(pt, pf, end, int(profile.free[hi - 1]) if hi > lo else total)
    return _outcome([now], [assigned], end, real_end, pt, pf, job)


def _forward(profile: Profile, pt: np.ndarray, pf: np.ndarray, w0: int, wa: int, A: float, now: float, start: float,
             job: PlanJob, head: tuple, found: int, point: float, walk: tuple, slot: float, total: int) -> Outcome:
    """Lay the plan forward from ``start`` (:func:`forward_walk`); without a period meeting the
    need the job runs at A what fits at its level, and ends when done at that rate."""
    gpus, rate, left, stop = (a[0] for a in walk)
    s = int(stop)
    counts = gpus.copy()
    if s >= 0:
        counts[s + 1:] = 0
        pf[w0:w0 + s + 1] -= gpus[:s + 1]
        lat, n = float(pt[w0 + s]), math.ceil(left[s] / rate[s])
        times = pt[w0:wa]
    else:
        pf[w0:wa] -= gpus
        q = int(job.levels[found]) if A >= point else (int(job.levels[found - 1]) if found else 0)
        la = job.fit(min(q, pf[wa]))
        pf[wa] -= la
        lat, n = A, math.ceil(left[-1] / job.rate(la))
        times, counts = pt[w0:wa + 1], np.append(counts, la)
    end, real_end = lat + align(0, n, slot), lat + n
    if not profile.has(end):
        i = int(np.searchsorted(profile.times, end)) - 1
        pt, pf = _put(pt, pf, end, int(profile.free[i]) if i >= 0 and profile.times[i] >= start else total)
    return _outcome(np.append(head[0], times), np.append(head[1], counts).astype(np.int64), end, real_end, pt, pf,
                    job)


def _late(profile: Profile, pt: np.ndarray, pf: np.ndarray, w0: int, A: float, now: float, start: float,
          job: PlanJob, head: tuple, need: float, nlev: int, slot: float, total: int) -> Outcome:
    """A job no level brings to its deadline: the largest level <= min(q_max, free) in each period
    up to A, then the largest level that fits in each period until done; past the last
    breakpoint, min(G, cap) GPUs (the published fallback)."""
    q_max = int(job.levels[nlev - 1]) if nlev else 0
    times, free = pt.tolist(), pf.tolist()
    alloc = {now: 0}
    if head[0]:
        alloc.update({now: head[1][0], start: 0})
    wa, za = np.searchsorted(pt, A, side="left"), int(np.searchsorted(pt, A, side="right"))
    alloc.update(dict.fromkeys(times[w0:wa], 0))
    for k in range(w0, za - 1):  # every period in [start, A] but the last
        la = job.fit(min(q_max, free[k]))
        alloc[times[k]] = la
        free[k] -= la
        if la:
            e = times[k + 1]
            need -= ((e - times[k]) if e != A else job.deadline - times[k]) * job.rate(la)
    k = int(np.searchsorted(pt, max(A, start)))
    while k + 1 < len(times):
        q = job.fit(free[k])
        alloc[times[k]] = q
        if q:
            iters = (times[k + 1] - times[k]) * job.rate(q)
            if iters >= need:
                real_end = math.ceil(times[k] + need / job.rate(q))
                end = align(now, real_end, slot)
                base = profile.at(times[k], total)
                if times[k] != end:
                    free[k] = base - q
                pt, pf = np.array(times), np.array(free, dtype=np.int64)
                if not profile.has(end):
                    pt, pf = _put(pt, pf, end, base)
                return _outcome(sorted(alloc), [alloc[t] for t in sorted(alloc)], end, real_end, pt, pf, job)
            need -= iters
            free[k] -= q
        k += 1
    q = job.fit(min(total, int(job.levels[-1])))
    alloc[times[k]] = q
    real_end = math.ceil(times[k] + need / job.rate(q))
    end = align(now, real_end, slot)
    free[k] = total - q
    pt, pf = _put(np.array(times), np.array(free, dtype=np.int64), end, total)
    return _outcome(sorted(alloc), [alloc[t] for t in sorted(alloc)], end, real_end, pt, pf, job)


def plan_all(jobs: list[PlanJob], now: float, slot: float, total: int) -> tuple[Profile, bool]:
    """Plan ``jobs`` in the given (deadline) order on {now: G}; each job adopts its plan.
    Returns the profile left and whether every job is on time (published ``estimate_all_jobs``)."""
    profile = Profile.flat(now, total)
    ok = True
    for job in jobs:
        out = plan_job(profile, now, job, slot, total)
        job.adopt(out)
        profile = out.profile
        ok &= out.on_time
    return profile, ok

