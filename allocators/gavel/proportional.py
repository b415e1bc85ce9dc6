"""``proportional``: every job time-shares the cluster's "average GPU"."""

from __future__ import annotations

import numpy as np

from allocators.gavel.heuristic import HeuristicPolicy, runnable
from formulations import Allocation, AllocationProblem


class Proportional(HeuristicPolicy):
    """``x_ij = a * W_j / sum_k W_k`` on the types job i can run on, 0 elsewhere.

    With ``q_ij = W_j / sum_k W_k`` (masked), one common factor ``a`` keeps every job's split
    across types proportional to the cluster's GPU mix and is the largest that satisfies
    both base constraints:

        capacity   a * sum_i s_i q_ij <= W_j   ->  a <= W_j / sum_i s_i q_ij
        time       a * sum_j q_ij     <= 1     ->  a <= 1 / sum_j q_ij

    (minimum over types and jobs with a nonzero denominator). ``a`` may exceed 1 when the
    cluster has spare room: a job that can run everywhere then runs full time.
    """

    name = "proportional"

    def allocate(self, problem: AllocationProblem) -> Allocation:
        W = problem.capacities
        q = np.where(runnable(problem), W / W.sum(), 0.0)
        load, rows = problem.scale_factors @ q, q.sum(axis=1)
        a = min(np.min(W[load > 0] / load[load > 0], initial=np.inf), np.min(1.0 / rows[rows > 0], initial=np.inf))
        return self._allocation(problem, a * q)
