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
exactly and a MILP-only backend by seeded tangent cuts. ``S_j`` comes from the hard FTF
rows ``Δ(r+T) + s_j / min(1, G/N) <= ρ_max F̄_j``.

The reordering MILP keeps each job's planned round count ``n_j`` and the capacity and
moves high-priority jobs forward: ``minimize Σ_{n_j>0} (π_j / n_j) Σ_t t · y_jt`` with
``Σ_t y_jt = n_j``. Neither program knows about time beyond the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from optim import Model, Result

from .problem import ProblemError

#: floor added to normalized progress inside the log (log(0) is -inf)
LOG_FLOOR = 1e-6


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
    m.set_objective({z: -market.k}, sense="max")
    E = market.epochs_total
    floor = market.log_floor
    low = market.epochs_done / E + floor
    cap = market.progress_cap()
    one_round = np.minimum(cap, market.round_length / market.epoch_seconds)
    m.add_log_utility(market.priorities / (N * T), {p: sp.diags(1.0 / E, format="csr")}, offset=low,
                      argument_range=(low + one_round / E, low + cap / E))
    return m


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
    weight = np.where(counts > 0, np.asarray(priorities, dtype=float) / np.maximum(counts, 1), 0.0)
    m.set_objective({y: np.outer(weight, np.arange(T, dtype=float))}, sense="min")
    return m
