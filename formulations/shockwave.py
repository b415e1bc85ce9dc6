"""Shockwave's market program and its in-window reordering MILP.

Planning window of T rounds of length Δ; N jobs with ``w_j`` GPUs, ``c_j`` epochs done
of ``E_j``, mean epoch duration ``ē_j``, predicted remaining run time ``R_j`` and priority
``π_j``; G GPUs. Variables ``x_jt ∈ {0,1}`` (job j runs in round t), planned epochs
``p_j ∈ [0, E_j − c_j]``, remaining time after the window ``s_j >= 0`` and ``z >= s_j``::

    maximize   Σ_j π_j / (N T) · log((c_j + p_j) / E_j + ε)  −  k z
    subject to Σ_j w_j x_jt <= G                          every round t
               ē_j p_j <= Δ Σ_t x_jt                      progress fits the planned rounds
               s_j >= R_j − ē_j p_j,   z >= s_j            z = max_j max(0, R_j − ē_j p_j)
               s_j <= S_j                                  finish-time fairness (optional)
               Σ_j w_j x_jt >= Σ_j w_j x_j,t+1             rounds sorted by load (breaks the
                                                           symmetry of identical rounds)

The log term is Nash social welfare over normalized progress (Eisenberg–Gale), given to
``optim`` as a log-utility term with its argument range, so a conic backend solves it
exactly and a MILP-only backend by seeded tangent cuts. With ``log_bases`` (the published
``log_approximation_bases``, e.g. 0, 0.2, ..., 1) it is instead the published secant
interpolation of ``log q`` through those progress points (``log LOG_FLOOR`` at 0): a
concave piecewise-linear function, so hypograph variables ``u_j`` under one row per
segment represent it exactly, with no SOS2 binaries. ``S_j`` comes from the hard FTF
rows ``Δ(r+T) + s_j / min(1, G/N) <= ρ_max F̄_j``.

The reordering MILP keeps each job's planned round count ``n_j`` and the capacity and
moves high-priority jobs forward: ``minimize Σ_{n_j>0} (π_j / n_j) Σ_t t · y_jt`` with
``Σ_t y_jt = n_j``. Neither program knows about time beyond the window.

MIP starts: :func:`round_schedule` rounds the market's LP relaxation to a schedule
(usually within a 1e-3 gap of the optimum, so a MIP solver only proves it) and
:func:`reorder_start` gives the reordering MILP a good feasible order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optim import Model, Result
from optim.sparse import scipy_sparse as sp

from .problem import ProblemError

#: floor added to normalized progress inside the log (log(0) is -inf)
LOG_FLOOR = 1e-6


def valid_log_bases(bases) -> bool:
    """Progress points of the log interpolation: at least two, rising strictly from 0 to 1."""
    return (len(bases) >= 2 and bases[0] == 0.0 and bases[-1] == 1.0
            and all(a < b for a, b in zip(bases, bases[1:])))


@dataclass(frozen=True)
class Market:
    """One re-plan's input (see the module doc); arrays have one entry per job."""

    gpus: int
    rounds: int
    round_length: float
    scale_factors: np.ndarray
    epochs_done: np.ndarray
    epochs_total: np.ndarray
    epoch_seconds: np.ndarray
    remaining_seconds: np.ndarray
    k: float
    priorities: np.ndarray | None = None
    finish_slack: np.ndarray | None = None
    log_floor: float = LOG_FLOOR
    log_bases: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("scale_factors", "epochs_done", "epochs_total", "epoch_seconds", "remaining_seconds"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float).reshape(-1))
        n = self.num_jobs
        pri = np.ones(n) if self.priorities is None else np.asarray(self.priorities, dtype=float)
        object.__setattr__(self, "priorities", pri)
        for name in ("scale_factors", "epochs_done", "epochs_total", "epoch_seconds", "remaining_seconds",
                     "priorities"):
            value = getattr(self, name)
            if value.shape != (n,):
                raise ProblemError(f"market: {name} has {value.size} entries for {n} jobs")
            if not np.isfinite(value).all():
                raise ProblemError(f"market: {name} has a non-finite entry")
        if self.gpus < 1 or self.rounds < 1 or not self.round_length > 0 or not self.k >= 0:
            raise ProblemError("market: needs gpus >= 1, rounds >= 1, round length > 0 and k >= 0")
        if (self.scale_factors < 1).any() or (self.scale_factors > self.gpus).any():
            raise ProblemError(f"market: every job needs 1..{self.gpus} GPUs")
        if (self.epochs_total <= 0).any() or (self.epochs_done < 0).any() or (self.epoch_seconds <= 0).any():
            raise ProblemError("market: epochs total and epoch durations must be > 0, epochs done >= 0")
        if (self.priorities < 0).any():
            raise ProblemError("market: priorities must be >= 0")
        if self.log_bases is not None and not valid_log_bases(self.log_bases):
            raise ProblemError("market: log bases must rise strictly from 0 to 1")

    @property
    def num_jobs(self) -> int:
        return self.scale_factors.shape[0]

    @property
    def epochs_left(self) -> np.ndarray:
        return np.maximum(self.epochs_total - self.epochs_done, 0.0)

    def progress_cap(self) -> np.ndarray:
        """Most epochs each job can make in the window."""
        return np.minimum(self.epochs_left, self.rounds * self.round_length / self.epoch_seconds)


