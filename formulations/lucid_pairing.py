"""Lucid's packing decision made exact: which waiting jobs start alone and which share a running
job's GPUs, as one integer program over the measured pair speeds (``lucid-exact``).

W waiting jobs (job w needs ``gpus[w]`` GPUs, is worth ``alone[w]`` started alone), H running jobs
that may host, and P candidate pairs (waiting ``pair_job[p]`` on host ``pair_host[p]``, worth
``pair_value[p]``). With ``y_w`` (w starts alone) and ``x_p`` (pair p is formed) binary::

    maximize   sum_w alone_w y_w + sum_p pair_value_p x_p
    subject to y_w + sum_{p of w} x_p <= 1        every waiting job
               sum_{p of h} x_p <= 1               every host
               sum_w gpus_w y_w <= free            the GPUs free

A job's worth is the share of itself it completes per second: ``speed / estimated duration``;
a pair is worth its guest's share at its pair speed less what its host loses (``(1 - host speed) /
host's estimated remaining time``). Lucid's greedy walk takes the jobs in priority order and gives
each the first host its rules allow; the program weighs every choice of one decision together.
Arrays in, arrays out: nothing here knows about clocks or traces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optim import Model, SolveOptions, Status, solve
from optim.sparse import CsrArrays

_SOLVED = (Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT)


@dataclass(frozen=True)
class PairingProblem:
    """One decision in one virtual cluster (module doc)."""

    gpus: np.ndarray
    alone: np.ndarray
    pair_job: np.ndarray
    pair_host: np.ndarray
    pair_value: np.ndarray
    free: int


@dataclass(frozen=True)
class Pairing:
    """Each waiting job's outcome: ``alone[w]``, or ``host[w]`` (a host index; -1: none), the
    solve's status, a note where the solver gave no solution (then nothing starts), and whether a
    solver ran (not where the optimum is plain: every job fits and is worth most alone, or no job
    fits and none may pair)."""

    alone: np.ndarray
    host: np.ndarray
    status: Status
    note: str = ""
    solved: bool = True


def build(problem: PairingProblem) -> Model:
    p = problem
    W, P = p.gpus.size, p.pair_job.size
    m = Model("lucid_pairing")
    y = m.add_variables("y", W, vtype="binary")
    x = m.add_variables("x", P, vtype="binary")
    H = int(p.pair_host.max(initial=-1)) + 1
    once = {y: _one_per_column(np.arange(W), W), x: _one_per_column(p.pair_job, W)}
    m.add_rows("once", once, hi=1.0)
    if P:
        m.add_rows("one_guest", {x: _one_per_column(p.pair_host, H)}, hi=1.0)
    m.add_rows("free_gpus", {y: p.gpus.astype(float)[None, :]}, hi=float(p.free))
    m.set_objective({y: p.alone, x: p.pair_value}, sense="max")
    return m


def _one_per_column(row: np.ndarray, rows: int) -> CsrArrays:
    """The (rows, len(row)) 0/1 matrix with column c's one in row ``row[c]``."""
    return CsrArrays(np.ones(row.size), np.argsort(row, kind="stable"),
                     np.concatenate([[0], np.cumsum(np.bincount(row, minlength=rows))]), (rows, row.size))


def solve_pairing(problem: PairingProblem, solver: str = "highs", time_limit: float | None = 5.0) -> Pairing:
    """The program solved by ``solver``; where it gives no solution, nothing starts and the note
    says why."""
    W = problem.gpus.size
    best_pair = np.zeros(W)
    np.maximum.at(best_pair, problem.pair_job, problem.pair_value)
    if problem.gpus.sum() <= problem.free and (problem.alone >= best_pair).all():
        # every job fits alone and is worth most alone: that is optimal (no row binds), no solve
        return Pairing(np.ones(W, dtype=bool), np.full(W, -1), Status.OPTIMAL, solved=False)
    if not problem.pair_job.size and (problem.gpus > problem.free).all():
        # no job fits alone and none may pair: nothing starting is the only feasible point
        return Pairing(np.zeros(W, dtype=bool), np.full(W, -1), Status.OPTIMAL, solved=False)
    result = solve(build(problem).canonical(), solver, SolveOptions(time_limit=time_limit), check=False)
    if result.status not in _SOLVED or not result.has_solution:
        why = f"{solver}: {result.status}" + (f" ({result.message})" if result.message else "")
        return Pairing(np.zeros(W, dtype=bool), np.full(W, -1), result.status, f"{why}; no job started")
    host = np.full(W, -1)
    formed = result.value("x") > 0.5
    host[problem.pair_job[formed]] = problem.pair_host[formed]
    return Pairing(result.value("y") > 0.5, host, result.status)


__all__ = ["Pairing", "PairingProblem", "build", "solve_pairing"]
