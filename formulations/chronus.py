"""Chronus' lease MIP (SoCC'21, as published with ElasticFlow's artifact), its greedies and helpers.

Time is cut into leases of length Λ; lease 0 is the one about to start. Each accepted SLO job j
offers one row r per deadline option (strict jobs: one option): it needs ``L_r`` more leases of
``g_r`` GPUs, all of them before ``M_r`` (``X_{r,l} = 0`` for ``l >= M_r``), and is worth ``value_r``
if that option is the one kept. With ``X_{r,l} ∈ {0,1}`` (row r runs in lease l, created only for
``l < M_r``) and ``S_r ∈ {0,1}`` (option r is kept)::

    maximize   Σ_r value_r S_r  +  σ Σ_r (g_r / C_max) X_{r,0}
    subject to Σ_{l<M_r} X_{r,l} = L_r S_r                      every row r
               Σ_r g_r X_{r,l} <= C_l                           every lease l
               must_j <= Σ_{r∈j} S_r <= 1                       every job j

σ = +1 packs lease 0 (published objective 'maximize'), σ = −1 defers guaranteed work and leaves
lease 0 to opportunistic jobs ('minimize'); σ = 0 is the value term alone (the published 'random'
objective is only ``value_0 S_0``, a feasibility problem). The published 'adaptive' objective
(ElasticFlow's runs) takes σ = +1 unless SLO jobs were left unaccepted (:func:`adaptive_sigma`).
C_max is the largest per-lease capacity passed to the solver, so the σ term stays below one
value unit. In the published MIP *every* job is an already accepted SLO job and has ``Σ S = 1``;
new jobs never enter it (they pass :func:`greedy_admission` first). ``must_accept`` carries that
(True for accepted jobs) and lets other jobs take at most one option.

Published defaults (pkusys/ElasticFlow, chronus-scheduler): Λ = 240 s in every ElasticFlow run
(options.py default 60, in trace time units); 5 s MIP limit (1 s without a better incumbent);
values: strict 10, soft options 10-8-5-2 (tightest first; a job scores ``1 - value/10`` for the
first option it meets, 1 for none); best-effort jobs never enter the MIP; GPU counts binned
3-4 → 4, 5-7 → 8 (:func:`gpu_bin`); ``L = ceil(estimated duration / Λ)`` with a 10 % margin and
one restart per lease (:func:`estimated_duration`); ``M = floor(deadline / Λ) − current lease``
(:func:`last_lease`). When the MIP throws (no incumbent) the code switches silently to
:func:`greedy_schedule`; :func:`solve_leases` does the same but says so in ``fell_back``.

Layering: arrays in, arrays out; nothing here knows about traces, clocks or simulators.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from optim import Model, SolveOptions, Status, solve
from optim.sparse import scipy_sparse as sp

from .problem import ProblemError

#: lease length of ElasticFlow's Chronus runs (seconds; ``--lease_term_interval=240``)
LEASE_SECONDS = 240
#: published per-restart costs, added per resume (time units of the trace, never rescaled)
RESUME_OVERHEAD = 0.4
CHECKPOINT_OVERHEAD = 0.1
#: published option values: strict jobs, soft jobs' options (tightest first), the scoring scale
STRICT_VALUE = 10.0
SOFT_VALUES = (10.0, 8.0, 5.0, 2.0)
MAX_VALUE = 10.0
#: published MIP time limit (seconds)
MIP_SECONDS = 5.0
#: published safety factor on estimated durations
DURATION_MARGIN = 1.1

_SOLVED = (Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT)


@dataclass(frozen=True)
class LeaseProblem:
    """One lease-boundary decision (see the module doc); R rows (job, option), L leases, J jobs.

    ``row_job`` (R,) job of each row; ``gpus`` (R,) g_r >= 1; ``leases_needed`` (R,) L_r >= 1;
    ``last_lease`` (R,) M_r in [0, L]; ``value`` (R,); ``capacity`` (L,) GPUs per lease;
    ``must_accept`` (J,) jobs that must keep exactly one option (default: none); ``c_max``
    defaults to ``max(capacity)``. A row with ``L_r > M_r`` can never be chosen; callers clip a
    past deadline's ``M`` to 0 and one beyond the horizon to L.
    """

    capacity: np.ndarray
    row_job: np.ndarray
    gpus: np.ndarray
    leases_needed: np.ndarray
    last_lease: np.ndarray
    value: np.ndarray
    num_jobs: int
    sigma: float = 1.0
    c_max: float | None = None
    must_accept: np.ndarray | None = None

    def __post_init__(self) -> None:
        cap = np.asarray(self.capacity, dtype=float).reshape(-1)
        object.__setattr__(self, "capacity", cap)
        for name in ("row_job", "gpus", "leases_needed", "last_lease"):
            arr = np.asarray(getattr(self, name))
            if arr.size and not np.array_equal(arr, np.round(arr)):
                raise ProblemError(f"lease problem: {name} must be integers")
            object.__setattr__(self, name, arr.astype(np.int64).reshape(-1))
        object.__setattr__(self, "value", np.asarray(self.value, dtype=float).reshape(-1))
        J = int(self.num_jobs)
        object.__setattr__(self, "num_jobs", J)
        must = np.zeros(J, dtype=bool) if self.must_accept is None else np.asarray(self.must_accept, dtype=bool)
        object.__setattr__(self, "must_accept", must.reshape(-1))
        if self.c_max is None:
            object.__setattr__(self, "c_max", float(max(cap.max(initial=0.0), 1.0)))
        object.__setattr__(self, "sigma", float(self.sigma))
        self._validate()

    def _validate(self) -> None:
        L, R, J = self.num_leases, self.num_rows, self.num_jobs
        if L < 1 or J < 0:
            raise ProblemError(f"lease problem: needs at least one lease and num_jobs >= 0, got L={L}, J={J}")
        if not np.isfinite(self.capacity).all() or (self.capacity < 0).any():
            raise ProblemError("lease problem: capacity must be finite and >= 0")
        for name in ("row_job", "gpus", "leases_needed", "last_lease", "value"):
            if getattr(self, name).shape != (R,):
                raise ProblemError(f"lease problem: {name} has {getattr(self, name).size} entries for {R} rows")
        if self.must_accept.shape != (J,):
            raise ProblemError(f"lease problem: must_accept has {self.must_accept.size} entries for {J} jobs")
        if ((self.row_job < 0) | (self.row_job >= J)).any():
            raise ProblemError(f"lease problem: row_job must lie in 0..{J - 1}")
        if (self.gpus < 1).any() or (self.leases_needed < 1).any():
            raise ProblemError("lease problem: every row needs gpus >= 1 and leases_needed >= 1")
        if ((self.last_lease < 0) | (self.last_lease > L)).any():
            raise ProblemError(f"lease problem: last_lease must lie in 0..{L} (the capacity covers {L} leases)")
        if not np.isfinite(self.value).all():
            raise ProblemError("lease problem: values must be finite")
        if self.sigma not in (-1.0, 0.0, 1.0):
            raise ProblemError(f"lease problem: sigma must be +1, 0 or -1, not {self.sigma}")
        if not (np.isfinite(self.c_max) and self.c_max > 0):
            raise ProblemError("lease problem: c_max must be finite and > 0")
        has_rows = np.zeros(J, dtype=bool)
        has_rows[self.row_job] = True
        if (self.must_accept & ~has_rows).any():
            bad = np.flatnonzero(self.must_accept & ~has_rows)[:5].tolist()
            raise ProblemError(f"lease problem: must-accept jobs {bad} have no option rows")

    @property
    def num_rows(self) -> int:
        return int(self.row_job.shape[0])

    @property
    def num_leases(self) -> int:
        return int(self.capacity.shape[0])

    def lease_offsets(self) -> np.ndarray:
        """(R+1,) start of row r's X block in the flat X vector (row r owns ``M_r`` columns)."""
        return np.concatenate([[0], np.cumsum(self.last_lease)])

    def objective_of(self, chosen: np.ndarray, schedule: np.ndarray) -> float:
        """The MIP objective of a plan (``chosen`` (J,) row or -1, ``schedule`` (R, L) bool)."""
        rows = chosen[chosen >= 0]
        return float(self.value[rows].sum() + self.sigma * (self.gpus * schedule[:, 0]).sum() / self.c_max)