def build(market: Market) -> Model:
    """The market program (module doc); blocks ``x`` (N, T), ``p``, ``s``, ``z``."""
    N, T, G = market.num_jobs, market.rounds, market.gpus
    w, e = market.scale_factors, market.epoch_seconds
    m = Model("shockwave_market")
    x = m.add_variables("x", (N, T), vtype="binary")
    p = m.add_variables("p", N, ub=market.epochs_left)
    slack = np.inf if market.finish_slack is None else np.asarray(market.finish_slack, dtype=float)
    s = m.add_variables("s", N, ub=slack)
    z = m.add_variables("z", 1)
    load = sp.kron(sp.csr_matrix(w[None, :]), sp.eye(T, format="csr"), format="csr")
    m.add_rows("capacity", {x: load}, hi=float(G))
    if T > 1:
        diff = sp.eye(T - 1, T, format="csr") - sp.eye(T - 1, T, k=1, format="csr")
        m.add_rows("rounds_by_load", {x: diff @ load}, lo=0.0)
    eye = sp.eye(N, format="csr")
    per_job = sp.kron(eye, sp.csr_matrix(np.ones((1, T))), format="csr")
    m.add_rows("progress", {p: sp.diags(e, format="csr"), x: -market.round_length * per_job}, hi=0.0)
    m.add_rows("remaining", {s: eye, p: sp.diags(e, format="csr")}, lo=market.remaining_seconds)
    m.add_rows("makespan", {z: np.ones((N, 1)), s: -eye}, lo=0.0)
    E = market.epochs_total
    if market.log_bases is not None:  # u_j <= a_i q_j + b_i for every segment i
        slopes, intercepts = _secants(market)
        u = m.add_variables("u", N, lb=-np.inf)
        m.add_rows("utility", {u: sp.vstack([eye] * slopes.size, format="csr"),
                               p: sp.vstack([sp.diags(-a / E, format="csr") for a in slopes], format="csr")},
                   hi=(intercepts[:, None] + slopes[:, None] * (market.epochs_done / E)[None, :]).reshape(-1))
        m.set_objective({z: -market.k, u: market.priorities / (N * T)}, sense="max")
        return m
    m.set_objective({z: -market.k}, sense="max")
    floor = market.log_floor
    low = market.epochs_done / E + floor
    cap = market.progress_cap()
    one_round = np.minimum(cap, market.round_length / market.epoch_seconds)
    m.add_log_utility(market.priorities / (N * T), {p: sp.diags(1.0 / E, format="csr")}, offset=low,
                      argument_range=(low + one_round / E, low + cap / E))
    return m


def round_schedule(market: Market, fractional: np.ndarray) -> np.ndarray:
    """A feasible (N, T) 0/1 schedule near a fractional one (the LP relaxation's ``x``),
    a MIP start for :func:`build`'s program.

    Each job keeps ``floor(Σ_t x_jt)`` rounds (``ceil`` for the jobs whose remaining time
    would otherwise exceed the relaxation's largest, which sets the makespan term), packed
    those jobs first, then largest gang first, into the rounds with the most free GPUs.
    Then each job with a fractional remainder, largest objective gain first, gets one more
    round: one with room for it, or else the one where taking out the jobs that lose
    least makes room, if the objective rises. When the ceilings crowded a job out of some
    of its floor rounds (the top-up gives it back at most one), the same done with floors
    alone is kept instead if it is worth more. Rounds come sorted by load, as the
    program's symmetry rows require."""
    N, T = market.num_jobs, market.rounds
    total = np.asarray(fractional, dtype=float).reshape(N, T).sum(axis=1)
    floors = np.minimum(np.floor(total + 1e-6).astype(np.int64), T)
    level = _remaining(market, total).max(initial=0.0)
    critical = _remaining(market, floors) > level + 1e-9 * max(1.0, level)
    counts = floors.copy()
    counts[critical] = np.minimum(np.ceil(total[critical] - 1e-6), T).astype(np.int64)
    x, free = _pack(market, counts, np.lexsort((-counts, -market.scale_factors, ~critical)))
    crowded = bool((x.sum(axis=1) < floors).any())
    value = _top_up(market, x, free, total)
    if crowded:
        y, y_free = _pack(market, floors, np.lexsort((-floors, -market.scale_factors)))
        if _top_up(market, y, y_free, total) > value + 1e-12 * max(1.0, abs(value)):
            x, free = y, y_free
    return x[:, np.argsort(free, kind="stable")]


