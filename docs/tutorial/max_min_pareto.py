"""Max-min fairness that wastes nothing: Gavel's max-min level first, then every job's
normalized throughput as a small tie-breaker, so no GPU idles that some job could use.

    maximize  z + (eps / m) sum_i k_i thr_i(x)   s.t.  z <= k_i thr_i(x) for every job i,

with Gavel's normalization ``k_i = s_i / (w_i prop_i)``, ``prop_i = sum_j T_ij W_j / sum_j W_j``."""

import numpy as np

from schedopt import Model, ProgramPolicy, add_shares, throughput_rows

#: weight of the tie-breaking total against the max-min level
EPSILON = 1e-3


class MaxMinPareto(ProgramPolicy):
    name = "max_min_pareto"
    claims = ("pareto_efficiency",)

    def build(self, problem):
        W, T = problem.capacities, problem.throughputs
        k = problem.scale_factors / (problem.weights * (T @ W) / W.sum())
        model = Model(self.name)
        x = add_shares(model, problem)  # x >= 0, capacities, time budgets, gangs
        z = model.add_variables("z", 1, lb=-np.inf)
        share = throughput_rows(problem, k).to_csr()  # row i: k_i * thr_i(x)
        model.add_rows("fairness", {z: np.ones((problem.num_jobs, 1)), x: -share}, hi=0.0)
        bonus = EPSILON / problem.num_jobs * np.asarray(share.sum(axis=0)).ravel()
        model.set_objective({z: 1.0, x: bonus}, sense="max")
        return model