@dataclass(frozen=True)
class LeasePlan:
    """What runs in which lease. ``chosen`` (J,) row kept per job (-1: none); ``schedule``
    (R, L) bool; ``first_lease_gpus`` (J,) GPUs each job holds in lease 0; ``status``: the
    solver's status (with ``fell_back`` set, the plan is the greedy's and says why)."""

    chosen: np.ndarray
    schedule: np.ndarray
    first_lease_gpus: np.ndarray
    status: Status
    objective: float
    num_binaries: int
    num_rows: int
    build_seconds: float
    solve_seconds: float
    fell_back: str | None = None


@dataclass(frozen=True)
class Packing:
    """A greedy's answer: ``feasible`` (all jobs it had to place were placed), ``chosen`` (J,),
    ``schedule`` (R, L) bool and ``free`` (L,) GPUs left per lease."""

    feasible: bool
    chosen: np.ndarray
    schedule: np.ndarray
    free: np.ndarray


def build(problem: LeaseProblem) -> Model:
    """The lease MIP (module doc); blocks ``X`` (flat, row r's leases ``0..M_r-1`` at
    ``lease_offsets()[r]``) and ``S`` (R,)."""
    p = problem
    R, L = p.num_rows, p.num_leases
    off = p.lease_offsets()
    n = int(off[-1])
    row_of = np.repeat(np.arange(R), p.last_lease)
    lease_of = np.arange(n) - off[row_of]
    cols = np.arange(n)
    m = Model("chronus_leases")
    x = m.add_variables("X", n, vtype="binary")
    s = m.add_variables("S", R, vtype="binary", ub=(p.leases_needed <= p.last_lease).astype(float))
    if R == 0:
        m.set_objective({}, sense="max")
        return m
    count = sp.csr_matrix((np.ones(n), (row_of, cols)), shape=(R, n))
    m.add_rows("lease_count", {x: count, s: sp.diags(-p.leases_needed.astype(float), format="csr")}, lo=0.0, hi=0.0)
    load = sp.csr_matrix((p.gpus[row_of].astype(float), (lease_of, cols)), shape=(L, n))
    m.add_rows("capacity", {x: load}, hi=p.capacity)
    jobs, job_rank = np.unique(p.row_job, return_inverse=True)
    pick = sp.csr_matrix((np.ones(R), (job_rank, np.arange(R))), shape=(jobs.size, R))
    m.add_rows("one_option", {s: pick}, lo=p.must_accept[jobs].astype(float), hi=1.0)
    cx = np.zeros(n)
    runs_now = p.last_lease > 0
    cx[off[:-1][runs_now]] = p.sigma * p.gpus[runs_now] / p.c_max
    m.set_objective({x: cx, s: p.value}, sense="max")
    return m


