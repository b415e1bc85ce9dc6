"""The block interior-point method's eliminating Newton steps (:mod:`optim.block_schur`) on
instances where no two jobs are equal: objective, certificate and feasibility against HiGHS and
Clarabel. Where the method stops short of its tolerance the backend hands the model to Clarabel
and says so; the results are checked either way."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from helpers import distinct_jobs
from hypothesis import given, settings
from hypothesis import strategies as st

from formulations import AllocationProblem, max_min_fairness, max_sum_throughput, min_total_duration
from optim import Model, Status, solve
from optim.backends import block as block_backend
from optim.block_lp import block_structure, solve_block
from optim.block_schur import BlockOperator, Coupling, aligned

BUILDS = {
    "max_min_fairness": lambda p: max_min_fairness.build(p, "perf"),
    "max_min_fairness_agnostic": lambda p: max_min_fairness.build(p, "agnostic"),
    "max_sum_throughput": lambda p: max_sum_throughput.build(p, "perf"),
    "min_total_duration": lambda p: min_total_duration.build(p, "perf"),
}


def eliminating(canon):
    """``canon`` solved by the block method with every Newton step eliminating the blocks."""
    with mock.patch.object(block_backend, "ELIMINATE_MIN_BLOCKS", 0):
        return solve(canon, "block:ipm")


@settings(max_examples=40)
@given(distinct_jobs(), st.sampled_from(sorted(BUILDS)))
def test_objective_certificate_and_feasibility_agree_with_highs_and_clarabel(problem, program):
    canon = BUILDS[program](problem)
    canon = canon.canonical() if hasattr(canon, "canonical") else canon
    ours = eliminating(canon)
    assert ours.status is Status.OPTIMAL, ours.message
    # the agnostic program (every rate 1: ties everywhere) can stall the method; it then says so
    stalled = program == "max_min_fairness_agnostic" and any("solved by clarabel" in note for note in ours.notes)
    assert ours.backend == "block:ipm" or stalled, ours.message
    for other in ("highs", "clarabel"):
        assert ours.objective == pytest.approx(solve(canon, other).objective, rel=1e-7, abs=1e-9)
    assert ours.bound == pytest.approx(ours.objective, rel=1e-7, abs=1e-9)
    x = ours.x
    activity = canon.A.scipy() @ x
    scale = 1.0 + np.abs(x).max()  # the method's residuals are relative to the data (TOL = 1e-8)
    assert (activity <= canon.row_hi + 1e-8 * scale).all() and (activity >= canon.row_lo - 1e-8 * scale).all()
    assert (x >= canon.col_lo - 1e-8 * scale).all() and (x <= canon.col_hi + 1e-8 * scale).all()
    assert np.abs(canon.c - canon.A.scipy().T @ ours.row_duals - ours.reduced_costs).max() < 1e-9


def test_the_eliminating_step_equals_the_dense_step_on_a_degenerate_instance():
    # 300 jobs of 3 kinds, every tie kept (no merging): a wide optimal face, equal blocks. Every
    # Newton step of the run is taken by elimination, each solving H v = g to 1e-9 relative
    rng = np.random.default_rng(3)
    T = rng.uniform(1.0, 30.0, (3, 4))
    kind = rng.integers(0, 3, 300)
    problem = AllocationProblem(worker_types=("a", "b", "c", "d"), capacities=np.full(4, 40.0), job_ids=np.arange(300),
                                job_types=tuple(f"k{k}" for k in kind), scale_factors=np.ones(300, dtype=int),
                                weights=np.ones(300), throughputs=T[kind])
    lp = aligned(block_structure(max_min_fairness.build(problem, "perf")))
    assert Coupling.of(lp.Ac, *lp.col_x.shape).aligned
    residuals = []
    newton = BlockOperator.newton

    def eliminating_newton(self, weights):
        solve = newton(self, weights)
        db, dc, dx, dy = weights
        pad = self.pad

        def checked(q, rx, ry):
            vx, vy = solve(q, rx, ry)
            gx, gy = self.transpose(q)
            gx, gy = np.where(pad, 0.0, gx + rx), gy + ry
            ab, ac, _, _ = self.activity(vx, vy)
            hx, hy = self.transpose((db * ab, dc * ac, np.where(pad, 0.0, dx) * vx, dy * vy))
            scale = max(np.abs(gx).max(), np.abs(gy).max())
            residuals.append(max(np.abs(np.where(pad, 0.0, hx) - gx).max(), np.abs(hy - gy).max()) / scale)
            return vx, vy

        return checked

    with mock.patch.object(BlockOperator, "newton", eliminating_newton):
        assert solve_block(lp, tol=1e-9).converged
    assert len(residuals) >= 10 and max(residuals) < 1e-9


def test_an_infeasible_program_is_handed_to_clarabel_which_says_so():
    # an SLO no allocation meets: 1e6 steps within 1 s at a rate of at most 10
    problem = AllocationProblem(worker_types=("a", "b"), capacities=np.array([4.0, 4.0]), job_ids=np.arange(6),
                                job_types=tuple("abcdef"), scale_factors=np.ones(6, dtype=int), weights=np.ones(6),
                                throughputs=np.full((6, 2), 10.0), remaining_steps=np.full(6, 1e6),
                                slo_remaining=np.array([1.0, np.inf, np.inf, np.inf, np.inf, np.inf]))
    canon = max_sum_throughput.build(problem, "normalized_by_cost_perf_SLOs").canonical()
    res = eliminating(canon)
    assert res.status is Status.INFEASIBLE and res.backend == "clarabel"
    assert any("solved by clarabel" in note for note in res.notes)


def test_a_coupling_that_is_not_one_row_per_cell_is_scattered_per_block():
    # two coupling entries per cell (its type's capacity and a shared budget): not aligned
    rng = np.random.default_rng(5)
    m, prices = 40, np.array([3.0, 2.0, 1.0])
    model = Model("throughput within a budget")
    x = model.add_variables("x", (m, 3), lb=0.0)
    model.add_rows("capacity", {x: np.kron(np.ones((1, m)), np.eye(3))}, hi=np.array([5.0, 6.0, 7.0]))
    model.add_rows("time_budget", {x: np.kron(np.eye(m), np.ones((1, 3)))}, hi=1.0)
    model.add_rows("budget", {x: np.tile(prices, m)[None, :]}, hi=20.0)
    model.set_objective({x: rng.uniform(1, 9, (m, 3))}, sense="max")
    canon = model.canonical()
    lp = block_structure(canon)
    assert not Coupling.of(lp.Ac, *lp.col_x.shape).aligned
    res = eliminating(canon)
    assert res.backend == "block:ipm" and res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-7)
