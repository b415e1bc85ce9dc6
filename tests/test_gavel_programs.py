"""Space sharing, finish-time fairness, makespan and throughput programs of Gavel."""

import math

import numpy as np
import pytest
from helpers import lp_backends, problems, tiny, tolerance
from hypothesis import given, settings
from hypothesis import strategies as st

from allocators import make_policy
from formulations import (
    AllocationProblem,
    JobPairs,
    ProblemError,
    allocation_violations,
    certificate_gap,
    finish_time_fairness,
    max_min_fairness,
    min_total_duration,
)
from optim import Capability, Status, available_backends, solve
from optim.column_generation import solve_by_column_generation

CONIC = [b.spec for b in available_backends() if Capability.SOC in b.capabilities()]


def all_pairs(problem: AllocationProblem, rng, fraction: float = 0.7) -> AllocationProblem:
    """The problem with random co-located rates (a fraction of each job's own rate)."""
    m, n = problem.num_jobs, problem.num_types
    a, b = np.triu_indices(m, k=1)
    same = problem.scale_factors[a] == problem.scale_factors[b]
    a, b = a[same], b[same]
    T = problem.throughputs
    rates = np.stack([T[a], T[b]], axis=2) * rng.uniform(0.3, fraction + 0.3, (a.size, n, 2))
    rates *= (T[a] > 0)[:, :, None] & (T[b] > 0)[:, :, None]
    return AllocationProblem(**{**problem.__dict__, "pairs": JobPairs(a, b, rates)})


def with_steps(problem: AllocationProblem, rng) -> AllocationProblem:
    m = problem.num_jobs
    return AllocationProblem(**{**problem.__dict__, "remaining_steps": rng.uniform(100, 1e5, m),
                                "time_since_arrival": rng.uniform(0, 1e3, m)})


@st.composite
def rich_problems(draw, max_jobs=8):
    problem = draw(problems(max_jobs=max_jobs))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return all_pairs(with_steps(problem, rng), rng)


# ---------------------------------------------------------------- hand-computed optima

def test_packed_max_min_fairness_uses_a_helpful_pair():
    """Two unit jobs on one GPU: alone they get 1/2 each; co-located each runs at 0.6."""
    problem = tiny([[1.0], [1.0]], caps=(1,), pairs=JobPairs([0], [1], [[[0.6, 0.6]]]))
    assert make_policy("max_min_fairness_perf").allocate(problem).objective == pytest.approx(0.5)
    packed = make_policy("max_min_fairness_packed").allocate(problem)
    assert packed.objective == pytest.approx(0.6)
    assert packed.pair_x[0, 0] == pytest.approx(1.0)
    assert allocation_violations(packed) == []


def test_pairs_that_cannot_share_get_nothing():
    problem = tiny([[1.0], [1.0]], caps=(1,), pairs=JobPairs([0], [1], [[[0.0, 0.0]]]))
    packed = make_policy("max_min_fairness_packed").allocate(problem)
    assert packed.objective == pytest.approx(0.5)
    assert packed.pair_x[0, 0] == 0.0


def test_makespan_hand_computed():
    """Jobs 0, 1 run twice as fast on t0; sharing t1 as 0.2/0.2/0.6 gives u = 0.6."""
    problem = tiny([[2, 1], [2, 1], [1, 1]], remaining_steps=[2, 2, 1])
    alloc = make_policy("min_total_duration_perf").allocate(problem)
    assert alloc.objective == pytest.approx(1 / 0.6)
    assert allocation_violations(alloc) == []
    # agnostic: the fastest rate everywhere (no v100 here): each job needs time u of one
    # GPU, 3u <= 2 GPUs -> makespan 1.5
    agnostic = make_policy("min_total_duration").allocate(problem)
    assert agnostic.objective == pytest.approx(1.5)