def _pack(market: Market, counts: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Jobs in ``order`` each take up to ``counts[j]`` rounds, those with the most free
    GPUs first; returns the schedule and each round's free GPUs."""
    w = market.scale_factors.astype(np.int64)
    x = np.zeros((market.num_jobs, market.rounds), dtype=np.int64)
    free = np.full(market.rounds, market.gpus, dtype=np.int64)
    for j in order.tolist():
        fits = np.flatnonzero(free >= w[j])
        take = fits[np.argsort(-free[fits], kind="stable")[: counts[j]]]
        x[j, take] = 1
        free[take] -= w[j]
    return x, free


def _top_up(market: Market, x: np.ndarray, free: np.ndarray, total: np.ndarray) -> float:
    """Give each job with fewer rounds than its fractional ``total`` (at its turn: a job
    evicted earlier counts) one more where the objective rises (see
    :func:`round_schedule`), largest gain first; updates ``x`` and ``free`` in place and
    returns the schedule's objective."""
    N, T = market.num_jobs, market.rounds
    w = market.scale_factors.astype(np.int64)
    counts = x.sum(axis=1)
    one = np.eye(N, dtype=np.int64)
    value = _plan_value(market, counts)
    gains = _plan_value(market, counts[:, None] + one) - value
    loss = value - _plan_value(market, np.maximum(counts[:, None] - one, 0))
    for j in np.argsort(-gains, kind="stable").tolist():
        if total[j] - counts[j] <= 1e-6 or counts[j] >= T:
            continue
        best_t, best_out, best_value = -1, np.zeros(0, dtype=np.int64), value
        for t in np.flatnonzero(x[j] == 0).tolist():
            out = _evict(x[:, t], free[t], w, loss, w[j])
            if out is None:
                continue
            trial = counts.copy()
            trial[out] -= 1
            trial[j] += 1
            v = float(_plan_value(market, trial))
            if v > best_value + 1e-12:
                best_t, best_out, best_value = t, out, v
                if out.size == 0:
                    break
        if best_t < 0:
            continue
        x[best_out, best_t] = 0
        x[j, best_t] = 1
        free[best_t] += int(w[best_out].sum()) - w[j]
        counts[best_out] -= 1
        counts[j] += 1
        value = best_value
        if best_out.size:
            loss = value - _plan_value(market, np.maximum(counts[:, None] - one, 0))
    return float(value)


def _progress(market: Market, rounds: np.ndarray) -> np.ndarray:
    """Most epochs each job makes in ``rounds`` rounds (shape (N,) or (N, K))."""
    rounds = np.asarray(rounds)
    col = (slice(None),) + (None,) * (rounds.ndim - 1)
    return np.minimum(market.progress_cap()[col], market.round_length * rounds / market.epoch_seconds[col])


def _remaining(market: Market, rounds: np.ndarray) -> np.ndarray:
    """Each job's remaining time after ``rounds`` (possibly fractional) rounds."""
    return np.maximum(market.remaining_seconds - market.epoch_seconds * _progress(market, rounds), 0.0)


def _plan_value(market: Market, counts: np.ndarray) -> np.ndarray | float:
    """The program's objective when each job runs ``counts[j]`` rounds and makes the most
    progress they allow; an (N, K) ``counts`` gives the K objectives of its columns."""
    counts = np.asarray(counts)
    p = _progress(market, counts).reshape(market.num_jobs, -1)
    s = np.maximum(market.remaining_seconds[:, None] - market.epoch_seconds[:, None] * p, 0.0)
    q = (market.epochs_done / market.epochs_total)[:, None] + p / market.epochs_total[:, None]
    value = (market.priorities / (market.num_jobs * market.rounds) @ utility(market, q)
             - market.k * s.max(axis=0, initial=0.0))
    return value if counts.ndim > 1 else float(value[0])


def _secants(market: Market) -> tuple[np.ndarray, np.ndarray]:
    """Slopes and intercepts of the published interpolation's segments (module doc)."""
    bases = np.asarray(market.log_bases, dtype=float)
    values = np.log(np.maximum(bases, market.log_floor))
    slopes = np.diff(values) / np.diff(bases)
    return slopes, values[:-1] - slopes * bases[:-1]


def utility(market: Market, q: np.ndarray) -> np.ndarray:
    """Each job's utility at normalized progress ``q`` (shape (N,) or (N, K)): ``log(q + ε)``,
    or the published interpolation when the market has ``log_bases``."""
    if market.log_bases is None:
        return np.log(q + market.log_floor)
    slopes, intercepts = _secants(market)
    return np.min(slopes.reshape((-1,) + (1,) * q.ndim) * q + intercepts.reshape((-1,) + (1,) * q.ndim), axis=0)


def _evict(members: np.ndarray, free: int, w: np.ndarray, loss: np.ndarray, need: int) -> np.ndarray | None:
    """Jobs to take out of a round (``members``: 0/1 per job) to free ``need`` GPUs, those
    losing least first; None if even all of them do not free enough."""
    if free >= need:
        return np.zeros(0, dtype=np.int64)
    inside = np.flatnonzero(members)
    inside = inside[np.argsort(loss[inside], kind="stable")]
    k = int(np.searchsorted(free + np.cumsum(w[inside]), need))
    return None if k >= inside.size else inside[: k + 1]


def point(model: Model, market: Market, x: np.ndarray) -> np.ndarray:
    """The full variable vector of :func:`build`'s model for the schedule ``x``: the most
    progress its rounds allow, the remaining times and their maximum."""
    x = np.asarray(x, dtype=float).reshape(market.num_jobs, market.rounds)
    rounds = x.sum(axis=1)
    s = _remaining(market, rounds)
    p = _progress(market, rounds)
    values = {"x": x.reshape(-1), "p": p, "s": s, "z": s.max(initial=0.0)}
    if market.log_bases is not None:
        values["u"] = utility(market, (market.epochs_done + p) / market.epochs_total)
    vec = np.zeros(model.num_vars)
    for name, value in values.items():
        vec[model.blocks[name].columns] = value
    return vec


def decode(market: Market, result: Result) -> np.ndarray:
    """The (N, T) 0/1 schedule of a solved market program."""
    return np.rint(result.value("x")).astype(np.int64).reshape(market.num_jobs, market.rounds)


def build_reorder(scale_factors: np.ndarray, gpus: int, rounds: int, counts: np.ndarray,
                  priorities: np.ndarray) -> Model:
    """The reordering MILP (module doc): block ``y`` (N, rounds)."""
    counts = np.asarray(counts, dtype=np.int64)
    N, T = counts.shape[0], int(rounds)
    m = Model("shockwave_reorder")
    y = m.add_variables("y", (N, T), vtype="binary")
    w = np.asarray(scale_factors, dtype=float)
    m.add_rows("capacity", {y: sp.kron(sp.csr_matrix(w[None, :]), sp.eye(T, format="csr"), format="csr")},
               hi=float(gpus))
    m.add_rows("rounds", {y: sp.kron(sp.eye(N, format="csr"), sp.csr_matrix(np.ones((1, T))), format="csr")},
               lo=counts.astype(float), hi=counts.astype(float))
    weight = _reorder_weights(counts, priorities)
    m.set_objective({y: np.outer(weight, np.arange(T, dtype=float))}, sense="min")
    return m


def reorder_start(scale_factors: np.ndarray, gpus: int, rounds: int, counts: np.ndarray,
                  priorities: np.ndarray, schedule: np.ndarray) -> np.ndarray:
    """A feasible point of :func:`build_reorder` from a feasible ``schedule`` with these
    ``counts``: the better of its rounds sorted by total weight ``Σ_j π_j / n_j`` (the best
    order of whole rounds) and a greedy fill where jobs by weight, larger gangs first among
    equals, each take their ``n_j`` earliest rounds with room (skipped when a job finds too
    few rounds: with several GPUs per round a heavy job can leave a light one too few distinct
    rounds). With one GPU per round the fill always completes and is optimal (the heaviest
    jobs get the earliest rounds: the rearrangement inequality)."""
    counts = np.asarray(counts, dtype=np.int64)
    w = np.asarray(scale_factors, dtype=np.int64)
    weight = _reorder_weights(counts, priorities)
    schedule = np.asarray(schedule, dtype=np.int64)
    best = schedule[:, np.argsort(-(weight @ schedule), kind="stable")]
    y = np.zeros_like(best)
    free = np.full(int(rounds), gpus, dtype=np.int64)
    for j in np.lexsort((-w, -weight)).tolist():
        take = np.flatnonzero(free >= w[j])[: counts[j]]
        if take.size < counts[j]:
            return best
        y[j, take] = 1
        free[take] -= w[j]
    order = np.arange(int(rounds), dtype=float)
    return y if weight @ y @ order < weight @ best @ order else best


def _reorder_weights(counts: np.ndarray, priorities: np.ndarray) -> np.ndarray:
    """``π_j / n_j`` for jobs with planned rounds, 0 for the others."""
    return np.where(counts > 0, np.asarray(priorities, dtype=float) / np.maximum(counts, 1), 0.0)
