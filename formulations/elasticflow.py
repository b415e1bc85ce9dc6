"""ElasticFlow admission control: the exact MILP, its LP relaxation and the published greedy.

Slots k = 0..K-1 from now; ``capacity[k]`` = G_k free GPUs; ``usable[j, k]`` = δ_jk seconds
job j can run in slot k (the slot length, partial in its deadline's slot, 0 after the
deadline or before it exists); sizes n_s = ``gpu_counts[s]``; T_js = ``throughput[j, s]``
iterations/s (NaN or <= 0: size not allowed, which also encodes a per-job maximum);
I_j = ``remaining[j]`` iterations. Variables exist only for allowed (j, s) with δ_jk > 0::

    MILP  x_jsk ∈ {0, 1}
          Σ_s x_jsk <= 1                          one size per job per slot
          Σ_j Σ_s n_s x_jsk <= G_k                capacity
          Σ_k Σ_s δ_jk T_js x_jsk >= I_j          deadline (row scaled by 1/I_j)
          minimize Σ n_s δ_jk x_jsk               GPU-seconds the plan computes with

The objective is the "minimum satisfactory share" of deadlines.md: GPU-seconds priced
with δ_jk, the seconds the job can use, not the full ``slot_seconds``; both agree except
in a job's first and deadline slots, where δ prices only what the job can use (admission
only needs feasibility; the objective picks, among feasible plans, one that leaves most
GPU time to others, which :func:`formulations.leftover.distribute_leftover` then hands out).

LP relaxation (:func:`build_lp`): T̂_j = the concave hull (upper hull) of
{(0, 0)} ∪ {(n_s, T_js): s allowed} on [0, n̄_j], n̄_j = largest allowed size; y_jk
time-averaged GPUs, τ_jk iterations/s::

          0 <= y_jk <= n̄_j,  τ_jk >= 0
          τ_jk <= T_a + (T_b - T_a)/(n_b - n_a) (y_jk - n_a)   each hull segment (a, b)
          Σ_j y_jk <= G_k,   Σ_k δ_jk τ_jk >= I_j,   minimize Σ δ_jk y_jk

LP infeasible ⇒ MILP infeasible: map a MILP point x to y_jk = Σ_s n_s x_jsk,
τ_jk = Σ_s T_js x_jsk. With at most one x_jsk = 1, (y_jk, τ_jk) is (0, 0) or an allowed
(n_s, T_js): a point of the set whose upper hull is T̂_j, so it lies under every segment
cut, and 0 <= y_jk <= n̄_j. Capacity, deadline and objective are the same linear forms
in (y, τ) as in x, so the image is LP-feasible with the same objective. Contrapositive:
no LP point ⇒ no MILP point; and the LP optimum is a lower bound on the MILP's.

:func:`greedy_plan` is the published heuristic, :func:`insert_job` its one-job rule on what
another plan leaves free, and :func:`solve_admission` the decision (LP certificate, then MILP,
greedy fallback reported in ``Plan.fell_back``); this project's leftover-GPU rule is
:func:`formulations.leftover.distribute_leftover`. No knowledge of traces,
files or simulators: only arrays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from optim import Capability, Model, Result, SolveOptions, Status, get_backend, solve
from optim.sparse import scipy_sparse as sp

from .problem import ProblemError

#: relative tolerance on delivered iterations (plans, checks, the greedy's comparisons use less)
TOL = 1e-6
#: the greedy counts a job done at ``remaining * (1 - GREEDY_TOL)`` (float round-off only)
GREEDY_TOL = 1e-9


@dataclass(frozen=True)
class AdmissionProblem:
    """One admission decision's input (module doc); J jobs, K slots, S sizes."""

    capacity: np.ndarray
    usable: np.ndarray
    gpu_counts: np.ndarray
    throughput: np.ndarray
    remaining: np.ndarray
    slot_seconds: np.ndarray

    def __post_init__(self) -> None:
        for name in ("capacity", "usable", "throughput", "remaining", "slot_seconds", "gpu_counts"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float))
        cap, use, n, T = self.capacity, self.usable, self.gpu_counts, self.throughput
        if cap.ndim != 1 or cap.size == 0:
            raise ProblemError(f"admission: capacity must be a non-empty 1-D array, got shape {cap.shape}")
        K = cap.shape[0]
        if n.ndim != 1 or n.size == 0:
            raise ProblemError(f"admission: gpu_counts must be a non-empty 1-D array, got shape {n.shape}")
        S = n.shape[0]
        if self.remaining.ndim != 1:
            raise ProblemError(f"admission: remaining must be 1-D, got shape {self.remaining.shape}")
        J = self.remaining.shape[0]
        for name, want in (("usable", (J, K)), ("throughput", (J, S)), ("slot_seconds", (K,))):
            if getattr(self, name).shape != want:
                raise ProblemError(f"admission: {name} has shape {getattr(self, name).shape}, expected {want} "
                                   f"(J={J} jobs, K={K} slots, S={S} sizes)")
        if not (np.isfinite(cap).all() and (cap >= 0).all() and (cap == np.round(cap)).all()):
            raise ProblemError("admission: capacity must hold integers >= 0")
        if not ((n >= 1).all() and (n == np.round(n)).all() and (np.diff(n) > 0).all()):
            raise ProblemError(f"admission: gpu_counts must be strictly increasing integers >= 1, got {n}")
        if not (np.isfinite(self.slot_seconds).all() and (self.slot_seconds > 0).all()):
            raise ProblemError("admission: slot_seconds must be finite and > 0")
        if not (np.isfinite(use).all() and (use >= 0).all()):
            raise ProblemError("admission: usable must be finite and >= 0")
        over = np.argwhere(use > self.slot_seconds * (1 + 1e-9))
        if over.size:
            j, k = over[0]
            raise ProblemError(f"admission: job {j} has usable[{j}, {k}] = {use[j, k]} > slot length "
                               f"{self.slot_seconds[k]}")
        if np.isinf(T).any():
            raise ProblemError("admission: throughput must be finite, NaN or <= 0 (not allowed)")
        if not np.isfinite(self.remaining).all():
            raise ProblemError("admission: remaining must be finite")
        object.__setattr__(self, "capacity", cap.astype(np.int64))
        object.__setattr__(self, "gpu_counts", n.astype(np.int64))

    @property
    def num_jobs(self) -> int:
        return int(self.remaining.shape[0])

    @property
    def num_slots(self) -> int:
        return int(self.capacity.shape[0])

    @cached_property
    def allowed(self) -> np.ndarray:
        """(J, S): size s is allowed for job j (throughput finite and > 0)."""
        T = self.throughput
        return np.isfinite(T) & (np.nan_to_num(T, nan=0.0) > 0)

    @cached_property
    def _rates(self) -> np.ndarray:
        return np.where(self.allowed, np.nan_to_num(self.throughput, nan=0.0), 0.0)

    def rates(self) -> np.ndarray:
        """(J, S) throughput with 0 where not allowed."""
        return self._rates

    @cached_property
    def level_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lookup tables of the greedy: ``best[j, g]`` = index of job j's largest allowed size
        <= g GPUs (S: none) for g = 0..max capacity; sizes and rates with a 0 appended at S."""
        J, S = self.allowed.shape
        mark = np.zeros((J, int(self.capacity.max()) + 1), dtype=np.int64)
        j, s = np.nonzero(self.allowed & (self.gpu_counts[None, :] < mark.shape[1]))
        mark[j, self.gpu_counts[s]] = s + 1
        best = np.maximum.accumulate(mark, axis=1) - 1
        best[best < 0] = S
        return best, np.append(self.gpu_counts, 0), np.concatenate([self._rates, np.zeros((self.num_jobs, 1))], 1)

    def deadline_slot(self) -> np.ndarray:
        """(J,) each job's last slot with usable time (-1: none)."""
        live = self.usable > 0
        return np.where(live.any(axis=1), self.num_slots - 1 - np.argmax(live[:, ::-1], axis=1), -1)


