import numpy as np
import pytest
from helpers import EXACT, lp_backends, problems, tiny, tolerance
from hypothesis import given, settings

from allocators import make_policy
from formulations import (
    AllocationProblem,
    ProblemError,
    allocation_violations,
    max_min_fairness,
)
from formulations.rates import runnable
from optim import lp_certificate, lp_dual_bound, solve
from simulator import build_problem, parse_cluster, read_gavel_json, sample_jobs


@pytest.mark.parametrize(
    "problem, variant, expected",
    [
        # three identical jobs on two GPUs: each gets 2/3
        (tiny(np.ones((3, 2))), "perf", 2 / 3),
        # weights 1,1,2: z <= x1, x2, x3/2 and x1+x2+x3 <= 2 -> z = 1/2
        (tiny(np.ones((3, 2)), weights=[1, 1, 2]), "perf", 0.5),
        # job A twice as fast on t0 (prop 1.5): A gets 6/11 of t0, level 8/11
        (tiny([[2, 1], [1, 1], [1, 1]]), "perf", 8 / 11),
        # agnostic: the same jobs look identical -> 2/3
        (tiny([[2, 1], [1, 1], [1, 1]]), "agnostic", 2 / 3),
        # a 2-GPU job counts GPU-time twice: level = 2 x_big = x_small, 2 x_big + x_small <= 2 -> 1
        (tiny([[1.0], [1.0]], caps=(2,), scales=[2, 1]), "perf", 1.0),
    ],
)
def test_hand_computed_optima(problem, variant, expected):
    res = solve(max_min_fairness.build(problem, variant), "highs")
    assert res.objective == pytest.approx(expected, rel=1e-9)


def test_unsupported_combinations_get_no_time():
    problem = tiny([[1.0, 0.0], [1.0, 1.0]], caps=(1, 1))
    for variant in ("perf", "agnostic"):
        model = max_min_fairness.build(problem, variant)
        alloc = max_min_fairness.decode(problem, model, solve(model), variant)
        assert alloc.x[0, 1] == 0.0
        assert not allocation_violations(alloc)


@pytest.mark.parametrize("backend", lp_backends())
def test_backends_agree_on_random_instances(backend):
    rng = np.random.default_rng(7)
    for _ in range(3):
        m = 30
        T = rng.uniform(0.5, 20.0, size=(m, 3)) * (rng.random((m, 3)) > 0.15)
        T[np.arange(m), rng.integers(0, 3, m)] = rng.uniform(1, 5, m)
        problem = tiny(T, caps=(4, 5, 6), weights=rng.choice([1.0, 5.0], m), scales=rng.choice([1, 2], m))
        reference = solve(max_min_fairness.build(problem), "highs").objective
        res = solve(max_min_fairness.build(problem), backend)
        tol = tolerance(backend)
        assert res.objective == pytest.approx(reference, rel=tol * 10 if backend not in EXACT else 1e-6)


@given(problems())
def test_the_published_program_reaches_our_level(problem):
    """Gavel's own program (``build_published``: a column on every cell, its own arithmetic and
    layout) adds the cells where a job cannot run. Where those have rate 0 (here all of them: cells
    that do not fit get rate 0) its level is our program's, and the allocation that gives those
    cells' shares back is valid and reaches it."""
    perf = np.where(runnable(problem), problem.throughputs, 0.0)
    problem = AllocationProblem(**{**problem.__dict__, "throughputs": perf})
    reference = solve(max_min_fairness.build(problem, "perf"), "highs").objective
    alloc = max_min_fairness.decode_published(problem, solve(max_min_fairness.build_published(problem), "ecos"), "p")
    assert alloc.objective == pytest.approx(reference, rel=1e-7, abs=1e-9)
    assert allocation_violations(alloc, tol=1e-7) == []
    coef = max_min_fairness.normalized_coefficients(problem, "perf")
    assert (coef * alloc.x).sum(axis=1).min() == pytest.approx(reference, rel=1e-6, abs=1e-9)


@given(problems())
def test_allocation_invariants_and_optimality_certificate(problem):
    for variant in ("perf", "agnostic"):
        model = max_min_fairness.build(problem, variant)
        res = solve(model, "highs")
        alloc = max_min_fairness.decode(problem, model, res, variant)
        assert allocation_violations(alloc, tol=1e-7) == []
        # the level is the minimum normalized share of the decoded allocation
        coef = max_min_fairness.normalized_coefficients(problem, variant)
        assert alloc.objective == pytest.approx((coef * alloc.x).sum(axis=1).min(), rel=1e-6, abs=1e-9)
        # independent bound: the row duals prove no allocation does better
        cert = lp_certificate(model.canonical(), res.x, res.row_duals)
        assert cert.gap < 1e-6


