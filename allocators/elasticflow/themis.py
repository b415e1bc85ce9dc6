"""Themis finish-time fairness (``themis``), the published ElasticFlow baseline, on the slot clock.

Non-elastic (requested GPUs), no admission control, no overhead (``Charge.NEVER``: the published
estimate is never reached). At every decision (a lease of Δ) over the runnable jobs j:

    minimize max_j rho_j(x)   s.t.  0 <= x_j <= 1,  Σ_j n_j x_j <= G
    rho_j(x) = (A_j + B_j / x_j) / D_j
    A_j = t_ev - submit_j,  B_j = L_j / T_j(n_j),  D_j = C_j + L_j / iso_j

L_j: iterations left; T_j(n_j): iterations/s on the requested GPUs; t_ev: the time of the last
decision at which a job arrived or ended (the published loop keeps the time of the last *event*,
stale across quiet leases). As published, ``iso_j = min(1, ceil(G / N) / n_j)`` is a *fraction*
(N = number of runnable jobs), not a throughput, and ``C_j`` accumulates
``(L_prev - L) / iso_prev`` over the decisions. Then jobs are sorted by x descending (stable:
ties keep the previous order, arrivals last) and placed greedily: a job runs if its GPUs are
free, otherwise it is skipped; the pass stops when no GPU is left.

The program is quasi-convex. At a level r, "rho_j <= r for all j" is ``x_j >= B_j / (r D_j - A_j)``
(for r D_j > A_j), so level r is reachable iff those least shares are <= 1 and use <= G GPUs:
the LP feasibility test has a closed form here (one capacity row). ``method``:

- "conic" (the default through "auto"): one program through :mod:`optim`,
  ``minimize r s.t. x_j (D_j r - A_j) >= B_j`` (rotated second-order cones) on ``solver`` if it
  has SOC cones, else on ``conic_solver`` (clarabel; the default ``highs`` has none);
- "bisection": bisect r on the exact closed-form test (to machine precision, ~60 halvings);
- "lp": the bisection with each level test solved as an LP through :mod:`optim` on ``solver``
  (slow; for cross-checks).

Which x? The optimum is unique only when the capacity row binds at the optimal level. In the
published runs it almost never does (elasticVpollux: 3 of 14,660 leases): the level is set by one
job that needs x = 1 and every other x may lie anywhere between its least share and 1 while the
GPUs suffice, so the order, and so who runs, is the interior-point solver's choice (ECOS there).
``shares="solver"`` (default) keeps the point of the conic solve (clarabel, like ECOS, is an
interior-point method: it returns a point inside the optimal face, not a vertex). On elasticVpollux
it gives 61/195 = 0.313 (published 0.312; a restatement of the published loop solved with ECOS meets
or misses the same deadlines, job for job), where the least shares at the optimal level
(``shares="least"``, what the bisection has) give 0.236. When every runnable job fits, the order
decides nothing this lease and no program is solved (``solve_when_all_fit=True`` solves it anyway).

Engine differences (see the report): the published lease grid is fixed (cur += Δ from the first
arrival, arrivals snapped to it), while the engine jumps to the next arrival after an idle gap;
the published job "ends" at the lease boundary after its last iterations (late iff that boundary
is after the deadline), the engine at the exact time.
"""

from __future__ import annotations

import math
import time

import numpy as np

from allocators.slot_plans import Charge, JobState, JobsView, SlotPolicy
from optim import Capability, Model, SolveOptions, Status, get_backend, solve

METHODS = ("auto", "bisection", "conic", "lp")


