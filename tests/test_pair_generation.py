"""Packed programs by column generation over the problem's pairs (formulations.pair_generation)."""

import dataclasses

import numpy as np
import pytest
from helpers import tiny
from hypothesis import given, settings
from hypothesis import strategies as st
from test_gavel_programs import rich_problems

from allocators import make_policy
from formulations import (
    JobPairs,
    allocation_violations,
    max_min_fairness,
    max_sum_throughput,
    min_total_duration,
)
from formulations.pair_generation import solve_packed, with_pairs
from optim import (
    LicenseLimitError,
    ModelError,
    NoSolutionError,
    Result,
    SolveOptions,
    Status,
    column_generation,
    solve,
)
from optim.column_generation import PRICING_TOL, Generation, solve_by_column_generation

BUILDS = {
    "max_min_fairness_packed": lambda p: max_min_fairness.build(p, "packed"),
    "max_sum_throughput_normalized_by_cost_packed_SLOs": lambda p: max_sum_throughput.build(
        p, "normalized_by_cost_packed_SLOs"),
}


def _full_objective(problem, build) -> float:
    return solve(build(problem), "highs").objective


@given(rich_problems(max_jobs=10), st.sampled_from(sorted(BUILDS)))
@settings(max_examples=25)
def test_generated_optimum_is_the_full_lp_optimum(problem, policy):
    build = BUILDS[policy]
    restricted, model, result, info = solve_packed(problem, build, "highs", SolveOptions())
    assert info.fallback is None
    assert result.objective == pytest.approx(_full_objective(problem, build), rel=1e-7, abs=1e-9)
    assert info.max_reduced_cost <= PRICING_TOL
    assert len(restricted.job_pairs()) == info.generated.size <= len(problem.job_pairs())
    assert model.canonical().max_violation(result.x) < 1e-7


@given(rich_problems(max_jobs=10))
@settings(max_examples=15)
def test_packed_policies_cover_every_pair_and_match_the_full_lp(problem):
    S = min_total_duration.time_scale(problem, "packed")
    full = {
        "max_min_fairness_packed": _full_objective(problem, BUILDS["max_min_fairness_packed"]),
        "min_total_duration_packed": S / _full_objective(problem, lambda p: min_total_duration.build(p, "packed")),
    }
    for policy, objective in full.items():
        allocation = make_policy(policy).allocate(problem)
        assert allocation.problem is problem
        assert allocation.pair_x.shape == (len(problem.job_pairs()), problem.num_types)
        assert allocation.objective == pytest.approx(objective, rel=1e-6)
        assert allocation_violations(allocation) == []
        assert any("column generation:" in note for note in allocation.notes)


def test_pairs_with_rates_where_a_member_cannot_run_alone_start_in_the_master():
    """Job 1 cannot run alone on type 1 but can co-located there: that pair cannot be priced
    from the single cells, so it is in the master from the start, and the optimum uses it."""
    pairs = JobPairs([0], [1], [[[0.5, 0.5], [0.9, 0.9]]])
    problem = tiny([[1.0, 1.0], [1.0, 0.0]], caps=(1, 1), pairs=pairs)
    _, _, result, info = solve_packed(problem, BUILDS["max_min_fairness_packed"], "highs", SolveOptions())
    assert list(info.generated[:1]) == [0]
    assert result.objective == pytest.approx(_full_objective(problem, BUILDS["max_min_fairness_packed"]))


def _problem(seed: int = 3, jobs: int = 16):
    from simulator import build_problem, example_table, parse_cluster, sample_jobs

    table = example_table()
    problem = build_problem(parse_cluster("v100=2,p100=2,k80=2"), sample_jobs(table, jobs, seed), table, pairs=True)
    return dataclasses.replace(problem, remaining_steps=np.full(jobs, 1e4))


def test_rows_that_depend_on_the_pairs_are_refused():
    def build(p):
        model = max_min_fairness.build(p, "packed")
        model.add_rows("pair_count", {model.blocks["z"]: [[1.0]]}, hi=1e3 + len(p.job_pairs()))
        return model

    with pytest.raises(ModelError, match="rows change with the pairs"):
        solve_packed(_problem(), build, "highs", SolveOptions())


