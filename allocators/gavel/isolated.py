"""``isolated``: every job gets a 1/m slice of every worker type it can run on."""

from __future__ import annotations

from allocators.gavel.heuristic import HeuristicPolicy
from formulations import Allocation, AllocationProblem
from formulations.rates import isolated_shares


class Isolated(HeuristicPolicy):
    """``x_ij = (W_j / m) / s_i`` on the types job i can run on (T_ij > 0, s_i <= W_j), each
    row scaled down so it sums to <= 1.

    Capacity holds by construction: before scaling ``sum_i s_i x_ij <= sum_i W_j / m = W_j``
    (equality when every job runs on j), and scaling rows down only lowers entries.
    """

    name = "isolated"
    claims = ("strategy_proofness",)

    def allocate(self, problem: AllocationProblem) -> Allocation:
        return self._allocation(problem, isolated_shares(problem))
