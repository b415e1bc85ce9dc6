"""Chronus (SoCC'21) as ElasticFlow's artifact runs it: leases, a lease MIP over guaranteed jobs,
greedy admission, and opportunistic use of what the guarantees leave free.

Time is cut into leases of Λ seconds (``lease``, 240 s as in ElasticFlow's runs) on the trace's
clock from t = 0 (lease k = [kΛ, (k+1)Λ), the published grid). Jobs run on their requested GPUs
(``elastic = False``). Parameters: ``lease``, ``time_limit`` (5 s, published) and ``mip_gap`` of
each MIP, ``refill``, ``defer_arrivals`` and ``cut_horizon`` (below).

Admission (every arrival, in arrival order; Chronus never declines, so :meth:`admit` accepts all
and the policy keeps its own classes). A deadline job asks for ``L = ceil(Ê / Λ)`` leases, where
Ê = :func:`formulations.chronus.estimated_duration` of its run time at the requested GPUs from the
throughput tables (``iterations / rate``, not the trace's ``duration``), and may use leases up to
``M`` = :func:`~formulations.chronus.last_lease` of its deadline. It is *guaranteed* iff
:func:`~formulations.chronus.greedy_admission` packs it together with the other guaranteed jobs
not yet planned by a MIP, into the leases after the current one, around the schedules the last
MIP kept for the others (``reserved``, the published cached solutions). Otherwise it is
*opportunistic*. Best-effort jobs are never guaranteed. As published, a decision that opens a
lease solves the MIP first and admits its arrivals afterwards, so a job guaranteed during lease k
first runs in lease k+1 or later. Arrivals are classified at the decision they arrive; with
``defer_arrivals`` they wait (not running) for the next boundary, as the published 240 s tick.

At each lease boundary (the first decision at or after ``kΛ``; :meth:`next_decision` asks for
it, but the engine keeps decisions at least Δ apart, so one may come late and lease 0 is then
shorter):

1. Guaranteed jobs update their lease counts: ``min(count, ceil((Ê - done) / Λ))`` (published:
   the count drops by one for every lease a job is given and never grows; ``done`` = run time
   so far, ``(iterations - remaining) / rate``). A job whose count ran out unfinished becomes
   opportunistic at top priority (the published ``fake_force_guarantee``); one that is late
   (``now + remaining / rate > deadline``) or whose ``L > M`` loses its guarantee and runs as a
   late job (the published ``LOWEST`` queue).
2. The lease MIP (:func:`~formulations.chronus.solve_leases`, ``self.solver``, ``time_limit``,
   ``mip_gap``) over the remaining guaranteed jobs, every one ``must_accept``, GPU counts binned
   (:func:`~formulations.chronus.gpu_bin`), σ from :func:`~formulations.chronus.adaptive_sigma`
   of the opportunistic deadline jobs (not late) waiting at the previous boundary plus those
   turned away since (the published ``number_of_accepted``). The jobs with ``X_{r,0} = 1`` run
   this lease; the rest of each job's plan is kept as its cached schedule. A MIP without a
   solution falls back to :func:`~formulations.chronus.greedy_schedule` (counted in
   :meth:`notes`, never silent); guaranteed jobs the greedy cannot place become opportunistic
   (published). Every MIP is a row of :meth:`solve_log` (size as solved and uncut, seconds).
3. Leftover GPUs go to non-guaranteed jobs in the published order (``best_func``): exhausted
   guaranteed jobs first, then opportunistic and best-effort jobs by least remaining estimated
   GPU·time, then late jobs (most GPU-weighted negative slack first, as the published emergence
   sorts them), earlier submission breaking ties; a job that does not fit is skipped. Guaranteed
   jobs never run outside their leases (published for Λ > 30).

Between boundaries the allocation is kept. With ``refill`` (default) GPUs freed by completions are
given to non-guaranteed jobs in the same order at intermediate decisions; the published simulator
never does (its ``filling_jobs`` is unreachable with 60 s checks, and pending jobs are only
revisited at the 240 s tick): ``refill=False, defer_arrivals=True`` is the published timing.

``cut_horizon`` (default): the MIP handed to the solver is cut where capacity stops binding
(:func:`cut_horizon`, exact: same optimum, every plan maps back to a valid full plan). The full
MIP has ``Σ M_r`` binaries (up to ~10^4 on elasticVpollux_e, leases to the furthest deadline),
almost all of them past any binding capacity row, and HiGHS' presolve spends seconds on them
(4 s on a 7,000-binary instance it reduces to nothing); ``cut_horizon=False`` solves it whole.

Overhead: the engine's (ElasticFlow's) model, charged when a job starts after not running
(``Charge.ON_START``: jobs continuing across a boundary pay nothing, as the published ``resume``
counter). Chronus' own restart cost ``resume · (0.4 + 0.1) · (1 + log2 g)`` is not charged (the
engine owns the overhead model); it enters only the duration estimate Ê, as published.

Not reproduced: no ``MAX_SEARCH_JOB`` cap on MIP rows; no node turn-off; no soft (multi-option)
deadlines (the deadline traces carry one strict deadline per job, value 10); the published
Gurobi MIP mostly fails on its size-limited license and falls back to keeping cached greedy
schedules, where this policy solves every MIP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from allocators.base import ProgramClass
from allocators.slot_plans import Charge, JobsView, SlotPolicy
from formulations.chronus import (
    STRICT_VALUE,
    LeaseProblem,
    adaptive_sigma,
    estimated_duration,
    gpu_bin,
    greedy_admission,
    last_lease,
    leases_needed,
    solve_leases,
)
from optim import SolveOptions

#: the policy's classes of a job (beyond the engine's states)
UNSEEN, GUARANTEED, OPPORTUNISTIC, EXHAUSTED, BEST_EFFORT = 0, 1, 2, 3, 4

_EPS = 1e-9


@dataclass(frozen=True)
class HorizonCut:
    """The lease MIP cut at lease ``head`` (:func:`cut_horizon`); job i of the caller is job i of
    ``problem``; ``tail_only`` jobs need no lease before ``head`` (they have a row only when σ > 0:
    one optional lease-0 row of value 0)."""

    problem: LeaseProblem
    head: int
    tail_only: np.ndarray


def cut_horizon(gpus: np.ndarray, need: np.ndarray, last: np.ndarray, capacity: float, sigma: float) -> HorizonCut:
    """An exact reduction of the must-accept, one-option lease MIP with constant ``capacity``.

    Demand ``D(l) = Σ_{M_r > l} g_r`` never grows with l; from the first lease ``h*`` with
    ``D(l) <= capacity`` on, no capacity row can bind. With ``head = max(h*, 1)``, a job with
    ``M > head`` has ``T = M - head`` free tail leases and needs ``n = max(L - T, 0)`` leases
    before ``head``. Taking exactly n there loses nothing: the objective sees only lease 0, and
    moving a job's extra head leases other than lease 0 into its tail only frees capacity. A job
    with n = 0 uses either no head lease or lease 0 alone, which only pays when σ > 0: it becomes
    an optional row (L = 1, M = 1, value 0). So the cut problem's optimum equals the full one's
    minus 10 per tail-only job (their value term); ``c_max`` stays ``capacity``.
    """
    gpus, need, last = (np.asarray(a, dtype=np.int64) for a in (gpus, need, last))
    n = gpus.size
    top = int(last.max(initial=0))
    by_last = np.bincount(last, weights=gpus, minlength=top + 1)
    demand = gpus.sum() - np.cumsum(by_last)  # D(l), l = 0..top
    head = max(int(np.argmax(demand <= capacity + 1e-9)), 1)
    tail = np.maximum(last - head, 0)
    head_need = np.where(last > head, np.maximum(need - tail, 0), need)
    tail_only = head_need == 0
    must = ~tail_only
    optional = tail_only if sigma > 0 else np.zeros(n, dtype=bool)
    rows = np.flatnonzero(must | optional)
    problem = LeaseProblem(
        capacity=np.full(head, float(capacity)), row_job=rows, gpus=gpus[rows],
        leases_needed=np.where(must, head_need, 1)[rows], last_lease=np.where(must, np.minimum(last, head), 1)[rows],
        value=np.where(must, STRICT_VALUE, 0.0)[rows], num_jobs=n, sigma=sigma, c_max=float(capacity),
        must_accept=must)
    return HorizonCut(problem, head, tail_only)


def uncut_schedule(cut: HorizonCut, chosen: np.ndarray, schedule: np.ndarray, need: np.ndarray,
                   last: np.ndarray) -> list[np.ndarray | None]:
    """Each job's leases in the full horizon (None: a must-accept job the plan left out): its
    head leases from the plan, the rest the latest of its tail leases (a latest-first packing,
    as the published greedies)."""
    out: list[np.ndarray | None] = []
    for i in range(cut.problem.num_jobs):
        r = int(chosen[i])
        if r < 0 and not cut.tail_only[i]:
            out.append(None)
            continue
        head = np.flatnonzero(schedule[r]) if r >= 0 else np.zeros(0, dtype=np.int64)
        rest = int(need[i]) - head.size
        out.append(np.concatenate([head, np.arange(int(last[i]) - rest, int(last[i]))]).astype(np.int64))
    return out


class Chronus(SlotPolicy):
    name = "chronus"
    system = "Chronus"
    program = ProgramClass.MILP
    elastic = False
    charge = Charge.ON_START

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, *, lease: float = 240.0,
                 time_limit: float = 5.0, mip_gap: float | None = None, refill: bool = True,
                 cut_horizon: bool = True, defer_arrivals: bool = False):
        super().__init__(solver, options)
        if not lease > 0:
            raise ValueError(f"lease must be > 0 s, got {lease}")
        self.lease = float(lease)
        self.time_limit = options.time_limit if options and options.time_limit else time_limit
        self.mip_gap = options.mip_gap if options and options.mip_gap is not None else mip_gap
        self.refill = refill
        self.cut_horizon = cut_horizon
        self.defer_arrivals = defer_arrivals
        self._ready = False
        self._log: list[dict] = []
        #: "solver: status" -> (lease MIPs that fell back, the first one's reason)
        self._fallbacks: dict[str, tuple[int, str]] = {}
        self._counters = dict(guaranteed=0, opportunistic=0, best_effort=0, exhausted=0, late=0, unplaced=0,
                              not_placed=0)

    # ---------------------------------------------------------------- state

    def _setup(self, view: JobsView) -> None:
        if self._ready:
            return
        J = len(view.state)
        allowed = view.allowed(np.arange(J))
        #: GPUs a job runs on: its request (the largest allowed count up to it, should the table lack it)
        self._g = np.where(allowed, view.gpu_counts[None, :], 0).max(axis=1, initial=0).astype(np.int64)
        self._bin = gpu_bin(np.maximum(self._g, 1))
        rate = view.rate(np.arange(J), self._g)
        self._rate = np.where(rate > 0, rate, np.nan)
        #: run time at the requested GPUs (tables) and the published estimate of it
        self._total = view.iterations / self._rate
        self._estimate = estimated_duration(np.nan_to_num(self._total, nan=0.0), np.maximum(self._g, 1), self.lease)
        self._kind = np.zeros(J, dtype=np.int8)
        self._count = np.zeros(J, dtype=np.int64)
        self._alloc = np.zeros(J, dtype=np.int64)
        self._cache: dict[int, np.ndarray] = {}
        self._fresh: list[int] = []
        self._arrivals: list[np.ndarray] = []
        self._origin = 0.0
        self._lease = -1
        self._unaccepted = 0
        self._ready = True

    def _lease_index(self, now: float) -> int:
        return int(math.floor((now - self._origin) / self.lease + _EPS))

    def _estimated_left(self, view: JobsView, jobs: np.ndarray) -> np.ndarray:
        """Ê − time done so far (the published ``estimate_duration − progress``)."""
        done = self._total[jobs] - view.remaining[jobs] / self._rate[jobs]
        return self._estimate[jobs] - done

    def _late(self, view: JobsView, jobs: np.ndarray) -> np.ndarray:
        return view.now + view.remaining[jobs] / self._rate[jobs] > view.deadline[jobs] + _EPS

    def _last(self, view: JobsView, jobs: np.ndarray, first: int) -> np.ndarray:
        """M relative to lease ``first`` (deadlines past: 0)."""
        deadline = view.deadline[jobs] - self._origin
        return np.maximum(last_lease(deadline, self.lease, first), 0)

    # ---------------------------------------------------------------- the engine's calls

    def admit(self, view: JobsView, arrivals: np.ndarray) -> np.ndarray:
        """Every job is admitted (Chronus never declines); guarantees are decided in :meth:`allocate`,
        after the MIP of a lease that opens at this decision (published order)."""
        self._setup(view)
        self._arrivals.append(np.asarray(arrivals, dtype=np.int64))
        return np.ones(len(arrivals), dtype=bool)

    def allocate(self, view: JobsView) -> np.ndarray:
        self._setup(view)
        J = len(view.state)
        active = np.zeros(J, dtype=bool)
        active[view.active()] = True
        missed = np.flatnonzero((self._alloc > 0) & active & (view.gpus == 0))
        self._counters["not_placed"] += missed.size
        self._alloc[~active] = 0
        k = self._lease_index(view.now)
        boundary = k > self._lease
        if boundary:
            self._plan_lease(view, k, active)
        if boundary or not self.defer_arrivals:
            arrivals = np.concatenate(self._arrivals) if self._arrivals else np.zeros(0, dtype=np.int64)
            self._arrivals = []
            self._classify(view, arrivals[active[arrivals]], k)
        if boundary or self.refill:
            self._fill(view, active)
        return self._alloc.copy()

    def next_decision(self, view: JobsView) -> float:
        if not self._ready or self._lease < 0 or not view.active().size:
            return np.inf  # an idle cluster waits for the next arrival
        return self._origin + (self._lease + 1) * self.lease

    # ---------------------------------------------------------------- lease boundary

    def _plan_lease(self, view: JobsView, k: int, active: np.ndarray) -> None:
        sigma = adaptive_sigma(self._unaccepted)
        self._lease = k
        self._alloc[:] = 0
        self._cache = {}
        self._fresh = []
        jobs = np.flatnonzero(active & (self._kind == GUARANTEED))
        if jobs.size:
            left = leases_needed(self._estimated_left(view, jobs), self.lease)
            self._count[jobs] = np.minimum(self._count[jobs], left)
            exhausted = self._count[jobs] <= 0
            last = self._last(view, jobs, k)
            late = ~exhausted & (self._late(view, jobs) | (self._count[jobs] > last))
            self._kind[jobs[exhausted]] = EXHAUSTED
            self._kind[jobs[late]] = OPPORTUNISTIC
            self._counters["exhausted"] += int(exhausted.sum())
            self._counters["late"] += int(late.sum())
            keep = ~exhausted & ~late
            jobs, last = jobs[keep], last[keep]
        if jobs.size:
            self._solve(view, jobs, last, k, sigma)
        waiting = np.flatnonzero(active & ((self._kind == OPPORTUNISTIC) | (self._kind == EXHAUSTED)))
        self._unaccepted = int((~self._late(view, waiting)).sum())

    def _solve(self, view: JobsView, jobs: np.ndarray, last: np.ndarray, k: int, sigma: float) -> None:
        n = jobs.size
        gpus, need = self._bin[jobs], self._count[jobs]
        horizon = max(int(last.max()), 1)
        if self.cut_horizon:
            cut = cut_horizon(gpus, need, last, view.total_gpus, sigma)
            problem = cut.problem
        else:
            problem = LeaseProblem(capacity=np.full(horizon, float(view.total_gpus)), row_job=np.arange(n),
                                   gpus=gpus, leases_needed=need, last_lease=last, value=np.full(n, STRICT_VALUE),
                                   num_jobs=n, sigma=sigma, must_accept=np.ones(n, dtype=bool))
        plan = solve_leases(problem, self.solver, time_limit=self.time_limit, mip_gap=self.mip_gap)
        if plan.fell_back:
            key = f"{self.solver}: {plan.status}"
            count, first = self._fallbacks.get(key, (0, plan.fell_back.split(";")[0]))
            self._fallbacks[key] = (count + 1, first)
        if self.cut_horizon:
            leases = uncut_schedule(cut, plan.chosen, plan.schedule, need, last)
        else:
            leases = [np.flatnonzero(plan.schedule[r]) if r >= 0 else None for r in plan.chosen.tolist()]
        self._log.append({"time": view.now, "lease": k, "jobs": n, "leases": problem.num_leases,
                          "binaries": plan.num_binaries, "rows": plan.num_rows,
                          "full_leases": horizon, "full_binaries": int(last.sum()) + n, "full_rows": 2 * n + horizon,
                          "build_seconds": plan.build_seconds, "solve_seconds": plan.solve_seconds,
                          "status": plan.status.value,
                          "method": "greedy" if plan.fell_back else "milp" if problem.num_rows else "empty",
                          "sigma": sigma, "objective": plan.objective})
        for i, j in enumerate(jobs.tolist()):
            mine = leases[i]
            if mine is None:
                self._kind[j] = OPPORTUNISTIC
                self._counters["unplaced"] += 1
                continue
            if mine.size and mine[0] == 0:
                self._alloc[j] = self._g[j]
                self._count[j] -= 1
                mine = mine[1:]
            self._cache[j] = k + mine

    # ---------------------------------------------------------------- admission

    def _classify(self, view: JobsView, arrivals: np.ndarray, k: int) -> None:
        for j in arrivals.tolist():
            if self._kind[j] != UNSEEN:
                continue
            if view.best_effort[j]:
                self._kind[j] = BEST_EFFORT
                self._counters["best_effort"] += 1
                continue
            count = max(int(leases_needed(self._estimate[j], self.lease)), 1)
            if self._admissible(view, j, count, k):
                self._kind[j] = GUARANTEED
                self._count[j] = count
                self._fresh.append(j)
                self._counters["guaranteed"] += 1
            else:
                self._kind[j] = OPPORTUNISTIC
                self._unaccepted += 1
                self._counters["opportunistic"] += 1

    def _admissible(self, view: JobsView, j: int, count: int, k: int) -> bool:
        """Published greedy admission from lease k+1: the guaranteed jobs no MIP has planned yet
        and ``j``, around the schedules the last MIP kept for the others."""
        jobs = np.array([*self._fresh, j], dtype=np.int64)
        last = self._last(view, jobs, k + 1)
        if count > last[-1]:
            return False
        need = self._count[jobs]
        need[-1] = count
        horizon = int(last.max())
        reserved = np.zeros(horizon)
        for job, leases in self._cache.items():
            at = leases - (k + 1)
            at = at[(at >= 0) & (at < horizon)]
            reserved[at] += self._bin[job]
        n = jobs.size
        problem = LeaseProblem(capacity=np.full(horizon, float(view.total_gpus)), row_job=np.arange(n),
                               gpus=self._bin[jobs], leases_needed=need, last_lease=np.minimum(last, horizon),
                               value=np.full(n, STRICT_VALUE), num_jobs=n,
                               must_accept=np.arange(n) < n - 1)
        return greedy_admission(problem, n - 1, reserved=reserved).feasible

    # ---------------------------------------------------------------- opportunistic jobs

    def _fill(self, view: JobsView, active: np.ndarray) -> None:
        free = view.total_gpus - int(self._alloc.sum())
        if free <= 0:
            return
        kind = self._kind
        jobs = np.flatnonzero(active & (self._alloc == 0) & (kind != GUARANTEED) & (kind != UNSEEN) & (self._g > 0))
        if not jobs.size:
            return
        left = self._estimated_left(view, jobs)
        late = (kind[jobs] != BEST_EFFORT) & self._late(view, jobs)
        tier = np.where(kind[jobs] == EXHAUSTED, 0, np.where(late, 2, 1))
        slack = view.deadline[jobs] - view.now - left
        emergence = np.where(tier == 2, -slack, -left) * self._g[jobs]
        for j in jobs[np.lexsort((view.submit[jobs], -emergence, tier))].tolist():
            if self._g[j] <= free:
                self._alloc[j] = self._g[j]
                free -= self._g[j]
                if free == 0:
                    break

    # ---------------------------------------------------------------- reporting

    def notes(self) -> list[str]:
        c = self._counters
        notes = [f"{count} lease MIP(s) fell back to the published greedy schedule ({key}; the first: {first})"
                 for key, (count, first) in self._fallbacks.items()]
        notes.append(f"admission: {c['guaranteed']} deadline job(s) guaranteed, {c['opportunistic']} run "
                     f"opportunistically (Chronus declines none), {c['best_effort']} best-effort")
        notes.append(f"guarantees lost: {c['late']} late or out of leases before the deadline, {c['exhausted']} used "
                     f"all their leases unfinished, {c['unplaced']} left unplaced by a fallback")
        if self._log:
            secs = np.array([row["solve_seconds"] for row in self._log])
            bins = np.array([row["binaries"] for row in self._log])
            notes.append(f"{len(self._log)} lease MIP(s): binaries p50 {np.median(bins):.0f} max {bins.max()}, "
                         f"solve seconds p50 {np.median(secs):.3f} max {secs.max():.3f}")
        if c["not_placed"]:
            notes.append(f"{c['not_placed']} allocation(s) the engine could not place")
        return notes

    def solve_log(self) -> list[dict]:
        return self._log
