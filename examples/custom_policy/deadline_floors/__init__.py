"""Max-min fairness with deadline floors: every job that can still meet its deadline is first
guaranteed the rate that finishes it in time; the other jobs then share the rest by Gavel's
max-min fairness.

With the snapshot's T (m, n) steps/s, W (n,) GPUs, s scale factors, w weights, R steps left and
S seconds left to the deadline (inf: none), job i needs ``r_i = R_i / S_i`` steps/s, and can reach
at most ``b_i = max_j T_ij`` over the types its gang fits. The floored jobs are
``D = {i : S_i < inf, r_i <= b_i}``; a job whose deadline is out of reach (``r_i > b_i``, a job past
its deadline among them) cannot be saved by any share and is treated as one without a deadline.

    maximize z
    s.t.  z <= k_i thr_i(x)          for i in F = (all jobs) - D, or every job if D is all of them
          thr_i(x) >= alpha* r_i     for i in D
          base rows (add_shares: sum_i s_i x_ij <= W_j, sum_j x_ij <= 1, x >= 0)

with ``thr_i(x) = sum_j T_ij x_ij`` and Gavel's normalization ``k_i = s_i / (w_i prop_i)``,
``prop_i = sum_j T_ij W_j / sum_j W_j``. ``alpha* = 1`` when the floors fit together (shown by
placing each floored job on its fastest type, else by the LP below); otherwise a first LP over
the same shares gives ``alpha* = max {alpha <= 1 : thr_i(x) >= alpha r_i, i in D}`` and the
allocation's notes say the floors were scaled. Without floored jobs (no deadlines, or no R / S in
the snapshot) this is exactly Gavel's ``max_min_fairness_perf``.
"""

from __future__ import annotations

import numpy as np

from schedopt import solve
from schedopt.policy import Model, ProgramPolicy, add_shares, throughput_rows

__version__ = "0.1.0"
#: relative slack on scaled floors, so the second LP stays feasible within the first's tolerance
SLACK = 1e-7


def reachable(problem) -> np.ndarray:
    """(m, n) T_ij where job i's gang fits type j, else 0."""
    fits = problem.scale_factors[:, None] <= problem.capacities[None, :]
    return np.where(fits, problem.throughputs, 0.0)


def floor_rows(problem, r: np.ndarray):
    """The rows ``thr_i(x) / r_i`` of the floored jobs (r_i > 0) over vec(x): every floor reads
    ``>= alpha``, normalized (OSQP stalled on ``thr_i(x) >= alpha r_i`` where these converge)."""
    per_need = np.divide(1.0, r, out=np.zeros_like(r), where=r > 0)
    return throughput_rows(problem, per_need).to_csr()[r > 0]


class DeadlineFloors(ProgramPolicy):
    """Max-min fairness with deadline floors (module docstring)."""

    name = "deadline_floors"

    alpha = 1.0  # alpha* of the last snapshot

    def floors(self, problem) -> np.ndarray:
        """(m,) the rate each floored job needs (steps/s), 0 for the others."""
        if problem.slo_remaining is None or problem.remaining_steps is None:
            return np.zeros(problem.num_jobs)
        best = reachable(problem).max(axis=1, initial=0.0)
        slo = problem.slo_remaining
        need = np.divide(problem.remaining_steps, slo, out=np.zeros(problem.num_jobs), where=np.isfinite(slo))
        return np.where(np.isfinite(slo) & (need <= best), need, 0.0)

    def build(self, problem) -> Model:
        r = self.floors(problem)
        floored = r > 0
        self.alpha = self._scale(problem, r) if floored.any() else 1.0
        model = Model(self.name)
        x = add_shares(model, problem)
        if floored.any():
            factor = 1.0 if self.alpha >= 1.0 else self.alpha * (1 - SLACK)
            model.add_rows("floors", {x: floor_rows(problem, r)}, lo=factor)
        fair = ~floored if not floored.all() else floored
        T, W = problem.throughputs, problem.capacities
        k = problem.scale_factors / (problem.weights * (T @ W / W.sum()))
        z = model.add_variables("z", 1, lb=-np.inf)
        share = throughput_rows(problem, -k).to_csr()[fair]
        model.add_rows("fairness", {z: np.ones((share.shape[0], 1)), x: share}, hi=0.0)
        model.set_objective({z: 1.0}, sense="max")
        return model

    def _scale(self, problem, r: np.ndarray) -> float:
        """alpha*: 1 if the floors fit together, else the first LP's optimum (module docstring)."""
        rows = np.flatnonzero(r > 0)
        T = reachable(problem)[rows]
        fastest = T.argmax(axis=1)
        gpus = np.bincount(fastest, problem.scale_factors[rows] * r[rows] / T[np.arange(rows.size), fastest],
                           minlength=problem.num_types)
        if (gpus <= problem.capacities).all():
            return 1.0
        model = Model(f"{self.name}[alpha]")
        x = add_shares(model, problem)
        alpha = model.add_variables("alpha", 1, lb=0.0, ub=1.0)
        model.add_rows("floors", {x: floor_rows(problem, r), alpha: -np.ones((rows.size, 1))}, lo=0.0)
        model.set_objective({alpha: 1.0}, sense="max")
        result = solve(model, self.backend, self.options)
        value = float(result.value("alpha")[0]) if result.has_solution else 0.0
        return 1.0 if value >= 1.0 - SLACK else value

    def decode(self, problem, model, result):
        allocation = super().decode(problem, model, result)
        if self.alpha < 1.0:  # the fallback, said where the run's summary collects it
            allocation.notes.append(f"floors scaled to alpha={self.alpha:.2f}: the deadlines do not all fit")
        return allocation
