"""The ``block`` backend: Gavel-family programs with many equal jobs, against HiGHS and Clarabel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allocators import make_policy
from formulations import AllocationProblem, max_min_fairness
from optim import Status, solve

POLICIES = ("max_min_fairness_perf", "max_sum_throughput_perf", "min_total_duration_perf")


@st.composite
def many_equal_jobs(draw):
    """40-150 jobs of 2-6 kinds (throughputs, scale factor, weight, steps) on 2-3 worker types."""
    n = draw(st.integers(2, 3))
    kinds = draw(st.integers(2, 6))
    T = np.array(draw(st.lists(st.floats(0.5, 50.0), min_size=kinds * n, max_size=kinds * n))).reshape(kinds, n)
    T[:, 1:] *= np.array(draw(st.lists(st.booleans(), min_size=kinds * (n - 1), max_size=kinds * (n - 1)))).reshape(
        kinds, n - 1)
    scale = np.array(draw(st.lists(st.sampled_from([1, 2, 4]), min_size=kinds, max_size=kinds)))
    weight = np.array(draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=kinds, max_size=kinds)))
    steps = np.array(draw(st.lists(st.floats(1e3, 1e5), min_size=kinds, max_size=kinds)))
    m = draw(st.integers(40, 150))
    kind = np.array(draw(st.lists(st.integers(0, kinds - 1), min_size=m, max_size=m)))
    caps = np.array(draw(st.lists(st.integers(4, 60), min_size=n, max_size=n)), dtype=float)
    return AllocationProblem(worker_types=tuple(f"t{j}" for j in range(n)), capacities=caps, job_ids=np.arange(m),
                             job_types=tuple(f"k{k}" for k in kind), scale_factors=scale[kind], weights=weight[kind],
                             throughputs=T[kind], remaining_steps=steps[kind])


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
    assert np.abs(block.value("x") - clarabel.value("x")).max() < 1e-5  # the same central point
    assert block.bound == pytest.approx(block.objective, rel=1e-7)
    assert np.abs(canon.c - canon.A.T @ block.row_duals - block.reduced_costs).max() < 1e-12


def test_a_model_without_blocks_is_solved_by_clarabel_and_says_so():
    problem = AllocationProblem(worker_types=("a",), capacities=np.array([2.0]), job_ids=np.arange(3),
                                job_types=("x", "y", "z"), scale_factors=np.ones(3), weights=np.ones(3),
                                throughputs=np.array([[1.0], [2.0], [3.0]]))
    res = solve(max_min_fairness.build(problem, "perf").canonical(), "block")
    assert res.status is Status.OPTIMAL and res.backend == "clarabel"
    assert any("not block-angular" in note and "solved by clarabel" in note for note in res.notes)