@given(problems(max_jobs=8))
@settings(max_examples=15)
def test_dual_bound_is_an_upper_bound_for_any_allocation(problem):
    """Weak duality: the dual bound dominates the level of random feasible allocations."""
    model = max_min_fairness.build(problem)
    res = solve(model, "highs")
    bound = lp_dual_bound(model.canonical(), res.row_duals)
    rng = np.random.default_rng(0)
    coef = max_min_fairness.normalized_coefficients(problem, "perf")
    for _ in range(20):
        x = rng.random(problem.throughputs.shape) * runnable(problem)  # not where a gang does not fit
        x /= np.maximum(x.sum(axis=1, keepdims=True), 1.0)
        x *= min(1.0, (problem.capacities / np.maximum(problem.scale_factors @ x, 1e-12)).min())
        assert (coef * x).sum(axis=1).min() <= bound + 1e-9


@given(problems(max_jobs=10))
@settings(max_examples=20)
def test_perf_is_at_least_as_fair_as_agnostic_in_its_own_units(problem):
    perf = solve(max_min_fairness.build(problem, "perf")).objective
    agnostic = make_policy("max_min_fairness").allocate(problem)
    coef = max_min_fairness.normalized_coefficients(problem, "perf")
    assert perf >= (coef * agnostic.x).sum(axis=1).min() - 1e-7


def test_policy_objects_wrap_the_formulation():
    problem = tiny([[2, 1], [1, 1], [1, 1]])
    alloc = make_policy("max_min_fairness_perf").allocate(problem)
    assert alloc.policy == "max_min_fairness_perf"
    assert alloc.objective == pytest.approx(8 / 11)
    assert make_policy("max_min_fairness").allocate(problem).objective == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"throughputs": [[np.nan, 1.0]]}, "throughput on t0 is nan"),
        ({"throughputs": [[-1.0, 1.0]]}, "throughput on t0 is -1"),
        ({"throughputs": [[0.0, 0.0]]}, "zero throughput on every worker type"),
        ({"capacities": [0, 1]}, "capacity must be > 0"),
        ({"scale_factors": [4]}, "needs more GPUs"),
        ({"weights": [0.0]}, "weight must be > 0"),
    ],
)
def test_malformed_problems_are_rejected(kwargs, message):
    base = dict(worker_types=("t0", "t1"), capacities=[1, 1], job_ids=[0], job_types=("m",),
                scale_factors=[1], weights=[1.0], throughputs=[[1.0, 1.0]])
    base.update(kwargs)
    with pytest.raises(ProblemError, match=message):
        AllocationProblem(**base)


def test_published_gavel_table_100_jobs(shared_data):
    table = read_gavel_json(shared_data / "gavel" / "simulation_throughputs.json")
    problem = build_problem(parse_cluster("v100=36,p100=36,k80=36"), sample_jobs(table, 100, 0, multi_gpu=True), table)
    for name in ("max_min_fairness_perf", "max_min_fairness"):
        alloc = make_policy(name).allocate(problem)
        assert alloc.result.status.value == "optimal"
        assert allocation_violations(alloc) == []
        assert 0 < alloc.objective
    # heterogeneity awareness pays off in the perf policy's own units
    perf = make_policy("max_min_fairness_perf").allocate(problem)
    agnostic = make_policy("max_min_fairness").allocate(problem)
    coef = max_min_fairness.normalized_coefficients(problem, "perf")
    assert perf.objective > (coef * agnostic.x).sum(axis=1).min()


def test_distinct_jobs_on_a_vertex_solver_start_from_the_crash_basis():
    # 300 jobs with their own rates and weights (nothing merges): HiGHS starts the whole program
    # from start_basis, optimal here (0 pivots), and agrees with Clarabel on the level
    rng = np.random.default_rng(4)
    m = 300
    T = rng.uniform(1.0, 30.0, (m, 3))
    problem = AllocationProblem(worker_types=("a", "b", "c"), capacities=np.full(3, 75.0), job_ids=np.arange(m),
                                job_types=tuple(f"j{i}" for i in range(m)), scale_factors=rng.choice([1, 2, 4], m),
                                weights=rng.choice([1.0, 2.0, 4.0], m), throughputs=T)
    highs = make_policy("max_min_fairness_perf", "highs").allocate(problem)
    assert highs.problem is problem and highs.result.iterations == 0
    clarabel = make_policy("max_min_fairness_perf", "clarabel").allocate(problem)
    assert highs.objective == pytest.approx(clarabel.objective, rel=1e-7)
    assert allocation_violations(highs) == []