@dataclass
class Plan:
    """An admission answer: ``gpus[j, k]`` GPUs planned for job j in slot k.

    ``method``: what produced it ("milp", "lp" = rejected by the LP certificate, "greedy");
    ``fell_back``: why the greedy answered instead of the MILP (None: it did not);
    ``status``: the deciding solver's status (None for the greedy alone); ``num_binaries``
    and ``num_rows``: the MILP's size (``num_rows`` 0 when it was not built);
    ``objective``: GPU-seconds Σ gpus·usable of the plan; ``lp_bound``: the LP's optimum
    (a lower bound on any plan's objective); ``job_fits``: the greedy's per-job verdict.
    ``build_seconds`` / ``solve_seconds``: model building / solver and greedy time.
    """

    feasible: bool
    gpus: np.ndarray
    method: str
    fell_back: str | None = None
    status: Status | None = None
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    num_binaries: int = 0
    num_rows: int = 0
    objective: float | None = None
    lp_bound: float | None = None
    job_fits: np.ndarray | None = None
    run: GreedyRun | None = None


@dataclass(frozen=True)
class GreedyRun:
    """What :func:`greedy_plan` did, position by position of its planning order: the jobs'
    ``keys``, the ``free`` profile before each position (one row more), each ``row`` planned
    and whether it ``fits``. A later call on the same slots resumes after the longest common
    prefix of the two orders (the plans there are the same, jobs being planned one by one)."""

    keys: np.ndarray
    free: np.ndarray
    rows: np.ndarray
    fits: np.ndarray