def _plan_arrays(problem: LeaseProblem, X: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = problem
    off = p.lease_offsets()
    row_of = np.repeat(np.arange(p.num_rows), p.last_lease)
    schedule = np.zeros((p.num_rows, p.num_leases), dtype=bool)
    schedule[row_of, np.arange(off[-1]) - off[row_of]] = X > 0.5
    kept = S > 0.5
    schedule[~kept] = False
    chosen = np.full(p.num_jobs, -1, dtype=np.int64)
    chosen[p.row_job[kept]] = np.flatnonzero(kept)
    return chosen, schedule


def _first_lease_gpus(problem: LeaseProblem, chosen: np.ndarray, schedule: np.ndarray) -> np.ndarray:
    out = np.zeros(problem.num_jobs, dtype=np.int64)
    has = chosen >= 0
    rows = chosen[has]
    out[has] = problem.gpus[rows] * schedule[rows, 0]
    return out


def _start_vector(problem: LeaseProblem, packing: Packing) -> np.ndarray:
    off = problem.lease_offsets()
    row_of = np.repeat(np.arange(problem.num_rows), problem.last_lease)
    X = packing.schedule[row_of, np.arange(off[-1]) - off[row_of]].astype(float)
    S = np.zeros(problem.num_rows)
    S[packing.chosen[packing.chosen >= 0]] = 1.0
    return np.concatenate([X, S])


def solve_leases(
    problem: LeaseProblem,
    solver: str = "highs",
    *,
    time_limit: float | None = MIP_SECONDS,
    mip_gap: float | None = None,
    warm_start: bool = True,
) -> LeasePlan:
    """Solve the lease MIP with ``solver``; falls back to :func:`greedy_schedule` (and says
    so in ``fell_back``) when the solver returns no solution: infeasible must-accept set,
    time limit without incumbent, license limit or solver error. ``warm_start`` hands the
    greedy schedule to the solver as a MIP start when it places every must-accept job."""
    p = problem
    t0 = time.perf_counter()
    model = build(p)
    canon = model.canonical()
    build_seconds = time.perf_counter() - t0
    greedy = greedy_schedule(p) if (warm_start or p.num_rows == 0) else None
    common = dict(num_binaries=canon.num_integers, num_rows=canon.num_rows, build_seconds=build_seconds)
    if p.num_rows == 0:
        return LeasePlan(greedy.chosen, greedy.schedule, np.zeros(p.num_jobs, dtype=np.int64), Status.OPTIMAL,
                         0.0, solve_seconds=0.0, **common)
    start = _start_vector(p, greedy) if greedy is not None and greedy.feasible else None
    options = SolveOptions(time_limit=time_limit, mip_gap=mip_gap, start=start)
    result = solve(canon, solver, options, check=False)
    solve_seconds = result.timings.translate + result.timings.solve
    if result.status in _SOLVED and result.has_solution:
        chosen, schedule = _plan_arrays(p, result.value("X"), result.value("S"))
        return LeasePlan(chosen, schedule, _first_lease_gpus(p, chosen, schedule), result.status,
                         float(result.objective), solve_seconds=solve_seconds, **common)
    greedy = greedy if greedy is not None else greedy_schedule(p)
    why = f"{solver}: {result.status}" + (f" ({result.message})" if result.message else "")
    dropped = np.flatnonzero(p.must_accept & (greedy.chosen < 0))
    note = f"; must-accept jobs {dropped[:10].tolist()} left unplaced" if dropped.size else ""
    return LeasePlan(greedy.chosen, greedy.schedule, _first_lease_gpus(p, greedy.chosen, greedy.schedule),
                     result.status, p.objective_of(greedy.chosen, greedy.schedule), solve_seconds=solve_seconds,
                     fell_back=f"{why}; used the published greedy schedule{note}", **common)


def _free(problem: LeaseProblem, reserved: np.ndarray | None) -> np.ndarray:
    free = problem.capacity.copy()
    if reserved is not None:
        reserved = np.asarray(reserved, dtype=float).reshape(-1)
        if reserved.shape != free.shape:
            raise ProblemError(f"reserved has {reserved.size} entries for {free.size} leases")
        free -= reserved
    return free


def _pack(problem: LeaseProblem, order: np.ndarray, free: np.ndarray, *, stop_at_failure: bool) -> Packing:
    """Rows in ``order``, one per job at most: each takes the *latest* ``L_r`` leases before
    ``M_r`` that still have ``g_r`` GPUs free (the published scan from ``M_r - 1`` down)."""
    p = problem
    chosen = np.full(p.num_jobs, -1, dtype=np.int64)
    schedule = np.zeros((p.num_rows, p.num_leases), dtype=bool)
    ok = True
    for r in order.tolist():
        j = p.row_job[r]
        if chosen[j] >= 0:
            continue
        g, need, last = p.gpus[r], p.leases_needed[r], p.last_lease[r]
        fits = np.flatnonzero(free[:last] >= g - 1e-9)
        if fits.size < need:
            if stop_at_failure:
                ok = False
                break
            continue
        take = fits[fits.size - need:]
        free[take] -= g
        schedule[r, take] = True
        chosen[j] = r
    return Packing(ok, chosen, schedule, free)


def greedy_admission(problem: LeaseProblem, new_job: int, *, reserved: np.ndarray | None = None) -> Packing:
    """The published admission test for SLO job ``new_job``: pack every ``must_accept`` job
    and the new one; accepted (``feasible``) iff all fit.

    Each job is tried with one option only: its tightest (smallest ``M_r``; the published
    check packs the first row of each job in its sort order, which within a job is the
    smallest ``M``). Jobs go largest ``g`` first, then least slack ``M_r - L_r``, then latest
    ``M_r`` (stable), each into the latest leases with room (:func:`_pack`); the first job
    that does not fit rejects. ``reserved`` (L,): GPUs already held per lease by jobs whose
    schedule is kept fixed (the published cached MIP schedules), taken off the capacity.
    """
    p = problem
    if not 0 <= new_job < p.num_jobs or not (p.row_job == new_job).any():
        raise ProblemError(f"greedy admission: job {new_job} has no option rows")
    member = p.must_accept.copy()
    member[new_job] = True
    rows = np.flatnonzero(member[p.row_job])
    by_job = rows[np.lexsort((rows, p.last_lease[rows], p.row_job[rows]))]
    first = np.ones(by_job.size, dtype=bool)
    first[1:] = p.row_job[by_job[1:]] != p.row_job[by_job[:-1]]
    tight = np.sort(by_job[first])
    g, M, L = p.gpus[tight], p.last_lease[tight], p.leases_needed[tight]
    order = tight[np.lexsort((-M, M - L, -g))]
    return _pack(p, order, _free(p, reserved), stop_at_failure=True)


def greedy_schedule(problem: LeaseProblem, *, reserved: np.ndarray | None = None) -> Packing:
    """The published fallback schedule when the MIP fails: rows by value (highest first),
    then largest ``g``, least slack ``M_r - L_r``, latest ``M_r``; a job keeps its first row
    that fits (latest leases with room) and a row that does not fit is skipped, so a job
    falls back to its next option. ``must_accept`` jobs go first (in the published code every
    job is one). ``feasible``: every must-accept job was placed (the published code then
    gives up on the greedy if any job was left out)."""
    p = problem
    g, M, L = p.gpus, p.last_lease, p.leases_needed
    order = np.lexsort((-M, M - L, -g, -p.value, ~p.must_accept[p.row_job]))
    packing = _pack(p, order, _free(p, reserved), stop_at_failure=False)
    feasible = bool((packing.chosen[p.must_accept] >= 0).all())
    return Packing(feasible, packing.chosen, packing.schedule, packing.free)


def plan_violations(problem: LeaseProblem, chosen: np.ndarray, schedule: np.ndarray) -> list[str]:
    """What a plan breaks (empty: none): capacity, lease counts and deadlines of kept rows,
    leases of rows not kept, one option per job, must-accept jobs."""
    p = problem
    out = []
    load = (p.gpus[:, None] * schedule).sum(axis=0)
    if (load > p.capacity + 1e-9).any():
        out.append(f"capacity exceeded in leases {np.flatnonzero(load > p.capacity + 1e-9).tolist()}")
    kept = np.zeros(p.num_rows, dtype=bool)
    kept[chosen[chosen >= 0]] = True
    if (chosen >= 0).any() and (p.row_job[chosen[chosen >= 0]] != np.flatnonzero(chosen >= 0)).any():
        out.append("chosen rows belong to other jobs")
    late = schedule & (np.arange(p.num_leases)[None, :] >= p.last_lease[:, None])
    if late.any():
        out.append(f"rows {np.flatnonzero(late.any(axis=1)).tolist()} run at or after their last lease")
    counts = schedule.sum(axis=1)
    if (counts[kept] != p.leases_needed[kept]).any():
        out.append(f"kept rows {np.flatnonzero(kept & (counts != p.leases_needed)).tolist()} get the wrong lease count")
    if schedule[~kept].any():
        out.append(f"rows not kept run: {np.flatnonzero(~kept & schedule.any(axis=1)).tolist()}")
    if (p.must_accept & (chosen < 0)).any():
        out.append(f"must-accept jobs {np.flatnonzero(p.must_accept & (chosen < 0)).tolist()} not accepted")
    return out


def adaptive_sigma(unaccepted_waiting: int) -> float:
    """Published 'adaptive' objective: σ = −1 when SLO jobs are waiting unaccepted (counted at
    the previous lease boundary plus those rejected since), else +1."""
    return -1.0 if unaccepted_waiting > 0 else 1.0


def gpu_bin(gpus: np.ndarray) -> np.ndarray:
    """Published GPU binning for the MIP: 3-4 → 4, 5-7 → 8; 1, 2 and anything above 8 unchanged."""
    g = np.asarray(gpus, dtype=np.int64)
    return np.where((g >= 3) & (g <= 4), 4, np.where((g >= 5) & (g <= 7), 8, g))


def preemption_overhead(resume: np.ndarray, gpus: np.ndarray, *, resume_cost: float = RESUME_OVERHEAD,
                        checkpoint_cost: float = CHECKPOINT_OVERHEAD) -> np.ndarray:
    """Total restart overhead a job has accumulated: ``resume · (0.4 + 0.1) · (1 + log2 g)``.

    ``resume`` (published) counts the job's starts: it is 0 at submission and grows by one each
    time the job runs after not running (its first start included), so a job that ran once
    pays once. ``g`` is the job's own GPU count (not binned). The job ends when its progress
    reaches its true duration plus this, in the trace's time unit (the constants are not
    rescaled between minute and second traces)."""
    g = np.asarray(gpus, dtype=float)
    return np.asarray(resume, dtype=float) * (resume_cost + checkpoint_cost) * (1.0 + np.log2(g))


def estimated_duration(duration: np.ndarray, gpus: np.ndarray, lease: float) -> np.ndarray:
    """Published admission estimate ``int(duration · (1 + (1 + log2 g)(0.4+0.1)/Λ) · 1.1)``:
    one restart per lease plus a 10 % margin."""
    g = np.asarray(gpus, dtype=float)
    coef = 1.0 + (1.0 + np.log2(g)) * (RESUME_OVERHEAD + CHECKPOINT_OVERHEAD) / lease
    return np.floor(np.asarray(duration, dtype=float) * coef * DURATION_MARGIN).astype(np.int64)


def leases_needed(remaining: np.ndarray, lease: float) -> np.ndarray:
    """``ceil(remaining estimated time / Λ)``."""
    return np.ceil(np.asarray(remaining, dtype=float) / lease).astype(np.int64)


def last_lease(deadline: np.ndarray, lease: float, current_lease: int) -> np.ndarray:
    """Published ``M = floor(absolute deadline / Λ) − index of lease 0``: leases ``0..M-1`` end
    by the deadline."""
    return (np.floor(np.asarray(deadline, dtype=float) / lease) - current_lease).astype(np.int64)
