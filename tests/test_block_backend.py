"""The ``block`` backend: Gavel-family programs with many equal jobs, against HiGHS and Clarabel."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import many_equal_jobs
from hypothesis import given, settings
from hypothesis import strategies as st

from allocators import make_policy
from formulations import AllocationProblem, max_min_fairness
from optim import Status, solve

POLICIES = ("max_min_fairness_perf", "max_sum_throughput_perf", "min_total_duration_perf")


@settings(max_examples=25)
@given(many_equal_jobs(), st.sampled_from(POLICIES))
def test_block_agrees_with_highs_and_clarabel_on_the_objective(problem, policy):
    ours = make_policy(policy, "block").allocate(problem)
    for other in ("highs", "clarabel"):
        assert ours.objective == pytest.approx(make_policy(policy, other).allocate(problem).objective, rel=1e-7)


def test_block_solves_at_the_size_of_the_distinct_jobs_and_returns_clarabels_point():
    rng = np.random.default_rng(0)
    kinds, m = 5, 3000
    T = rng.uniform(1.0, 30.0, (kinds, 3))
    kind = rng.integers(0, kinds, m)
    problem = AllocationProblem(worker_types=("a", "b", "c"), capacities=np.array([400.0, 300.0, 200.0]),
                                job_ids=np.arange(m), job_types=tuple(f"k{k}" for k in kind),
                                scale_factors=np.array([1, 2, 1, 4, 1])[kind], weights=np.ones(m), throughputs=T[kind])
    canon = max_min_fairness.build(problem, "perf").canonical()
    block, clarabel = solve(canon, "block"), solve(canon, "clarabel")
    assert block.status is Status.OPTIMAL and "5 classes" in block.message and not block.notes
    assert block.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-8)
    assert np.abs(block.value("x") - clarabel.value("x")).max() < 1e-5  # here the same point (not on wide faces)
    assert block.bound == pytest.approx(block.objective, rel=1e-7)
    assert np.abs(canon.c - canon.A.scipy().T @ block.row_duals - block.reduced_costs).max() < 1e-12


def test_a_model_without_blocks_is_solved_by_clarabel_and_says_so():
    problem = AllocationProblem(worker_types=("a",), capacities=np.array([2.0]), job_ids=np.arange(3),
                                job_types=("x", "y", "z"), scale_factors=np.ones(3), weights=np.ones(3),
                                throughputs=np.array([[1.0], [2.0], [3.0]]))
    canon = max_min_fairness.build(problem, "perf").canonical()
    res = solve(canon, "block:ipm")
    assert res.status is Status.OPTIMAL and res.backend == "clarabel"
    assert any("not block-angular" in note and "solved by clarabel" in note for note in res.notes)
    # of the assignment shape all the same: the price-directed method takes it under "block"
    ours = solve(canon, "block")
    assert ours.backend == "block" and ours.message.startswith("price-directed") and not ours.notes
    assert ours.objective == pytest.approx(res.objective, rel=1e-7)


def test_the_interior_point_path_hands_distinct_blocks_to_clarabel_below_the_eliminating_size_and_says_so():
    # 40 jobs of distinct rates: 121 columns, no equal blocks (tests/test_block_schur.py solves such
    # models with the eliminating steps)
    rng = np.random.default_rng(1)
    problem = AllocationProblem(worker_types=("a", "b", "c"), capacities=np.array([8.0, 8.0, 8.0]),
                                job_ids=np.arange(40), job_types=tuple(f"j{i}" for i in range(40)),
                                scale_factors=np.ones(40), weights=np.ones(40), throughputs=rng.uniform(1, 9, (40, 3)))
    canon = max_min_fairness.build(problem, "perf").canonical()
    res = solve(canon, "block:ipm")
    assert res.backend == "clarabel" and any("Clarabel is faster below" in note for note in res.notes)
    assert res.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-7)


def test_auto_hands_small_models_to_clarabel_unchanged_and_large_distinct_ones_to_the_block_method():
    from simulator.simulate import default_solver

    assert default_solver("max_min_fairness_perf") == "block:auto"
    assert default_solver("finish_time_fairness_packed") == "clarabel"
    rng = np.random.default_rng(2)
    small = AllocationProblem(worker_types=("a", "b", "c"), capacities=np.array([8.0, 8.0, 8.0]),
                              job_ids=np.arange(40), job_types=tuple(f"j{i}" for i in range(40)),
                              scale_factors=np.ones(40), weights=np.ones(40), throughputs=rng.uniform(1, 9, (40, 3)))
    canon = max_min_fairness.build(small, "perf").canonical()
    auto, clarabel = solve(canon, "block:auto"), solve(canon, "clarabel")
    assert auto.backend == "clarabel" and not auto.notes and np.array_equal(auto.x, clarabel.x)
    m = 4200
    large = AllocationProblem(worker_types=("a", "b", "c"), capacities=np.full(3, m / 4), job_ids=np.arange(m),
                              job_types=tuple(f"j{i}" for i in range(m)), scale_factors=rng.choice([1, 2, 4], m),
                              weights=rng.choice([1.0, 2.0, 4.0], m), throughputs=rng.uniform(1, 9, (m, 3)))
    canon = max_min_fairness.build(large, "perf").canonical()
    res = solve(canon, "block:auto")
    assert res.backend == "block:auto" and res.message.startswith("price-directed") and f"{m} blocks" in res.message
    assert res.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-7)