# ---------------------------------------------------------------------------- the MILP


def milp_index(problem: AdmissionProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(job, size, slot) of each MILP column, in column order: allowed (j, s), usable > 0."""
    mask = problem.allowed[:, :, None] & (problem.usable > 0)[:, None, :]
    return np.nonzero(mask)


def num_binaries(problem: AdmissionProblem) -> int:
    """Columns :func:`build_milp` would create, without building it."""
    return int(problem.allowed.sum(axis=1) @ (problem.usable > 0).sum(axis=1))


def build_milp(problem: AdmissionProblem) -> Model:
    """The exact admission MILP (module doc); one block ``x`` in :func:`milp_index` order.

    One-size rows only for (j, k) with two or more sizes (one binary needs none), deadline
    rows only for jobs with ``remaining > 0``."""
    K = problem.num_slots
    jj, ss, kk = milp_index(problem)
    V = jj.shape[0]
    n = problem.gpu_counts.astype(float)
    m = Model("elasticflow_admission")
    x = m.add_variables("x", V, vtype="binary")
    cols = np.arange(V)
    _, inverse, counts = np.unique(jj * K + kk, return_inverse=True, return_counts=True)
    multi = counts[inverse] >= 2
    if multi.any():
        _, rows = np.unique(inverse[multi], return_inverse=True)
        one = sp.csr_matrix((np.ones(rows.size), (rows, cols[multi])), shape=(int(rows.max()) + 1, V))
        m.add_rows("one_size", {x: one}, hi=1.0)
    m.add_rows("capacity", {x: sp.csr_matrix((n[ss], (kk, cols)), shape=(K, V))},
               hi=problem.capacity.astype(float))
    _deadline_rows(m, x, problem, jj, problem.usable[jj, kk] * problem.rates()[jj, ss])
    m.set_objective({x: n[ss] * problem.usable[jj, kk]}, sense="min")
    return m


def _deadline_rows(m: Model, var, problem: AdmissionProblem, job: np.ndarray, iters: np.ndarray) -> None:
    """Rows Σ iters / I_j >= 1 for each job with I_j > 0 (``job[c]``: the column's job)."""
    need = problem.remaining
    busy = np.flatnonzero(need > 0)
    if busy.size == 0:
        return
    row_of = np.full(problem.num_jobs, -1)
    row_of[busy] = np.arange(busy.size)
    keep = row_of[job] >= 0
    cols = np.flatnonzero(keep)
    mat = sp.csr_matrix((iters[keep] / need[job[keep]], (row_of[job[keep]], cols)), shape=(busy.size, var.size))
    m.add_rows("deadline", {var: mat}, lo=1.0)


def milp_start(problem: AdmissionProblem, gpus: np.ndarray) -> np.ndarray:
    """The MILP column vector of a plan (``x_jsk = 1`` iff ``gpus[j, k] == n_s``)."""
    jj, ss, kk = milp_index(problem)
    return (np.asarray(gpus)[jj, kk] == problem.gpu_counts[ss]).astype(float)


def decode_milp(problem: AdmissionProblem, result: Result) -> np.ndarray:
    """(J, K) GPUs of a solved :func:`build_milp` model."""
    jj, ss, kk = milp_index(problem)
    on = np.rint(result.value("x")) > 0.5
    gpus = np.zeros((problem.num_jobs, problem.num_slots), dtype=np.int64)
    np.add.at(gpus, (jj[on], kk[on]), problem.gpu_counts[ss[on]])
    return gpus


# ---------------------------------------------------------------------------- the LP


def hull_segments(problem: AdmissionProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Segments of every job's concave hull: (job, slope, intercept), so that
    T̂_j(y) = min over job j's segments of ``slope * y + intercept`` on [0, n̄_j].

    Point i of {(0, 0)} ∪ allowed sizes is a hull vertex iff it lies strictly above the
    chord of every allowed pair a < i < b (all S^3 triples at once, S is small)."""
    J, S = problem.throughput.shape
    ok = np.concatenate([np.ones((J, 1), dtype=bool), problem.allowed], axis=1)  # point 0 = (0, 0)
    n = np.concatenate([[0.0], problem.gpu_counts.astype(float)])
    T = np.concatenate([np.zeros((J, 1)), problem.rates()], axis=1)
    a, i, b = np.meshgrid(np.arange(S + 1), np.arange(S + 1), np.arange(S + 1), indexing="ij")
    tri = (a < i) & (i < b)
    a, i, b = a[tri], i[tri], b[tri]
    # cross >= 0 (with round-off slack): point i is on or under the chord a-b, so not a vertex
    chord = T[:, a] * (n[b] - n[i]) + T[:, b] * (n[i] - n[a])
    cross = chord - T[:, i] * (n[b] - n[a])
    scale = 1e-12 * np.maximum(np.abs(chord), 1.0)
    under = (cross >= -scale) & ok[:, a] & ok[:, b] & ok[:, i]
    covered = np.zeros((J, S + 1), dtype=bool)
    for col in range(S + 1):  # S+1 columns, vectorized over jobs and triples
        covered[:, col] = (under & (i == col)[None, :]).any(axis=1)
    vertex = ok & ~covered
    idx = np.where(vertex, np.arange(S + 1)[None, :], -1)
    prev = np.maximum.accumulate(idx, axis=1)  # last vertex at or before each column
    prev = np.concatenate([np.full((J, 1), -1), prev[:, :-1]], axis=1)
    seg_j, seg_b = np.nonzero(vertex & (prev >= 0))
    seg_a = prev[seg_j, seg_b]
    slope = (T[seg_j, seg_b] - T[seg_j, seg_a]) / (n[seg_b] - n[seg_a])
    return seg_j, slope, T[seg_j, seg_a] - slope * n[seg_a]


def lp_index(problem: AdmissionProblem) -> tuple[np.ndarray, np.ndarray]:
    """(job, slot) of each LP pair: usable > 0 and the job has an allowed size."""
    return np.nonzero((problem.usable > 0) & problem.allowed.any(axis=1)[:, None])


def build_lp(problem: AdmissionProblem) -> Model:
    """The hull relaxation (module doc): blocks ``y`` and ``tau``, one entry per
    :func:`lp_index` pair, and one cut row per (pair, hull segment of its job)."""
    J, K = problem.num_jobs, problem.num_slots
    jj, kk = lp_index(problem)
    P = jj.shape[0]
    top = np.where(problem.allowed, problem.gpu_counts[None, :], 0).max(axis=1).astype(float)
    m = Model("elasticflow_admission_lp")
    y = m.add_variables("y", P, ub=top[jj])
    tau = m.add_variables("tau", P)
    seg_j, slope, intercept = hull_segments(problem)
    order = np.argsort(seg_j, kind="stable")
    seg_j, slope, intercept = seg_j[order], slope[order], intercept[order]
    per_job = np.bincount(seg_j, minlength=J)
    first = np.concatenate([[0], np.cumsum(per_job)[:-1]])
    count = per_job[jj]
    pair = np.repeat(np.arange(P), count)
    within = np.arange(pair.size) - np.repeat(np.cumsum(count) - count, count)
    seg = first[jj[pair]] + within
    R = pair.size
    if R:
        rows = np.arange(R)
        m.add_rows("hull", {tau: sp.csr_matrix((np.ones(R), (rows, pair)), shape=(R, P)),
                            y: sp.csr_matrix((-slope[seg], (rows, pair)), shape=(R, P))},
                   hi=intercept[seg])
    cols = np.arange(P)
    m.add_rows("capacity", {y: sp.csr_matrix((np.ones(P), (kk, cols)), shape=(K, P))},
               hi=problem.capacity.astype(float))
    _deadline_rows(m, tau, problem, jj, problem.usable[jj, kk])
    m.set_objective({y: problem.usable[jj, kk]}, sense="min")
    return m


# ---------------------------------------------------------------------------- plans


def delivered(problem: AdmissionProblem, gpus: np.ndarray) -> np.ndarray:
    """(J,) iterations a plan delivers (sizes that are not allowed deliver nothing)."""
    gpus = np.asarray(gpus, dtype=np.int64)
    s = np.clip(np.searchsorted(problem.gpu_counts, gpus), 0, problem.gpu_counts.size - 1)
    match = problem.gpu_counts[s] == gpus
    rate = np.where(match, np.take_along_axis(problem.rates(), s, axis=1), 0.0)
    return (problem.usable * rate).sum(axis=1)


def plan_objective(problem: AdmissionProblem, gpus: np.ndarray) -> float:
    """GPU-seconds Σ gpus·usable (the MILP's objective)."""
    return float((np.asarray(gpus) * problem.usable).sum())


def plan_violations(problem: AdmissionProblem, gpus: np.ndarray, *, deadlines: bool = True) -> list[str]:
    """What is wrong with a plan (empty: nothing): shape, capacity per slot, sizes (one
    allowed size or 0 per job and slot, only where usable > 0) and, with ``deadlines``,
    each job's remaining iterations delivered (relative tolerance :data:`TOL`)."""
    gpus = np.asarray(gpus)
    J, K = problem.num_jobs, problem.num_slots
    if gpus.shape != (J, K):
        return [f"plan has shape {gpus.shape}, expected {(J, K)}"]
    out = []
    load = gpus.sum(axis=0)
    for k in np.flatnonzero(load > problem.capacity):
        out.append(f"slot {k}: {load[k]} GPUs planned, {problem.capacity[k]} free")
    s = np.clip(np.searchsorted(problem.gpu_counts, gpus), 0, problem.gpu_counts.size - 1)
    ok = (problem.gpu_counts[s] == gpus) & np.take_along_axis(problem.allowed, s, axis=1)
    for j, k in np.argwhere((gpus != 0) & ~ok):
        out.append(f"job {j}, slot {k}: {gpus[j, k]} GPUs is not an allowed size")
    for j, k in np.argwhere((gpus != 0) & (problem.usable <= 0)):
        out.append(f"job {j}, slot {k}: GPUs planned where the job cannot run")
    if deadlines:
        got, need = delivered(problem, gpus), problem.remaining
        for j in np.flatnonzero(got < need - TOL * np.maximum(need, 1.0)):
            out.append(f"job {j}: plan delivers {got[j]:.6g} of {need[j]:.6g} iterations by its deadline")
    return out


def greedy_plan(problem: AdmissionProblem, keys: np.ndarray | None = None, resume: GreedyRun | None = None) -> Plan:
    """The published ElasticFlow greedy, restated on slots (pkusys/ElasticFlow,
    ``scheduler.py``: ``estimate_all_jobs`` and ``ef_sim_allocation``).

    Jobs go in deadline order (last usable slot, then its usable seconds, i.e. the exact
    deadline, then index) onto the free-capacity step function, each subtracting its plan.
    A job's levels are its allowed sizes, ascending. For level q, walk its usable slots
    backward from the deadline; in each the job gets the largest level <= min(q, free_k)
    (0 if none); the first q whose walk accumulates ``remaining`` wins, and the slot
    where it did is the job's *point* p. The plan is then laid forward: slots before p
    get the largest level <= min(q_prev, free_k) (q_prev = the level below q, 0 for the
    smallest), slots from p on get the q walk's sizes, and the job stops in the slot
    where its iterations are done. Feasible iff every job found a level.

    Where this differs from the summary in deadlines.md ("smallest power-of-two share q
    whose plan, walking backward, finishes; subtract"), as the published code does it:

    * the job does not keep one size: in slots with fewer than q free GPUs it takes the
      largest allowed size that fits, and before its point it runs at the level below q
      (so with q above the smallest level it starts now and finishes before the
      deadline, holding more GPU time than the backward walk needed);
    * levels are the sizes in the job's throughput table up to its maximum (powers of
      two there), not all powers of two;
    * a job that fits at no level is still planned (largest level that fits in every
      slot, in the code also past its deadline) and later jobs are planned around it;
      the whole check fails, so every job arriving at that event is declined;
    * the code plans on an event-time step function with its end time rounded up to the
      60 s scheduling slot; here slots are the caller's and a job holds its GPUs for
      the whole slot in which it finishes.

    ``keys`` name the jobs (default: their indices) and break deadline ties. ``resume``: a
    previous run (``Plan.run``) on the same slots and capacity in which every job with the
    same key had the same data; its common prefix is reused, not re-planned.
    """
    t0 = time.perf_counter()
    J, K = problem.num_jobs, problem.num_slots
    keys = np.arange(J) if keys is None else np.asarray(keys)
    gpus = np.zeros((J, K), dtype=np.int64)
    d = problem.deadline_slot()
    last_use = problem.usable[np.arange(J), np.maximum(d, 0)]
    order = np.lexsort((keys, last_use, d))
    okeys = keys[order]
    snaps = np.empty((J + 1, K), dtype=np.int64)
    rows = np.zeros((J, K), dtype=np.int64)
    fits = np.ones(J, dtype=bool)
    start = 0
    if resume is not None and resume.free.shape[1] == K and np.array_equal(resume.free[0], problem.capacity):
        m = min(J, resume.keys.shape[0])
        differ = np.flatnonzero(resume.keys[:m] != okeys[:m])
        start = int(differ[0]) if differ.size else m
        snaps[:start + 1] = resume.free[:start + 1]
        rows[:start], fits[:start] = resume.rows[:start], resume.fits[:start]
    else:
        snaps[0] = problem.capacity
    free = snaps[start].copy()
    allowed = problem.allowed
    for pos in range(start, J):
        j = int(order[pos])
        need = float(problem.remaining[j])
        if need > 0:
            if not allowed[j].any() or d[j] < 0:
                fits[pos] = False
            else:
                rows[pos], fits[pos] = _greedy_job(problem, j, need * (1.0 - GREEDY_TOL), free)
                free -= rows[pos]
        snaps[pos + 1] = free
    gpus[order] = rows
    job_fits = np.empty(J, dtype=bool)
    job_fits[order] = fits
    return Plan(feasible=bool(fits.all()), gpus=gpus, method="greedy", solve_seconds=time.perf_counter() - t0,
                objective=plan_objective(problem, gpus), job_fits=job_fits,
                run=GreedyRun(keys=okeys, free=snaps, rows=rows, fits=fits))


def insert_job(problem: AdmissionProblem, gpus: np.ndarray, j: int) -> np.ndarray | None:
    """Job j's greedy plan (:func:`greedy_plan`'s rule for one job) on the capacity the other
    rows of ``gpus`` leave free; ``gpus`` with row j replaced by it, or None if it does not fit.

    A valid plan for the other jobs plus this row is a proof that all fit: admission by
    insertion into the last plan needs no re-planning of the jobs already admitted."""
    gpus = np.asarray(gpus, dtype=np.int64)
    free = problem.capacity - gpus.sum(axis=0) + gpus[j]
    out = gpus.copy()
    if problem.remaining[j] <= 0:
        out[j] = 0
        return out
    if not problem.allowed[j].any() or not (problem.usable[j] > 0).any() or (free < 0).any():
        return None
    plan, fits = _greedy_job(problem, j, float(problem.remaining[j]) * (1.0 - GREEDY_TOL), free)
    if not fits:
        return None
    out[j] = plan
    return out


def _greedy_job(problem: AdmissionProblem, j: int, target: float, free: np.ndarray) -> tuple[np.ndarray, bool]:
    """Job j's greedy plan on the free profile (:func:`greedy_plan`), all levels at once.

    Row i of the (L, K) tables is level q_i's walk: per slot the largest level <= min(q_i,
    free_k) where the job can run (else 0) and the iterations it makes there. The first
    level whose backward sums reach ``target`` wins (levels above the largest free count
    repeat the same row); returns (plan, fits)."""
    best, sizes, rates = problem.level_tables
    usable = problem.usable[j]
    levels = problem.gpu_counts[problem.allowed[j]]
    idx = best[j][np.minimum(levels[:, None], np.where(usable > 0, free, 0))]
    alloc = sizes[idx]
    iters = rates[j][idx] * usable
    reach = np.cumsum(iters[:, ::-1], axis=1) >= target  # [i, m]: slots K-1-m..K-1 reach the target
    i = int(np.argmax(reach.any(axis=1)))
    if not reach[i].any():
        return alloc[-1], False
    point = iters.shape[1] - 1 - int(np.argmax(reach[i]))
    plan, made = alloc[i], iters[i]
    if point:
        early = (alloc[i - 1, :point], iters[i - 1, :point]) if i else (np.zeros(point, np.int64), np.zeros(point))
        plan, made = np.concatenate((early[0], plan[point:])), np.concatenate((early[1], made[point:]))
    plan = plan.copy()
    plan[int(np.argmax(np.cumsum(made) >= target)) + 1:] = 0
    return plan, True


# ---------------------------------------------------------------------------- the decision


def solve_admission(
    problem: AdmissionProblem,
    solver: str = "highs",
    *,
    time_limit: float | None = 10.0,
    max_binaries: int = 50_000,
    mip_gap: float | None = 0.02,
    greedy: Plan | None = None,
) -> Plan:
    """Admit iff the MILP over all jobs (admitted ∪ arriving) is feasible.

    0. A MILP over ``max_binaries`` binaries is not attempted: the greedy answers (the LP
       would only shorten a MILP's work; with none to run it cannot change the answer).
    1. The LP relaxation first: LP infeasible ⇒ reject (``method="lp"``), no MILP.
    2. The published greedy (cheap, run first); its plan, when it fits, is the MILP's
       start where the backend takes one.
    3. The MILP. Its answer is
       the plan: optimal, or a feasible incumbent at the time limit (``status`` says
       which), or infeasible. The greedy answers instead (``method="greedy"``, with the
       reason in ``fell_back``, never silently) when the MILP is too large, stops
       without a point or a proof (time limit, error), or, defensively, reports
       infeasible while the greedy's verified plan fits.

    ``greedy``: the caller's :func:`greedy_plan` of this problem, if it has one (not re-run).
    ``time_limit`` applies to the LP and to the MILP solve each, strictly (``strict_time_limit``:
    a decision never waits on a solver heuristic that overruns it). ``mip_gap`` only bounds how
    far the plan's GPU-seconds may be from the least possible: admission (feasibility)
    does not depend on it, and the last fraction of a percent can take far longer than a
    plan (50 jobs x 7 sizes x 60 slots, ~8,000 binaries: HiGHS reaches 1-5% in 2-6 s and
    has not proven 0.1% after 60 s).
    """
    J, K = problem.num_jobs, problem.num_slots
    nb = num_binaries(problem)
    lp_bound = None
    if greedy is None:
        greedy = greedy_plan(problem)
    build, solve_s = 0.0, greedy.solve_seconds

    def fallback(reason: str, status: Status | None = None, rows: int = 0) -> Plan:
        return Plan(greedy.feasible, greedy.gpus, "greedy", fell_back=reason, status=status, build_seconds=build,
                    solve_seconds=solve_s, num_binaries=nb, num_rows=rows,
                    objective=greedy.objective, lp_bound=lp_bound, job_fits=greedy.job_fits)

    if nb > max_binaries:
        return fallback(f"the MILP would have {nb} binaries > max_binaries={max_binaries}; "
                        f"used the published greedy (it {'fits' if greedy.feasible else 'does not fit'})")
    t = time.perf_counter()
    lp_canon = build_lp(problem).canonical()
    build += time.perf_counter() - t
    t = time.perf_counter()
    lp = solve(lp_canon, solver, SolveOptions(time_limit=time_limit, method="simplex"), check=False)
    solve_s += time.perf_counter() - t
    lp_bound = lp.objective if lp.status is Status.OPTIMAL else None
    if lp.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
        return Plan(False, np.zeros((J, K), dtype=np.int64), "lp", status=lp.status, build_seconds=build,
                    solve_seconds=solve_s, num_binaries=nb, num_rows=0)
    verdict = "fits" if greedy.feasible else "does not fit"
    t = time.perf_counter()
    canon = build_milp(problem).canonical()
    build += time.perf_counter() - t
    options = SolveOptions(time_limit=time_limit, mip_gap=mip_gap, strict_time_limit=True)
    if greedy.feasible and Capability.WARM_START in get_backend(solver).capabilities():
        options = SolveOptions(time_limit=time_limit, mip_gap=mip_gap, strict_time_limit=True,
                               start=milp_start(problem, greedy.gpus))
    t = time.perf_counter()
    res = solve(canon, solver, options, check=False)
    solve_s += time.perf_counter() - t
    rows = canon.num_rows
    if res.has_solution and res.status in (Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT):
        gpus = decode_milp(problem, res)
        bad = plan_violations(problem, gpus)
        if not bad:
            return Plan(True, gpus, "milp", status=res.status, build_seconds=build, solve_seconds=solve_s,
                        num_binaries=nb, num_rows=rows, objective=plan_objective(problem, gpus),
                        lp_bound=lp_bound)
        return fallback(f"the MILP's point ({res.status}) fails the plan check ({bad[0]}); "
                        f"used the published greedy (it {verdict})", res.status, rows)
    if res.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
        if greedy.feasible:
            return fallback(f"the MILP reported {res.status} but the greedy's plan passes the plan check "
                            "(numerical trouble); used the greedy's plan", res.status, rows)
        return Plan(False, np.zeros((J, K), dtype=np.int64), "milp", status=res.status, build_seconds=build,
                    solve_seconds=solve_s, num_binaries=nb, num_rows=rows, lp_bound=lp_bound)
    what = (f"hit the time limit ({time_limit} s) without a feasible point or an infeasibility proof"
            if res.status is Status.TIME_LIMIT else f"stopped with status {res.status} ({res.message})")
    return fallback(f"the MILP ({nb} binaries) {what}; used the published greedy (it {verdict})", res.status, rows)
