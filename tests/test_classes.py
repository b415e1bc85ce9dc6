"""Equal jobs merged, and jobs equal but for their demand in classes (formulations.classes): the
merged program's optimum is the full program's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import jobs_equal_but_for_steps, lp_backends, many_equal_jobs, problems, tiny, tolerance
from hypothesis import given, settings
from hypothesis import strategies as st

from allocators import make_policy
from allocators.gavel.min_total_duration import CERTIFIED_NOTE
from formulations import (
    Allocation,
    allocation_violations,
    finish_time_fairness,
    max_min_fairness,
    max_sum_throughput,
    min_total_duration,
)
from formulations.classes import (
    DEMAND_NOTE,
    MERGED_NOTE,
    MergedProblem,
    demand_classes,
    equal_rows,
    expand,
    level_bound,
    merge_by_demand,
    merge_equal_jobs,
)
from optim import SolveOptions, solve

#: policy -> the full (unmerged) program of the same problem
FULL = {
    "max_min_fairness_perf": lambda p: max_min_fairness.build(p, "perf"),
    "max_min_fairness": lambda p: max_min_fairness.build(p, "agnostic"),
    "max_sum_throughput_perf": lambda p: max_sum_throughput.build(p, "perf"),
    "max_sum_throughput_normalized_by_cost_perf": lambda p: max_sum_throughput.build(p, "normalized_by_cost_perf"),
}


@settings(max_examples=30)
@given(many_equal_jobs(), st.sampled_from(sorted(FULL)))
def test_the_merged_program_has_the_full_programs_optimum(problem, policy):
    allocation = make_policy(policy, "highs").allocate(problem)
    full = solve(FULL[policy](problem), "clarabel")
    assert allocation.objective == pytest.approx(full.objective, rel=1e-7)
    assert MERGED_NOTE in allocation.notes and allocation.problem is problem
    assert allocation.program.num_vars < full.x.size  # fewer columns than the full program
    assert allocation_violations(allocation) == []
    if policy.startswith("max_sum"):
        assert (problem.throughputs * allocation.x).sum() == pytest.approx(full.objective, rel=1e-7)
    else:
        shares = (max_min_fairness.normalized_coefficients(problem, "perf" if "perf" in policy else "agnostic")
                  * allocation.x).sum(axis=1)
        assert shares.min() == pytest.approx(full.objective, rel=1e-7)


@given(problems(max_jobs=10))
def test_equal_jobs_share_a_class_and_the_class_stands_for_them(problem):
    doubled = dataclasses.replace(
        problem, job_ids=np.arange(2 * problem.num_jobs), job_types=problem.job_types * 2,
        scale_factors=np.tile(problem.scale_factors, 2), weights=np.tile(problem.weights, 2),
        throughputs=np.tile(problem.throughputs, (2, 1)))
    merged = merge_equal_jobs(doubled)
    assert isinstance(merged, MergedProblem) and merged.original is doubled
    assert merged.counts.sum() == doubled.num_jobs and (merged.counts >= 2).all()
    np.testing.assert_array_equal(merged.throughputs[merged.members], doubled.throughputs)
    np.testing.assert_array_equal(merged.scale_factors[merged.members], doubled.scale_factors)
    assert list(merged.job_ids) == sorted(merged.job_ids)  # representatives keep the job order


def test_jobs_that_differ_in_a_field_the_program_reads_are_not_merged():
    problem = tiny([[1.0, 2.0], [1.0, 2.0]], caps=(2, 2), remaining_steps=np.array([10.0, 20.0]),
                   slo_remaining=np.array([100.0, 100.0]))
    assert merge_equal_jobs(problem).counts.tolist() == [2.0]  # max-min reads no steps
    assert merge_equal_jobs(problem, ("remaining_steps", "slo_remaining")) is None
    slo = make_policy("max_sum_throughput_normalized_by_cost_perf_SLOs", "highs").allocate(problem)
    assert MERGED_NOTE not in slo.notes and slo.problem is problem


def test_an_interior_point_backend_solves_the_full_program():
    # the centre of the merged program's optimal face is not the full program's: equal optimum,
    # another allocation; so Clarabel (and block) solve every job
    problem = tiny([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0]], caps=(1, 1))
    merged = make_policy("max_min_fairness_perf", "highs").allocate(problem)
    for solver in ("clarabel", "block"):
        full = make_policy("max_min_fairness_perf", solver).allocate(problem)
        assert MERGED_NOTE not in full.notes and full.program.num_vars == 7
        assert full.objective == pytest.approx(merged.objective, rel=1e-7)


def test_a_problem_of_distinct_jobs_is_solved_as_it_is():
    problem = tiny([[1.0, 2.0], [2.0, 1.0]], caps=(1, 1))
    assert merge_equal_jobs(problem) is None
    allocation = make_policy("max_min_fairness_perf", "highs").allocate(problem)
    assert MERGED_NOTE not in allocation.notes and allocation.program.num_vars == 5  # x (2 x 2) and z


def test_a_merged_program_runs_primal_simplex_without_scaling_unless_asked():
    assert make_policy("max_min_fairness_perf", "highs")._merged_options == SolveOptions(method="primal", scaling=False)
    asked = make_policy("max_min_fairness_perf", "highs", SolveOptions(method="simplex", scaling=True))._merged_options
    assert (asked.method, asked.scaling) == ("simplex", True)


def _makespan_checks(problem, allocation, reference: float, variant: str = "perf", rel: float = 1e-7) -> None:
    assert allocation.objective == pytest.approx(reference, rel=rel)
    assert allocation_violations(allocation) == []
    rates = min_total_duration.rates(problem, variant)
    finish = problem.remaining_steps / (rates * allocation.x).sum(axis=1)
    assert finish.max() == pytest.approx(reference, rel=1e-6)  # every job done within the makespan


@settings(max_examples=30)
@given(jobs_equal_but_for_steps())
def test_demand_classes_give_the_full_makespan_optimum(problem):
    allocation = make_policy("min_total_duration_perf", "highs").allocate(problem)
    S = min_total_duration.time_scale(problem, "perf")
    for solver in ("highs", "clarabel"):  # Clarabel's optimum is within ~1e-7 (gap and feasibility tolerances)
        full = solve(min_total_duration.build(problem, "perf", S), solver)
        _makespan_checks(problem, allocation, S / full.objective, rel=1e-7 if solver == "highs" else tolerance(solver))
    if DEMAND_NOTE in allocation.notes:
        assert allocation.program.num_vars < 3 * problem.num_types * problem.num_jobs
        assert allocation.problem is problem
        assert CERTIFIED_NOTE in allocation.notes
        assert allocation.result.bound == pytest.approx(allocation.result.objective, rel=1e-7)  # on u = S / makespan
        assert S / allocation.result.bound == pytest.approx(allocation.objective, rel=1e-7)


@settings(max_examples=30)
@given(jobs_equal_but_for_steps(), st.lists(st.floats(0.0, 2.0), min_size=3, max_size=3))
def test_the_level_bound_is_an_upper_bound_at_any_prices(problem, prices):
    S = min_total_duration.time_scale(problem, "perf")
    rates, demand = min_total_duration.rates(problem, "perf"), problem.remaining_steps / S
    best = solve(min_total_duration.build(problem, "perf", S), "highs").objective
    bound = level_bound(rates, problem.scale_factors, demand, problem.capacities,
                        np.array(prices[:problem.num_types]) / problem.capacities.sum())
    assert bound >= best * (1 - 1e-9)


@given(problems(max_jobs=12))
def test_demand_classes_on_the_property_tests_problems(problem):
    steps = 1e3 * (1 + np.arange(problem.num_jobs) % 3)
    problem = dataclasses.replace(problem, remaining_steps=steps)
    allocation = make_policy("min_total_duration", "highs").allocate(problem)
    S = min_total_duration.time_scale(problem, "agnostic")
    full = solve(min_total_duration.build(problem, "agnostic", S), "clarabel")
    _makespan_checks(problem, allocation, S / full.objective, "agnostic")


def test_demand_classes_interpolate_between_the_least_and_greatest_demand():
    # one kind, rates (4, 1): demands 0.2, 0.5, 0.6 lie in [0, 1), demands 1.0 and 1.5 in [1, 4)
    problem = tiny([[4.0, 1.0]] * 5, caps=(3, 3), remaining_steps=np.array([0.5, 1.5, 1.0, 0.2, 0.6]))
    demand = problem.remaining_steps
    labels = demand_classes(equal_rows(problem.throughputs, problem.scale_factors)[1], problem.throughputs, demand)
    assert len(set(labels[[0, 3, 4]])) == 1 and len(set(labels[[1, 2]])) == 1 and labels[0] != labels[1]
    merged = merge_by_demand(problem, labels, demand)
    assert merged.remaining_steps.tolist() == [1.5, 1.0, 0.2, 0.6]  # anchors in job order
    assert merged.counts.tolist() == pytest.approx([1.0, 1.0, 1.25, 1.75])  # n - sum t, sum t per class
    anchor_x = np.array([[0.0, 1.0], [1.0, 0.0], [0.2, 0.0], [0.6, 0.4]])
    x = expand(Allocation(merged, anchor_x, "test")).x
    np.testing.assert_allclose(x, [[0.5, 0.3], [0.0, 1.0], [1.0, 0.0], [0.2, 0.0], [0.6, 0.4]])
    assert x.sum(axis=0) == pytest.approx((merged.counts[:, None] * anchor_x).sum(axis=0))
    assert merge_by_demand(problem, np.arange(5), demand) is None  # five classes: nothing saved


def test_an_uncertified_demand_class_answer_gives_way_to_the_full_lp(monkeypatch):
    import allocators.gavel.min_total_duration as makespan

    problem = tiny([[4.0, 1.0]] * 6, caps=(2, 2), remaining_steps=np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0]) * 1e3)
    merged = make_policy("min_total_duration_perf", "highs").allocate(problem)
    assert DEMAND_NOTE in merged.notes
    monkeypatch.setattr(makespan, "CERTIFIED", -1.0)  # no answer passes
    full = make_policy("min_total_duration_perf", "highs").allocate(problem)
    assert DEMAND_NOTE not in full.notes and any("not certified" in note for note in full.notes)
    assert full.objective == pytest.approx(merged.objective, rel=1e-9)


@settings(max_examples=30)
@given(jobs_equal_but_for_steps(), st.lists(st.sampled_from([np.inf, 1e2, 1e3, 1e4, 1e5]), min_size=150,
                                              max_size=150))
def test_slo_demand_classes_give_the_full_programs_optimum(problem, slos):
    problem = dataclasses.replace(problem, slo_remaining=np.array(slos[:problem.num_jobs]))
    policy = "max_sum_throughput_normalized_by_cost_perf_SLOs"
    allocation = make_policy(policy, "highs").allocate(problem)
    full = solve(max_sum_throughput.build(problem, "normalized_by_cost_perf_SLOs"), "clarabel")
    if full.status.name == "OPTIMAL":
        assert allocation.objective == pytest.approx(full.objective, rel=1e-7)
        assert not any("cannot all be met" in note for note in allocation.notes)
        jobs, needed = max_sum_throughput.slo_rates(problem)
        assert ((problem.throughputs * allocation.x).sum(axis=1)[jobs] >= needed * (1 - 1e-6)).all()
    else:
        assert any("cannot all be met" in note for note in allocation.notes)
    assert allocation_violations(allocation) == []
    assert allocation.problem is problem


@pytest.mark.parametrize("solver", [b for b in ("highs", "gurobi") if b in lp_backends()])
def test_every_vertex_backend_solves_the_demand_classes(solver):
    # 12 jobs of two kinds, steps 1-6 x 1e3, on a cluster where capacity binds (two LPs)
    problem = tiny([[4.0, 1.0], [2.0, 3.0]] * 6, caps=(2, 2), remaining_steps=np.repeat(np.arange(1.0, 7.0), 2) * 1e3)
    allocation = make_policy("min_total_duration_perf", solver).allocate(problem)
    S = min_total_duration.time_scale(problem, "perf")
    assert DEMAND_NOTE in allocation.notes and CERTIFIED_NOTE in allocation.notes
    _makespan_checks(problem, allocation, S / solve(min_total_duration.build(problem, "perf", S), "clarabel").objective)


@settings(max_examples=30)
@given(jobs_equal_but_for_steps(), st.floats(0.0, 1e5))
def test_ftf_bisection_over_demand_classes_reaches_the_conic_optimum(problem, since):
    problem = dataclasses.replace(problem, time_since_arrival=np.linspace(0.0, since, problem.num_jobs))
    merged = make_policy("finish_time_fairness_perf", "highs").allocate(problem)
    conic = make_policy("finish_time_fairness_perf", "clarabel").allocate(problem)
    assert merged.objective == pytest.approx(conic.objective, rel=2e-6)  # bisection to 1e-7, Clarabel to ~1e-8
    assert allocation_violations(merged) == [] and merged.problem is problem
    if DEMAND_NOTE in merged.notes:
        lv = finish_time_fairness.levels(problem, "perf", np.zeros(problem.num_jobs))
        assert lv.rho((problem.throughputs * merged.x).sum(axis=1)).max() == pytest.approx(merged.objective, rel=1e-9)