def test_makespan_agnostic_uses_the_v100_rate():
    problem = AllocationProblem(("v100", "k80"), (1, 1), [0, 1], ("a", "b"), [1, 1], [1, 1],
                                [[4.0, 1.0], [4.0, 1.0]], remaining_steps=[4, 4])
    # both believed to run at 4 anywhere: one per GPU, both done in 1 s
    assert make_policy("min_total_duration").allocate(problem).objective == pytest.approx(1.0)
    # really: sharing the v100 (4) and the k80 (1) evenly -> 2.5 steps/s each
    assert make_policy("min_total_duration_perf").allocate(problem).objective == pytest.approx(4 / 2.5)


def test_max_sum_throughput_hand_computed():
    problem = tiny([[3, 1], [2, 1]], remaining_steps=[10, 10], slo_remaining=[math.inf, 10 / 1.5],
                   prices=[2, 1])
    assert make_policy("max_sum_throughput_perf").allocate(problem).objective == pytest.approx(4.0)
    # 3/2 + 1/1
    assert make_policy("max_sum_throughput_normalized_by_cost_perf").allocate(problem).objective == \
        pytest.approx(2.5)
    # job 1 needs 1.5 steps/s: x10 = x11 = 1/2, job 0 gets the rest -> (3/2 + 1 + 2/2 + 1) / 2
    slo = make_policy("max_sum_throughput_normalized_by_cost_perf_SLOs").allocate(problem)
    assert slo.effective_throughput()[1] >= 1.5 - 1e-7
    assert slo.objective == pytest.approx(2.25)


def test_infeasible_slos_are_dropped_and_reported():
    problem = tiny([[3, 1], [2, 1]], remaining_steps=[10, 10], slo_remaining=[math.inf, 1.0])
    alloc = make_policy("max_sum_throughput_normalized_by_cost_perf_SLOs").allocate(problem)
    assert any("SLOs cannot all be met" in note for note in alloc.notes)
    assert any("no prices" in note for note in alloc.notes)
    assert alloc.objective == pytest.approx(4.0)


@pytest.mark.parametrize("method", ["bisection", *(["conic"] if CONIC else [])])
def test_finish_time_fairness_hand_computed(method):
    """One GPU, equal jobs, job 0 waited 1 s: rho levels meet at a = (sqrt 5 - 1) / 2."""
    problem = tiny([[1.0], [1.0]], caps=(1,), remaining_steps=[1, 1], time_since_arrival=[1, 0])
    solver = "highs" if method == "bisection" else CONIC[0]
    alloc = make_policy("finish_time_fairness_perf", solver, method=method).allocate(problem)
    assert alloc.objective == pytest.approx((3 + math.sqrt(5)) / 4, rel=1e-6)
    assert alloc.x[0, 0] == pytest.approx((math.sqrt(5) - 1) / 2, rel=1e-5)


def test_finish_time_fairness_keeps_cumulative_isolated_time():
    problem = tiny([[1.0], [1.0]], caps=(1,), remaining_steps=[10, 10])
    policy = make_policy("finish_time_fairness_perf")
    policy.allocate(problem)
    later = tiny([[1.0], [1.0]], caps=(1,), remaining_steps=[6, 10])
    # iso = 1/2 steps/s, job 0 made 4 steps: C_0 = 8 s
    np.testing.assert_allclose(policy.cumulative_isolated_time(later), [8.0, 0.0])
    policy.allocate(later)
    gone = AllocationProblem(("t0",), (1,), [1], ("m1",), [1], [1], [[1.0]], remaining_steps=[9])
    np.testing.assert_allclose(policy.cumulative_isolated_time(gone), [2.0])


def test_policies_name_missing_inputs():
    problem = tiny([[1.0, 1.0]])
    for name in ("finish_time_fairness_perf", "min_total_duration_perf"):
        with pytest.raises(ProblemError, match="needs remaining steps"):
            make_policy(name).allocate(problem)


# ---------------------------------------------------------------- properties

