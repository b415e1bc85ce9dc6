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
- level walk (:func:`plan_job`): A = align(now, deadline); for level q, walk the periods in
  [start, A) backward, the job taking the largest level <= min(q, free) in each (the last
  period runs to the deadline, not to A); the first q whose walk reaches the remaining
  iterations wins, at the period where it did (the *point*);
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
- leftover GPUs (:func:`allocate_free`): each job's *marginal GPU time* is (GPU·s of its plan
  re-made with its next level now − GPU·s of its plan) / added GPUs (+∞ for a job without
  GPUs, −∞ for one that cannot grow within the free GPUs); the job with the largest value
  that fits takes its next level and its re-made plan, the values are recomputed, repeat.

Times and counts only; nothing about traces or simulators.
"""

from __future__ import annotations

import math
import sys
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

#: the published "infinitely late" deadline of a best-effort job, and its ±∞ marginal values
MAXSIZE = float(sys.maxsize)


def align(start: float, t: float, slot: float) -> float:
    """start + ⌈(t − start)/Δ⌉Δ, as the published ``align_to_time_slot`` computes it."""
    k = (t - start) // slot
    if (t - start) % slot > 0:
        k += 1
    return start + k * slot


@dataclass
class PlanJob:
    """One job for the planner: ``levels`` (the distinct GPU counts it may use, ascending), ``rates``
    (iterations/s at each level), iterations ``need``-ed, ``deadline``, and its current plan:
    ``gpus`` now, ``alloc`` (time -> GPUs from then on), ``end`` (GPUs held until), ``real_end``.
    Levels and rates are kept as lists: the plans read them one at a time, by bisection."""

    levels: list
    rates: list
    need: float
    deadline: float
    gpus: int = 0
    alloc: dict = field(default_factory=dict)
    end: float = 0.0
    real_end: float = 0.0

    def __post_init__(self) -> None:
        self.levels, self.rates = np.asarray(self.levels).tolist(), np.asarray(self.rates).tolist()

    def index(self, ceiling: float) -> int:
        """The position of the largest level <= ceiling (-1 if none)."""
        return bisect_right(self.levels, ceiling) - 1

    def rate(self, level: int) -> float:
        return self.rates[bisect_left(self.levels, level)]

    def fit(self, ceiling: float) -> int:
        """The largest level <= ceiling (0 if none)."""
        i = self.index(ceiling)
        return self.levels[i] if i >= 0 else 0

    def next_level(self) -> int:
        """The level above ``gpus`` (``gpus`` itself at the top)."""
        i = bisect_right(self.levels, self.gpus)
        return self.levels[i] if i < len(self.levels) else self.gpus


@dataclass
class Outcome:
    """A plan for one job and the profile it leaves: ``on_time`` iff ``real_end`` <= deadline;
    ``free`` is that profile before equal neighbours merge (merged on first use: the leftover
    GPUs' trial plans are compared by their GPU time, and only the one taken needs it)."""

    alloc: dict
    end: float
    real_end: float
    free: dict
    on_time: bool

    @cached_property
    def profile(self) -> dict:
        return merged(self.free)


def merged(d: dict) -> dict:
    """Time-sorted ``d`` without keys whose value equals the previous key's (published ``merge_dict``)."""
    out, last = {}, None
    for t in sorted(d):
        value = d[t]
        if value != last:
            out[t] = last = value
    return out


def value_at(profile: dict, t: float, total: int) -> int:
    """The profile's free GPUs at ``t`` (the last breakpoint <= t; ``total`` before the first)."""
    if t in profile:
        return profile[t]
    keys = sorted(profile)
    i = bisect_right(keys, t) - 1
    return profile[keys[i]] if i >= 0 else total


def gpu_seconds(alloc: dict, end: float) -> float:
    """GPU·s of a plan: each GPU count times the time to the next change, the last to ``end``."""
    times = sorted(alloc)
    total = sum(alloc[a] * (b - a) for a, b in zip(times, times[1:]))
    return total + alloc[times[-1]] * (end - times[-1])


def plan_job(profile: dict, now: float, job: PlanJob, slot: float, total: int, assigned: int = 0) -> Outcome:
    """The published plan of ``job`` on ``profile`` from ``now`` (module doc), optionally with
    ``assigned`` GPUs fixed for the first period."""
    orig = profile
    P = dict(profile)
    A = align(now, job.deadline, slot)
    if A >= now and A not in P:
        P[A] = value_at(P, A, total)
    alloc = {now: 0}
    need, start = job.need, now
    if assigned:
        okeys = sorted(orig)
        i = bisect_right(okeys, now)
        nxt = okeys[i] if i < len(okeys) else A
        real_end = math.ceil(now + need / job.rate(assigned))
        end = align(now, real_end, slot)
        alloc[now] = assigned
        if nxt >= end and job.deadline >= real_end:
            last = total
            for k in okeys[bisect_left(okeys, now):bisect_left(okeys, end)]:
                last = P[k]
                P[k] -= assigned
            if end not in orig:
                P[end] = last
            return Outcome(merged(alloc), end, real_end, P, real_end <= job.deadline)
        need -= ((nxt - now) if nxt != A else job.deadline - now) * job.rate(assigned)
        P[now] -= assigned
        start = nxt
        alloc[nxt] = 0
    keys = sorted(P)
    window = keys[bisect_left(keys, start):bisect_left(keys, A)]
    levels = [q for q in job.levels if q <= total]
    alloc = {**dict.fromkeys(window, 0), **alloc}  # every period's count, 0 unless set
    found = _level_walk(P, window, A, job, need, levels)
    if found is not None:
        q, q_prev, point = found
        return _forward(P, orig, keys, alloc, now, start, A, job, need, q, q_prev, point, slot, total)
    q_max = levels[-1] if levels else 0
    lat = None
    la = 0
    for e in keys[bisect_left(keys, start):bisect_right(keys, A)]:
        if lat is not None:
            alloc[lat] = la
            P[lat] -= la
            if la:
                need -= ((e - lat) if e != A else job.deadline - lat) * job.rate(la)
        lat, la = e, job.fit(min(q_max, P[e]))
    return _after_deadline(P, orig, alloc, now, start, A, job, need, slot, total)


def _level_walk(P: dict, window: list, A: float, job: PlanJob, need: float,
                levels: list) -> tuple[int, int, float] | None:
    """(q, level below q, point) of the first level whose backward walk reaches ``need``: at level
    q a period of f free GPUs runs the largest level <= min(q, f), i.e. position min(q's, f's)."""
    if not window:
        return None
    levels_of = job.levels
    fits = [bisect_right(levels_of, P[k]) - 1 for k in window]
    seconds = [b - a for a, b in zip(window, window[1:])] + [job.deadline - window[-1]]
    rates = job.rates
    q_prev = 0
    for qi, q in enumerate(levels):
        back = 0.0
        for i in range(len(window) - 1, -1, -1):
            f = fits[i]
            j = qi if qi < f else f
            if j >= 0:
                back += seconds[i] * rates[j]
                if back >= need:
                    return q, q_prev, window[i]
        q_prev = q
    return None


def _forward(P: dict, orig: dict, keys: list, alloc: dict, now: float, start: float, A: float, job: PlanJob,
             need: float, q: int, q_prev: int, point: float, slot: float, total: int) -> Outcome:
    """Lay the plan forward from ``start``: level ``q_prev`` before ``point``, ``q`` from it."""
    ks = keys[bisect_left(keys, start):bisect_right(keys, A)]
    before, after = job.index(q_prev), job.index(q)
    levels, rates = job.levels, job.rates
    end = None
    for i in range(1, len(ks)):
        lat, e = ks[i - 1], ks[i]
        c, f = after if lat >= point else before, bisect_right(levels, P[lat]) - 1
        j = c if c < f else f
        la = levels[j] if j >= 0 else 0
        alloc[lat] = la
        P[lat] -= la
        if la:
            iters = ((e - lat) if e != A else job.deadline - lat) * rates[j]
            if lat < point or iters < need:
                need -= iters
            else:
                left = math.ceil(need / rates[j])
                end, real_end = lat + align(0, left, slot), lat + left
                break
    if end is None:
        lat = ks[-1]
        la = job.fit(min(q if lat >= point else q_prev, P[lat]))
        alloc[lat] = la
        P[lat] -= la
        left = math.ceil(need / job.rate(la))
        end, real_end = lat + align(0, left, slot), lat + left
    if end not in orig:
        P[end] = _last_in(orig, start, end, total)
    return Outcome(merged(alloc), end, real_end, P, real_end <= job.deadline)


def _last_in(profile: dict, start: float, end: float, default: int) -> int:
    """The value at the profile's last breakpoint in [start, end) (``default`` if none)."""
    keys = sorted(profile)
    i = bisect_left(keys, end) - 1
    return profile[keys[i]] if i >= 0 and keys[i] >= start else default


def _after_deadline(P: dict, orig: dict, alloc: dict, now: float, start: float, A: float, job: PlanJob,
                    need: float, slot: float, total: int) -> Outcome:
    """A job that misses its deadline: after A, the largest level that fits in each period until
    done; past the last breakpoint, min(G, cap) GPUs."""
    lat = max(A, start)
    for e in [k for k in sorted(P) if k > lat]:
        q = job.fit(P[lat])
        alloc[lat] = q
        if not q:
            lat = e
            continue
        iters = (e - lat) * job.rate(q)
        if iters >= need:
            real_end = math.ceil(lat + need / job.rate(q))
            end = align(now, real_end, slot)
            base = value_at(orig, lat, total)
            if lat != end:
                P[lat] = base - q
            if end not in orig:
                P[end] = base
            return Outcome(merged(alloc), end, real_end, P, real_end <= job.deadline)
        need -= iters
        P[lat] -= q
        lat = e
    q = job.fit(min(total, job.levels[-1]))
    alloc[lat] = q
    real_end = math.ceil(lat + need / job.rate(q))
    end = align(now, real_end, slot)
    P[lat] = total - q
    P[end] = total
    return Outcome(merged(alloc), end, real_end, P, real_end <= job.deadline)


def plan_all(jobs: list[PlanJob], now: float, slot: float, total: int) -> tuple[dict, bool]:
    """Plan ``jobs`` in the given (deadline) order on {now: G}; each job's plan is stored on it.
    Returns the profile left and whether every job is on time (published ``estimate_all_jobs``)."""
    profile = {now: total}
    ok = True
    for job in jobs:
        out = plan_job(profile, now, job, slot, total)
        job.alloc, job.end, job.real_end, profile = out.alloc, out.end, out.real_end, out.profile
        job.gpus = job.alloc.get(now, 0)
        ok &= out.on_time
    return profile, ok


def _without(profile: dict, job: PlanJob, total: int) -> dict:
    """``profile`` with ``job``'s plan handed back (published ``get_marginal``'s first half): with
    breakpoints added at the plan's changes and end, every breakpoint k with first change <= k < end
    gains the GPUs the plan holds at k. (The published code adds each change's difference to the
    breakpoints after it, one change at a time; in integers the sums telescope to this.)"""
    changes = sorted(job.alloc.items())
    first, end = changes[0][0], job.end
    added = {k for k in job.alloc if k not in profile}
    if end not in profile:
        added.add(end)
    keys = list(profile)
    keys += sorted(added)
    keys.sort()  # two sorted runs when the profile is in time order, as merged() leaves it: one merge
    out, last, free, held, i = {}, None, total, 0, 0
    for k in keys:
        free = profile.get(k, free)
        while i < len(changes) and changes[i][0] <= k:
            held = changes[i][1]
            i += 1
        value = free + held if first <= k < end else free
        if value != last:  # equal neighbours merged on the way (merged())
            out[k] = last = value
    return out


@dataclass
class Leftover:
    """What :func:`allocate_free` leaves: the ``profile``, the plan ends its scale-ups
    ``replaced``, and the jobs ``ranked`` as its last sort by marginal GPU time left them."""

    profile: dict
    replaced: set
    ranked: list


def allocate_free(jobs: list[PlanJob], profile: dict, now: float, slot: float, total: int) -> Leftover:
    """Hand the GPUs free now to ``jobs`` by marginal GPU time (module doc); updates the jobs'
    plans. ``jobs`` in planning (deadline) order break ties."""
    free = total - sum(j.gpus for j in jobs)
    replaced: set = set()
    if free <= 0:
        return Leftover(profile, replaced, list(range(len(jobs))))
    marginal = [0.0] * len(jobs)
    trial: list[Outcome | None] = [None] * len(jobs)

    def measure(i: int) -> None:
        job = jobs[i]
        up = job.next_level()
        if up - job.gpus > free or up == job.gpus:
            marginal[i], trial[i] = -MAXSIZE, None
            return
        out = plan_job(_without(profile, job, total), now, job, slot, total, assigned=up)
        trial[i] = out
        marginal[i] = MAXSIZE if job.gpus == 0 else \
            (gpu_seconds(out.alloc, out.end) - gpu_seconds(job.alloc, job.end)) / (up - job.gpus)

    for i in range(len(jobs)):
        measure(i)
    order = sorted(range(len(jobs)), key=lambda i: -marginal[i])
    while free > 0:
        pick = next((i for i in order if trial[i] is not None and jobs[i].next_level() - jobs[i].gpus <= free), None)
        if pick is None:
            break
        job, out = jobs[pick], trial[pick]
        free -= job.next_level() - job.gpus
        profile = out.profile
        replaced.add(job.end)
        job.alloc, job.end, job.real_end, job.gpus = out.alloc, out.end, out.real_end, out.alloc[now]
        for i in range(len(jobs)):
            if jobs[i].next_level() > jobs[i].gpus:
                measure(i)
            elif i == pick:
                marginal[i], trial[i] = -MAXSIZE, None
        order = sorted(order, key=lambda i: -marginal[i])
    return Leftover(profile, replaced, order)
