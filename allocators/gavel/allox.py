"""``allox``: AlloX's min-cost matching of single-GPU jobs to (GPU, position) slots."""

from __future__ import annotations

import numpy as np

from allocators.gavel.heuristic import HeuristicPolicy, arrival_order, resume, runnable
from formulations import Allocation, AllocationProblem, ProblemError
from optim import SolveOptions


def match(processing: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Min-cost assignment of jobs to slots: job i in position k of a GPU of type j costs
    ``k * p_ij`` (``p_ij = R_i / T_ij``, ``inf`` where i cannot run on j).

    Position k counts from the end of a GPU's queue: the job k-th from last delays k
    completions, so the total cost is the sum of completion times. Returns the matched rows,
    their types and the cost; rows matched only at an infinite cost are left out (they get
    a finite stand-in larger than any feasible total, so they lose whenever avoidable).

    Exact compression: GPUs of one type are identical, so with M jobs and F_j free GPUs of
    type j the cheapest slots of type j are position ``r // F_j + 1`` for r = 0..M-1 (F_j
    slots per position); an optimal assignment never needs a dearer one. The matrix is
    M x (M · #types with free GPUs) instead of M x (M · #GPUs).
    """
    M = processing.shape[0]
    types = np.flatnonzero(free > 0)
    col_type = np.repeat(types, M)
    col_pos = np.tile(np.arange(M), types.size) // np.repeat(free[types], M) + 1
    cost = col_pos[None, :] * processing[:, col_type]
    finite = np.isfinite(cost)
    if not finite.any():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 0.0
    cost = np.where(finite, cost, 2.0 * M * cost[finite].max() + 1.0)
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(cost)
    ok = finite[rows, cols]
    return rows[ok], col_type[cols[ok]], float(cost[rows[ok], cols[ok]].sum())


def first_in_line(processing: np.ndarray, rows: np.ndarray, types: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Which matched jobs start now: on each type j the min(F_j, #matched) with the shortest
    processing time (ties: lower row). By the exchange argument these hold the highest
    positions, i.e. run first on their GPUs, in some optimal (GPU, position) assignment."""
    p = processing[rows, types]
    order = np.lexsort((rows, p, types))
    sorted_types = types[order]
    rank = np.arange(order.size) - np.searchsorted(sorted_types, sorted_types)
    start = np.zeros(rows.size, dtype=bool)
    start[order[rank < free[sorted_types]]] = True
    return start


#: the constructor arguments of the AlloX baseline Shockwave compared against
SHOCKWAVE_ALLOX = {"alpha": 0.2, "multi_gpu": True}


class AlloX(HeuristicPolicy):
    """AlloX (as in Gavel): non-preemptive, single-GPU jobs only, needs remaining steps.

    Running jobs keep their worker type until they leave the problem. The waiting jobs, in
    arrival order, are cut to the ``max(#free GPUs, floor(alpha · #waiting))`` longest
    waiting (Gavel's fairness window, default alpha 0.3) and matched to the free GPUs'
    slots by :func:`match`; each GPU's first job (:func:`first_in_line`) starts with
    allocation 1.0 on that GPU's type, the rest wait. Gavel also adds the time since arrival
    to every slot's cost; that is a constant per job and leaves the matching unchanged.

    ``multi_gpu=True`` is Shockwave's variant (which used alpha 0.2): multi-GPU jobs are
    accepted and matched like the others, each counting as ONE free GPU, and a chosen job
    gets allocation ``1 / s_i`` on its type (GPU share ``s_i x_ij = 1``). Only jobs with
    allocation 1.0 (single-GPU jobs) keep their place; multi-GPU jobs return to the waiting
    pool at every call and must be matched again. So ``sum_i s_i x_ij`` = #running + #chosen
    ``<= W_j``. (Shockwave also copies a multi-GPU job's previous ``1 / s`` when it is not
    chosen again, which ignores capacity; that is not reproduced.) Without the flag a
    multi-GPU job is a ProblemError.
    """

    name = "allox"
    fixed_type_order = True
    multi_gpu_jobs = False

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, alpha: float = 0.3,
                 multi_gpu: bool = False):
        super().__init__(solver, options)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"policy 'allox': alpha must lie in [0, 1], got {alpha}")
        self.alpha = alpha
        self.multi_gpu = multi_gpu
        self._placed: dict[int, str] = {}

    def allocate(self, problem: AllocationProblem) -> Allocation:
        s = problem.scale_factors
        multi = np.flatnonzero(s != 1)
        if multi.size and not self.multi_gpu:
            i = multi[0]
            raise ProblemError(f"policy 'allox' schedules single-GPU jobs only; {problem.describe_job(i)} "
                               f"needs {s[i]} GPUs (multi_gpu=True gives Shockwave's variant)")
        R = problem.require("remaining_steps", self.name)
        placement = resume(problem, arrival_order(problem), self._placed, {})
        free = np.floor(placement.free + 1e-9).astype(np.int64)
        waiting = np.asarray(placement.waiting, dtype=np.int64)
        if waiting.size == 0 or free.sum() == 0:
            return self._allocation(problem, placement.x, placement.notes)
        size = min(waiting.size, max(int(free.sum()), int(self.alpha * waiting.size)))
        if size < waiting.size:
            placement.notes.append(f"matched the {size} longest-waiting of {waiting.size} waiting jobs "
                                   f"(alpha={self.alpha:g})")
        window = waiting[:size]
        T = problem.throughputs[window]
        processing = np.where(runnable(problem)[window], R[window, None] / np.where(T > 0, T, 1.0), np.inf)
        rows, types, _ = match(processing, free)
        start = first_in_line(processing, rows, types, free)
        chosen, on = window[rows[start]], types[start]
        placement.x[chosen, on] = 1.0 / s[chosen]
        whole = s[chosen] == 1  # allocation 1.0: placed until the job leaves
        for i, j in zip(chosen[whole], on[whole]):
            self._placed[int(problem.job_ids[i])] = problem.worker_types[j]
        return self._allocation(problem, placement.x, placement.notes)