@given(rich_problems())
@settings(max_examples=25)
def test_every_program_passes_the_checks(problem):
    for name in ("max_min_fairness_packed", "finish_time_fairness", "finish_time_fairness_perf",
                 "finish_time_fairness_packed", "min_total_duration", "min_total_duration_perf",
                 "min_total_duration_packed", "max_sum_throughput_perf",
                 "max_sum_throughput_normalized_by_cost_perf",
                 "max_sum_throughput_normalized_by_cost_perf_SLOs",
                 "max_sum_throughput_normalized_by_cost_packed_SLOs"):
        alloc = make_policy(name).allocate(problem)
        assert allocation_violations(alloc, tol=1e-6) == [], name


@given(rich_problems())
@settings(max_examples=25)
def test_pairs_only_add_options(problem):
    for family in ("max_min_fairness", "min_total_duration", "finish_time_fairness"):
        perf = make_policy(f"{family}_perf").allocate(problem).objective
        packed = make_policy(f"{family}_packed").allocate(problem).objective
        if family == "max_min_fairness":
            assert packed >= perf - 1e-6 * max(1, perf)
        else:  # makespan and worst finish-time ratio: lower is better
            assert packed <= perf + 1e-6 * max(1, perf)


@given(rich_problems())
@settings(max_examples=20)
def test_column_generation_equals_the_full_lp(problem):
    model = max_min_fairness.build(problem, "packed")
    full = solve(model, "highs")
    initial = np.zeros(model.blocks["x"].shape, dtype=bool)
    initial[: problem.num_jobs] = True
    priced = solve_by_column_generation(model, "highs", block="x", initial=initial)
    assert priced.objective == pytest.approx(full.objective, rel=1e-7, abs=1e-9)


def _makespan_by_bisection(problem: AllocationProblem) -> float:
    """Reference: bisect on T over the feasibility programs (Gavel's way), to 1e-7, from an upper
    bound checked feasible (doubled until it is: a job's best rate may be on a type too small for
    its gang)."""
    R = problem.remaining_steps

    def feasible(deadline: float) -> bool:
        return solve(min_total_duration.build_deadline(problem, "perf", deadline), "highs").status is Status.OPTIMAL

    lo, hi = 0.0, float((R / problem.throughputs.max(axis=1)).max()) * problem.num_jobs * 10
    while not feasible(hi):
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-7 * hi:
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return hi


@given(problems(max_jobs=6))
@settings(max_examples=15)
def test_makespan_lp_equals_bisection(problem):
    problem = with_steps(problem, np.random.default_rng(problem.num_jobs))
    lp = make_policy("min_total_duration_perf").allocate(problem).objective
    assert lp == pytest.approx(_makespan_by_bisection(problem), rel=1e-5)


@given(rich_problems(max_jobs=5))
@settings(max_examples=8)
def test_gavel_compat_makespan_search_stays_within_five_percent(problem):
    """Gavel's search from [100 s, 1e6 s] stops when hi <= 1.05 lo: its T is feasible and
    at most 5% above the optimum (or 105 s); every job then finishes within T."""
    for name in ("min_total_duration", "min_total_duration_perf", "min_total_duration_packed"):
        exact = make_policy(name, "clarabel").allocate(problem).objective
        compat = make_policy(name, "clarabel", gavel_compat=True).allocate(problem)
        assert exact * (1 - 1e-6) <= compat.objective <= max(exact, 100.0) * 1.05 * (1 + 1e-6), name
        assert not allocation_violations(compat)
        if name == "min_total_duration_perf":
            done_within = problem.remaining_steps / compat.effective_throughput()
            assert (done_within <= compat.objective * (1 + 1e-5)).all()