def test_pair_columns_outside_the_combination_structure_are_refused():
    """A cost on pair cells that the single cells do not reveal cannot be priced."""
    def build(p):
        model = max_min_fairness.build(p, "packed")
        x, z = model.blocks["x"], model.blocks["z"]
        cost = np.zeros(x.shape)
        cost[p.num_jobs:] = 0.5
        model.set_objective({z: 1.0, x: cost}, sense="max")
        return model

    with pytest.raises(ModelError, match="combination structure"):
        solve_packed(_problem(), build, "highs", SolveOptions())


def test_an_infeasible_master_falls_back_to_the_full_lp_and_says_so():
    """An SLO only a pair can meet: the singles-only master is infeasible."""
    pairs = JobPairs([0], [1], [[[2.0, 2.0]]])
    problem = dataclasses.replace(tiny([[1.0], [1.0]], caps=(1,), pairs=pairs),
                                  remaining_steps=np.array([100.0, 100.0]), slo_remaining=np.array([60.0, np.inf]))
    build = BUILDS["max_sum_throughput_normalized_by_cost_packed_SLOs"]
    restricted, _, result, info = solve_packed(problem, build, "highs", SolveOptions())
    assert info.fallback is not None and "column generation stopped" in result.notes[-1]
    assert restricted is problem
    assert result.objective == pytest.approx(_full_objective(problem, build))


def test_the_contended_example_generates_pairs():
    _, _, _, info = solve_packed(_problem(), BUILDS["max_min_fairness_packed"], "highs", SolveOptions())
    assert info.rounds > 1 and info.generated.size > 0


def test_with_pairs_keeps_the_chosen_pairs_in_order():
    problem = _problem()
    chosen = np.array([4, 1])
    sub = with_pairs(problem, chosen).job_pairs()
    assert list(sub.first) == list(problem.pairs.first[chosen])
    assert np.array_equal(sub.rates, problem.pairs.rates[chosen])


def late_clock(monkeypatch):
    """The column-generation loop's clock jumps an hour at every reading."""
    ticks = iter(range(0, 10**9, 3600))
    monkeypatch.setattr(column_generation, "_clock", lambda: float(next(ticks)))


def test_the_time_limit_ends_generation_with_a_feasible_unproven_allocation(monkeypatch):
    late_clock(monkeypatch)
    problem = _problem()
    build = BUILDS["max_min_fairness_packed"]
    restricted, model, result, info = solve_packed(problem, build, "highs", SolveOptions(time_limit=60.0))
    assert result.status is Status.TIME_LIMIT and result.bound is None and info.rounds == 1
    assert info.fallback is None and "not proven optimal" in result.notes[-1]
    assert model.canonical().max_violation(result.x) < 1e-7
    assert result.objective <= _full_objective(problem, build) + 1e-9


def test_a_license_refusal_of_the_master_is_raised_not_met_again_by_the_full_lp(monkeypatch):
    import formulations.pair_generation as pair_generation

    calls = []

    def refuse(master, pricer, backend, options, max_rounds=200):
        calls.append(master.num_vars)
        refused = Result(Status.LICENSE_LIMIT, backend.spec, message="too large")
        return Generation(refused, 1, "master 1 is license_limit")

    monkeypatch.setattr(pair_generation, "generate_columns", refuse)
    with pytest.raises(LicenseLimitError, match="too large"):
        solve_packed(_problem(), BUILDS["max_min_fairness_packed"], "highs", SolveOptions())
    assert len(calls) == 1


def test_explicit_column_generation_stops_at_the_time_limit(monkeypatch):
    late_clock(monkeypatch)
    problem = _problem()
    model = max_min_fairness.build(problem, "packed")
    x = model.blocks["x"]
    singles = np.zeros(x.shape, dtype=bool)
    singles[: problem.num_jobs] = True
    result = solve_by_column_generation(model, "highs", SolveOptions(time_limit=60.0), block="x", initial=singles)
    assert result.status is Status.TIME_LIMIT and "not proven optimal" in result.notes[-1]
    assert model.canonical().max_violation(result.x) < 1e-7


def test_a_master_without_a_point_at_the_time_limit_leaves_no_allocation():
    with pytest.raises(NoSolutionError, match="no solution"):
        make_policy("max_min_fairness_packed", options=SolveOptions(time_limit=1e-9)).allocate(_problem())