def least_shares(level: float, elapsed: np.ndarray, work: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Least x_j with rho_j(x_j) <= level (inf where the level is out of reach at any share)."""
    gap = level * denominator - elapsed
    with np.errstate(divide="ignore"):
        return np.where(gap > 0, work / np.where(gap > 0, gap, 1.0), np.inf)


def level_bounds(elapsed: np.ndarray, work: np.ndarray, denominator: np.ndarray, gpus: np.ndarray,
                 capacity: float) -> tuple[float, float]:
    """``lo``: no allocation beats it (every job at x = 1); ``hi``: a reachable level (x_j = s for
    all j with s = min(1, G / Σ n_j))."""
    lo = float(np.max((elapsed + work) / denominator))
    share = min(1.0, capacity / float(np.sum(gpus)))
    hi = float(np.max((elapsed + work / share) / denominator))
    return lo, max(lo, hi)


def reachable(level: float, elapsed, work, denominator, gpus, capacity: float) -> bool:
    x = least_shares(level, elapsed, work, denominator)
    return bool(np.all(x <= 1.0 + 1e-12) and float(np.dot(gpus, x)) <= capacity * (1 + 1e-12))


def solve_by_bisection(elapsed, work, denominator, gpus, capacity: float) -> tuple[float, int]:
    """The optimal level (to machine precision) and the number of level tests."""
    lo, hi = level_bounds(elapsed, work, denominator, gpus, capacity)
    tests = 1
    if reachable(lo, elapsed, work, denominator, gpus, capacity):
        return lo, tests
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            return hi, tests
        tests += 1
        if reachable(mid, elapsed, work, denominator, gpus, capacity):
            hi = mid
        else:
            lo = mid


def build_level_lp(level: float, elapsed, work, denominator, gpus, capacity: float) -> Model:
    """``maximize u s.t. x_j (level D_j - A_j) / B_j >= u, Σ n_j x_j <= G, 0 <= x <= 1``:
    the level is reachable iff u >= 1."""
    m = Model(f"themis[level {level:.6g}]")
    x = m.add_variables("x", len(work), lb=0.0, ub=1.0)
    u = m.add_variables("u", 1, lb=0.0)
    slack = (level * denominator - elapsed) / work
    m.add_rows("level", {x: np.diag(slack), u: -np.ones((len(work), 1))}, lo=0.0)
    m.add_rows("capacity", {x: np.asarray(gpus, dtype=float)[None, :]}, hi=capacity)
    m.set_objective({u: 1.0}, sense="max")
    return m


def build_conic(elapsed, work, denominator, gpus, capacity: float, scale: float) -> Model:
    """``minimize s s.t. x_j ((D_j scale s - A_j) / B_j) >= 1, Σ n_j x_j <= G, 0 <= x <= 1``
    (level = scale · s; each cone factor is O(1))."""
    m = Model("themis[conic]")
    k = len(work)
    x = m.add_variables("x", k, lb=0.0, ub=1.0)
    s = m.add_variables("s", 1, lb=0.0)
    m.add_rows("capacity", {x: np.asarray(gpus, dtype=float)[None, :]}, hi=capacity)
    m.add_hyperbolic("rho", u={x: np.eye(k)}, u_offset=np.zeros(k),
                     v={s: (denominator * scale / work)[:, None]}, v_offset=-elapsed / work, k=np.ones(k))
    m.set_objective({s: 1.0}, sense="min")
    return m


def _has_soc(solver: str) -> bool:
    try:
        backend = get_backend(solver)
    except Exception:
        return False
    return backend.is_available() and Capability.SOC in backend.capabilities()


class Themis(SlotPolicy):
    name = "themis"
    elastic = False
    duration_based = False
    charge = Charge.NEVER

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, method: str = "auto",
                 shares: str = "solver", conic_solver: str = "clarabel", solve_when_all_fit: bool = False):
        super().__init__(solver, options)
        if method not in METHODS:
            raise ValueError(f"themis: unknown method {method!r}; use one of {', '.join(METHODS)}")
        if shares not in ("least", "solver"):
            raise ValueError(f"themis: shares must be 'least' or 'solver', got {shares!r}")
        self.conic_solver = solver if _has_soc(solver) else conic_solver
        if method in ("auto", "conic") and not _has_soc(self.conic_solver):
            if method == "conic":
                raise ValueError(f"themis: neither {solver} nor {conic_solver} has SOC cones; use method "
                                 f"'bisection' or 'lp'")
            self.conic_solver = None
        self.method = ("conic" if self.conic_solver else "bisection") if method == "auto" else method
        self.shares = shares
        self.solve_when_all_fit = solve_when_all_fit
        #: runnable jobs in the published list order (re-sorted by x every decision)
        self.order: list[int] = []
        self.cumulative: dict[int, float] = {}
        self._prev: dict[int, tuple[float, float]] = {}
        self.event_time: float | None = None
        self.last_x: dict[int, float] = {}
        self.last_level = math.nan
        self._known: np.ndarray | None = None
        self._log: list[dict] = []
        self._fallbacks: list[str] = []
        self.skipped = 0

    def allocate(self, view: JobsView) -> np.ndarray:
        state, t = view.state, view.now
        if self._known is None:
            self._known = np.zeros(len(state), dtype=bool)
        active = (state == JobState.PENDING) | (state == JobState.RUNNING)
        ended = [j for j in self.order if not active[j]]
        new = np.flatnonzero(active & ~self._known)
        new = new[np.argsort(view.submit[new], kind="stable")].tolist()
        self._known[np.flatnonzero(state != JobState.FUTURE)] = True
        if ended or new:
            self.event_time = t
        if ended:
            out = set(ended)
            self.order = [j for j in self.order if j not in out]
        self.order.extend(new)
        gpus = np.zeros(len(state), dtype=np.int64)
        if not self.order:
            return gpus
        jobs = np.array(self.order, dtype=np.int64)
        x = self.shares_for(view, jobs)
        rank = np.argsort(-x, kind="stable")
        jobs = jobs[rank]
        self.order = jobs.tolist()
        free = view.total_gpus
        for j in self.order:
            if free <= 0:
                break
            if view.requested[j] <= free:
                gpus[j] = view.requested[j]
                free -= int(view.requested[j])
        return gpus

    def next_decision(self, view: JobsView) -> float:
        """One lease: the next decision Δ later while any job is runnable."""
        return view.now + view.slot if self.order else math.inf

    # ------------------------------------------------------------------ the program

    def program_data(self, view: JobsView, jobs: np.ndarray) -> tuple[np.ndarray, ...]:
        """(A, B, D, n) of rho for ``jobs``; updates the cumulative isolated time C."""
        n = view.requested[jobs].astype(float)
        left = view.remaining[jobs].astype(float)
        iso = np.minimum(1.0, math.ceil(view.total_gpus / len(jobs)) / n)
        C = np.empty(len(jobs))
        for i, j in enumerate(jobs.tolist()):
            if j in self._prev:
                prev_left, prev_iso = self._prev[j]
                self.cumulative[j] = self.cumulative.get(j, 0.0) + (prev_left - left[i]) / prev_iso
            C[i] = self.cumulative.get(j, 0.0)
            self._prev[j] = (float(left[i]), float(iso[i]))
        elapsed = self.event_time - view.submit[jobs].astype(float)
        work = left / view.rate(jobs, view.requested[jobs])
        return elapsed, work, C + left / iso, n

    def shares_for(self, view: JobsView, jobs: np.ndarray) -> np.ndarray:
        tick = time.perf_counter()
        A, B, D, n = self.program_data(view, jobs)
        G = float(view.total_gpus)
        if not self.solve_when_all_fit and float(n.sum()) <= G:
            self.skipped += 1
            return np.ones(len(jobs))
        build = solve_seconds = 0.0
        tests = 1
        x_solver = None
        method = self.method
        lo, _ = level_bounds(A, B, D, n, G)
        if method == "conic":
            result = solve(build_conic(A, B, D, n, G, lo), self.conic_solver, self.options, check=False)
            build, solve_seconds = result.timings.build, result.timings.solve + result.timings.translate
            if result.status in (Status.OPTIMAL, Status.FEASIBLE) and result.x is not None:
                level = max(float(result.x[len(jobs)]) * lo, lo)
                x_solver = np.clip(result.x[:len(jobs)], 0.0, 1.0)
            else:
                self._fallbacks.append(f"t={view.now:g}: {result.backend} {result.status} {result.message}")
                method = "bisection"
        if method == "lp":
            level, tests, build, solve_seconds = self._lp_bisection(A, B, D, n, G)
        elif method == "bisection":
            start = time.perf_counter()
            level, tests = solve_by_bisection(A, B, D, n, G)
            solve_seconds = time.perf_counter() - start
        x = np.minimum(least_shares(level, A, B, D), 1.0)
        if self.shares == "solver" and x_solver is not None:
            x = x_solver
        self.last_level = level
        self.last_x = dict(zip(jobs.tolist(), x.tolist()))
        self._log.append({"time": view.now, "jobs": len(jobs), "method": method, "level": level,
                          "level_tests": tests, "unique": bool(level > lo * (1 + 1e-9)),
                          "build_seconds": build, "solve_seconds": solve_seconds,
                          "seconds": time.perf_counter() - tick})
        return x

    def _lp_bisection(self, A, B, D, n, G) -> tuple[float, int, float, float]:
        lo, hi = level_bounds(A, B, D, n, G)
        build = seconds = 0.0
        tests = 0

        def ok(level: float) -> bool:
            nonlocal build, seconds, tests
            tests += 1
            result = solve(build_level_lp(level, A, B, D, n, G), self.solver, self.options, check=False)
            build += result.timings.build
            seconds += result.timings.solve + result.timings.translate
            return result.status is Status.OPTIMAL and result.objective >= 1.0 - 1e-9

        if ok(lo):
            return lo, tests, build, seconds
        while hi - lo > 1e-9 * hi:
            mid = 0.5 * (lo + hi)
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return hi, tests, build, seconds

    def notes(self) -> list[str]:
        where = f" on {self.conic_solver}" if self.method == "conic" else ""
        notes = [f"themis: {len(self._log)} program(s), method {self.method}{where}, shares {self.shares}; "
                 f"{self.skipped} decision(s) where every job fit needed none"]
        if self._fallbacks:
            notes.append(f"themis: {len(self._fallbacks)} conic solve(s) failed and fell back to bisection "
                         f"(first: {self._fallbacks[0]})")
        return notes

    def solve_log(self) -> list[dict]:
        return self._log


__all__ = ["METHODS", "Themis", "build_conic", "build_level_lp", "least_shares", "solve_by_bisection"]