def test_a_feasibility_program_has_no_certificate_to_fail():
    """Gavel's makespan bisection keeps its last deadline LP (constant objective). Clarabel's duals
    there are noise of order 1e-6 of either sign, which gave an infinite dual bound: no gap is
    reported for such a program."""
    problem = AllocationProblem(
        worker_types=("gpu0", "gpu1"), capacities=np.array([6.0, 2.0]), job_ids=np.array([0, 1]),
        job_types=("model0", "model1"), scale_factors=np.array([2, 2]), weights=np.ones(2),
        throughputs=np.array([[0.0, 89.34375], [0.0, 76.5]]),
        remaining_steps=np.array([39657.99928962, 22055.48685644]),
        pairs=JobPairs([0], [1], [[[0.0, 0.0], [73.70657565, 56.95417778]]]))
    compat = make_policy("min_total_duration_packed", "clarabel", gavel_compat=True).allocate(problem)
    assert not compat.program.c.any() and certificate_gap(compat) is None
    assert not allocation_violations(compat)


@pytest.mark.skipif(not CONIC, reason="no backend with SOC cones installed")
@given(rich_problems(max_jobs=6))
@settings(max_examples=15)
def test_finish_time_fairness_bisection_equals_conic(problem):
    for name in ("finish_time_fairness", "finish_time_fairness_perf", "finish_time_fairness_packed"):
        bisection = make_policy(name, "highs").allocate(problem)
        conic = make_policy(name, CONIC[0], method="conic").allocate(problem)
        assert conic.objective == pytest.approx(bisection.objective, rel=1e-5), name
        assert allocation_violations(conic, tol=1e-6) == []


def test_finish_time_fairness_bisection_is_certified():
    problem = with_steps(tiny([[2, 1], [1, 1], [1, 3]]), np.random.default_rng(1))
    alloc = make_policy("finish_time_fairness_perf").allocate(problem)
    assert certificate_gap(alloc) < 1e-7
    assert alloc.notes and alloc.notes[-1].startswith("bisection")
    lv = finish_time_fairness.levels(problem, "perf", np.zeros(3))
    lo, hi = finish_time_fairness.bounds(lv)
    assert lo <= alloc.objective <= hi + 1e-12


@pytest.mark.parametrize("backend", lp_backends())
def test_backends_agree_on_random_instances(backend):
    rng = np.random.default_rng(3)
    T = rng.uniform(0.5, 20.0, size=(6, 2))
    problem = all_pairs(with_steps(tiny(T, caps=(2, 3), scales=[1, 1, 1, 2, 2, 1]), rng), rng)
    for name in ("max_min_fairness_packed", "min_total_duration_perf", "max_sum_throughput_perf",
                 "finish_time_fairness_perf"):
        reference = make_policy(name).allocate(problem).objective
        got = make_policy(name, backend).allocate(problem).objective
        assert got == pytest.approx(reference, rel=max(10 * tolerance(backend), 1e-6)), name


def test_every_policy_on_the_published_table(shared_data):
    """100 jobs (Gavel's 1/2/4/8 mix; single-GPU for allox and gandiva_fair, whose equal time
    shares exceed capacity with multi-GPU jobs) on 36:36:36 with Gavel's table."""
    from allocators import POLICIES
    from simulator import build_problem, parse_cluster, read_gavel_json, sample_jobs

    table = read_gavel_json(shared_data / "gavel" / "simulation_throughputs.json")
    cluster = parse_cluster("v100=36,p100=36,k80=36")
    multi = build_problem(cluster, sample_jobs(table, 100, 0, multi_gpu=True), table, pairs=True)
    single = build_problem(cluster, sample_jobs(table, 100, 0), table, pairs=True)
    from allocators.round_plans import RoundPlanner

    for name in sorted(n for n, cls in POLICIES.items() if not issubclass(cls, RoundPlanner)):
        problem = single if name in ("allox", "gandiva_fair") else multi
        alloc = make_policy(name).allocate(problem)
        assert allocation_violations(alloc) == [], name
        assert alloc.effective_throughput().sum() > 0, name
        if alloc.result is not None:
            assert alloc.result.status is Status.OPTIMAL, name
