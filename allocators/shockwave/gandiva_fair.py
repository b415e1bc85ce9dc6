"""``gandiva_fair``: Shockwave's Gandiva-Fair baseline, equal time shares per job."""

from __future__ import annotations

import numpy as np

from allocators.gavel.heuristic import HeuristicPolicy
from formulations import Allocation, AllocationProblem
from formulations.rates import equal_shares, runnable

#: relative slack before a type counts as oversubscribed (float noise of the row scaling)
_CAPACITY_SLACK = 1e-9


class GandivaFair(HeuristicPolicy):
    """Every job gets the same time share of each worker type it can run on, whatever its
    scale factor (Shockwave's Gandiva-Fair baseline):

        x_ij = W_j / m    where job i can run on type j (T_ij > 0 and s_i <= W_j), else 0,

    then each row is scaled down so it sums to <= 1, i.e. ``x_i <- x_i / max(1, sum_j x_ij)``.
    On one type this is ``x_i = min(1, W / m)``. Throughputs and remaining work are ignored.

    Unlike ``isolated`` the share is NOT divided by ``s_i``, so capacity is NOT guaranteed
    once there are multi-GPU jobs: ``sum_i s_i x_ij`` may exceed ``W_j`` (it is ``<= W_j``
    when every job has ``s_i = 1``). The allocation is then a priority, not a feasible
    schedule, and the round mechanism arbitrates; the Allocation says so in its notes and
    :func:`formulations.allocation_violations` reports the over-capacity types.
    """

    name = "gandiva_fair"
    system = "Shockwave"

    def allocate(self, problem: AllocationProblem) -> Allocation:
        W = problem.capacities
        x = equal_shares(W, np.ones(problem.num_jobs), runnable(problem))
        over = np.flatnonzero(problem.scale_factors @ x > W * (1.0 + _CAPACITY_SLACK))
        notes = []
        if over.size:
            names = ", ".join(problem.worker_types[j] for j in over)
            notes.append(f"equal time shares of multi-GPU jobs exceed the capacity of {names} "
                         "(sum_i s_i x_ij > W_j); the round mechanism arbitrates")
        return self._allocation(problem, x, notes)
