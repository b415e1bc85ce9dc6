"""The price-directed method (:mod:`optim.price_directed`) on assignment-shaped LPs: objective,
certificate and feasibility against HiGHS and Clarabel on jobs no two alike, with the sampling
and the working set forced on small instances; degenerate, infeasible and user-built programs."""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

import numpy as np
import pytest
from helpers import distinct_jobs
from hypothesis import given, settings
from hypothesis import strategies as st

from formulations import AllocationProblem, max_min_fairness, max_sum_throughput, min_total_duration
from optim import Model, Status, level_gub, solve
from optim import price_directed as pd
from optim.assignment_lp import assignment_structure
from optim.level_balance import fill

BUILDS = {
    "max_min_fairness": lambda p: max_min_fairness.build(p, "perf"),
    "max_sum_throughput": lambda p: max_sum_throughput.build(p, "perf"),
    "min_total_duration": lambda p: min_total_duration.build(p, "perf"),
}


def check_certificate(canon, res) -> None:
    """Optimal, bound = objective, feasible to 1e-9, ``c = A^T y + d`` with every reduced cost of
    the model's sense at its bound."""
    assert res.status is Status.OPTIMAL and res.backend == "block", res.message
    assert res.message.startswith("price-directed"), res.message
    assert res.bound == pytest.approx(res.objective, rel=1e-9, abs=1e-12)
    A, x = canon.A.scipy(), res.x
    activity = A @ x
    scale = 1.0 + np.abs(activity).max()
    assert (activity <= canon.row_hi + 1e-9 * scale).all() and (activity >= canon.row_lo - 1e-9 * scale).all()
    assert (x >= canon.col_lo - 1e-12).all() and (x <= canon.col_hi + 1e-12).all()
    assert np.abs(canon.c - A.T @ res.row_duals - res.reduced_costs).max() < 1e-9 * (1 + np.abs(canon.c).max())
    d = res.reduced_costs * (1.0 if canon.sense == "max" else -1.0)
    at_lower = np.isfinite(canon.col_lo) & (canon.col_hi > canon.col_lo)  # fixed columns: any reduced cost
    assert (d[at_lower] <= 1e-9 * (1 + np.abs(canon.c).max())).all()
    assert np.abs(d[~np.isfinite(canon.col_lo)]).max(initial=0.0) <= 1e-9 * (1 + np.abs(canon.c).max())


#: the method's paths forced on small instances: prices from a sample (BASE and DIRECT_MAX 8: the
#: level and the sum form) and a direct solve
PATHS = {"sampled": {"BASE": 8, "DIRECT_MAX": 8}, "direct": {"BASE": 512, "DIRECT_MAX": 512}}


@pytest.mark.parametrize("path", sorted(PATHS))
@settings(max_examples=40)
@given(distinct_jobs(min_jobs=2, max_jobs=150, per_job=(0.2, 0.75, 1.5, 3.0)), st.sampled_from(sorted(BUILDS)))
def test_objective_and_certificate_agree_with_highs_and_clarabel(path, problem, program):
    canon = BUILDS[program](problem).canonical()
    with mock.patch.multiple(pd, **PATHS[path]):
        ours = solve(canon, "block")
    check_certificate(canon, ours)
    for other in ("highs", "clarabel"):
        assert ours.objective == pytest.approx(solve(canon, other).objective, rel=1e-7, abs=1e-9)


def test_the_working_set_grows_until_the_certificate_holds_on_a_priced_instance():
    # 2,000 distinct jobs, 0.2 GPUs each: every capacity binds, prices come from a 250-job sample
    problem = _priced(2000)
    canon = max_sum_throughput.build(problem, "perf").canonical()
    with mock.patch.multiple(pd, BASE=250, DIRECT_MAX=250):
        ours = solve(canon, "block")
    check_certificate(canon, ours)
    assert "reduced LP" in ours.message
    assert ours.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-9)


def _priced(m: int) -> AllocationProblem:
    rng = np.random.default_rng(7)
    return AllocationProblem(worker_types=("a", "b", "c"), capacities=np.full(3, 0.2 * m / 3), job_ids=np.arange(m),
                             job_types=tuple(f"j{i}" for i in range(m)), scale_factors=rng.choice([1, 2, 4], m),
                             weights=np.ones(m), throughputs=rng.uniform(1.0, 30.0, (m, 3)),
                             remaining_steps=rng.uniform(1e3, 1e6, m))


@pytest.mark.parametrize("program", sorted(BUILDS))
def test_a_degenerate_instance_of_equal_jobs_with_and_without_merging(program):
    rng = np.random.default_rng(3)
    T = rng.uniform(1.0, 30.0, (3, 4))
    kind = rng.integers(0, 3, 300)
    problem = AllocationProblem(worker_types=("a", "b", "c", "d"), capacities=np.full(4, 40.0),
                                job_ids=np.arange(300), job_types=tuple(f"k{k}" for k in kind),
                                scale_factors=np.ones(300, dtype=int), weights=np.ones(300), throughputs=T[kind],
                                remaining_steps=np.full(300, 1e5))
    canon = BUILDS[program](problem).canonical()
    reference = solve(canon, "highs").objective
    merged = solve(canon, "block")
    check_certificate(canon, merged)
    with mock.patch.multiple(pd, MERGE_GAIN=10**9, BASE=16, DIRECT_MAX=16):
        kept = solve(canon, "block")
    check_certificate(canon, kept)
    assert "classes" not in kept.message
    for res in (merged, kept):
        assert res.objective == pytest.approx(reference, rel=1e-9)


def test_a_user_program_of_the_shape_is_found_from_its_rows_and_solved():
    # min -z with >= level rows first, budgets 2 and budget coefficients 1..3, capacities last
    rng = np.random.default_rng(4)
    m, K = 50, 3
    a, e, g = rng.uniform(0.5, 2.0, (m, K)), rng.integers(1, 4, (m, K)).astype(float), rng.choice([1.0, 2.0], (m, K))
    canon = _user_level_program(a, e, g, np.array([5.0, 8, 3]))
    shape = assignment_structure(canon)
    assert shape is not None and shape.level and shape.shape == (m, K)
    ours = solve(canon, "block")
    check_certificate(canon, ours)
    assert ours.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-9)


def _user_level_program(a, e, g, capacity):
    m, K = a.shape
    model = Model("user level program")
    x = model.add_variables("x", (m, K), lb=0.0)
    z = model.add_variables("z", 1, lb=0.0)
    model.add_rows("level", {x: np.kron(np.eye(m), np.ones((1, K))) * a.reshape(1, -1), z: -np.ones((m, 1))}, lo=0.0)
    model.add_rows("budget", {x: np.kron(np.eye(m), np.ones((1, K))) * e.reshape(1, -1)}, hi=2.0)
    model.add_rows("capacity", {x: np.kron(np.ones((1, m)), np.eye(K)) * g.reshape(1, -1)}, hi=capacity)
    model.set_objective({z: -1.0}, sense="min")
    return model.canonical()


def test_a_model_of_the_kept_sparsity_is_read_from_its_own_values():
    # a bisection's next level LP: same rows and columns, other coefficients
    from optim import assignment_lp

    rng = np.random.default_rng(7)
    m, K = 30, 3
    a, e, g = rng.uniform(0.5, 2.0, (m, K)), rng.integers(1, 4, (m, K)).astype(float), rng.choice([1.0, 2.0], (m, K))
    first = assignment_structure(_user_level_program(a, e, g, np.array([5.0, 8, 3])))
    second_model = _user_level_program(3 * a[::-1], e[::-1], g, np.array([2.0, 9, 4]))
    kept = assignment_structure(second_model)
    assignment_lp._KEPT.clear()
    fresh = assignment_structure(second_model)
    assert first is not None and kept is not None and fresh is not None
    for field in ("a", "g", "e", "h", "n", "run", "col", "level_rows", "level_scale", "cap_rows", "budget_rows"):
        assert np.array_equal(getattr(kept, field), getattr(fresh, field)), field
    assert np.array_equal(kept.a, 3 * a[::-1]) and np.array_equal(kept.n, [2.0, 9, 4])
    negative = assignment_structure(_user_level_program(-a, e, g, np.array([5.0, 8, 3])))
    assert negative is None  # same sparsity, a level coefficient of the wrong sign: not the shape


def test_a_model_of_another_shape_is_not_taken():
    # two coupling entries per cell (its type's capacity and a shared budget)
    m = 40
    model = Model("throughput within a budget")
    x = model.add_variables("x", (m, 3), lb=0.0)
    model.add_rows("capacity", {x: np.kron(np.ones((1, m)), np.eye(3))}, hi=np.array([5.0, 6.0, 7.0]))
    model.add_rows("time_budget", {x: np.kron(np.eye(m), np.ones((1, 3)))}, hi=1.0)
    model.add_rows("budget", {x: np.tile([3.0, 2.0, 1.0], m)[None, :]}, hi=20.0)
    model.set_objective({x: np.random.default_rng(5).uniform(1, 9, (m, 3))}, sense="max")
    assert assignment_structure(model.canonical()) is None
    res = solve(model.canonical(), "block")
    assert not res.message.startswith("price-directed")


def test_an_infeasible_program_is_not_answered_by_the_method():
    # a level of at least 5 where no job reaches 1: the reduced LP is infeasible
    m = 20
    model = Model("unreachable level")
    x = model.add_variables("x", (m, 2), lb=0.0)
    z = model.add_variables("z", 1, lb=5.0)
    model.add_rows("capacity", {x: np.kron(np.ones((1, m)), np.eye(2))}, hi=np.array([4.0, 4.0]))
    model.add_rows("time_budget", {x: np.kron(np.eye(m), np.ones((1, 2)))}, hi=1.0)
    model.add_rows("level", {z: np.ones((m, 1)), x: -np.kron(np.eye(m), np.ones((1, 2)))}, hi=0.0)
    model.set_objective({z: 1.0}, sense="max")
    canon = model.canonical()
    assert assignment_structure(canon) is not None
    res = solve(canon, "block")
    assert res.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    assert any("price-directed" in note for note in res.notes)


def solved_recursively(canon, base: int):
    """``canon`` solved by "block" with BASE ``base``, RECURSE 2 (every working set of more than
    2 * base blocks, and at most 90 %, recurses) and prices from samples at every size, with each
    ``_solve`` call's (blocks, margin)."""
    calls = []
    solve_part = pd._solve

    def counted(part, rng, tally, margin=pd.MARGIN):
        calls.append((part.g.shape[0], margin))
        return solve_part(part, rng, tally, margin)

    with mock.patch.multiple(pd, BASE=base, DIRECT_MAX=base, RECURSE=2, _solve=counted):
        ours = solve(canon, "block")
    check_certificate(canon, ours)
    assert ours.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-9)
    return calls


@settings(max_examples=15)
@given(distinct_jobs(min_jobs=100, max_jobs=400, per_job=(0.2, 0.75, 1.5)))
def test_a_large_working_set_solved_by_the_method_itself_keeps_the_certificate(problem):
    calls = solved_recursively(max_sum_throughput.build(problem, "perf").canonical(), 8)
    assert len(calls) > 1
    depths = [np.log(margin / pd.MARGIN) / np.log(pd.NESTED_MARGIN) for _, margin in calls]
    assert np.allclose(depths, np.round(depths))  # a nested working set fixes at a tenth of its parent's margin


def test_a_nested_working_set_fixes_at_a_finer_margin_and_keeps_the_certificate():
    calls = solved_recursively(max_sum_throughput.build(_priced(3000), "perf").canonical(), 16)
    assert min(margin for _, margin in calls) <= pd.MARGIN * pd.NESTED_MARGIN * (1 + 1e-12)


def test_a_round_frees_the_failing_blocks_of_least_margin_up_to_its_limit():
    bad = np.array([True, False, True, True, True])
    margin = np.array([0.5, 0.0, 0.02, 0.9, 0.01])
    assert pd._fewest(bad, margin, 2).tolist() == [False, False, True, False, True]
    assert pd._fewest(bad, margin, 4) is bad


def test_balance_moves_blocks_to_a_type_with_room_for_them_past_one_with_a_sliver():
    # all four blocks on type 2 (0.4 a unit of level each; capacity 1): type 1 is cheaper but has
    # 0.45 left, less than a block takes there (0.5), so they go to type 0
    per_level = np.tile([1.0, 0.5, 0.4], (4, 1))
    best, load = pd.balance(per_level, np.ones((4, 3), dtype=bool), np.array([10.0, 0.45, 1.0]),
                            np.full(4, 2), 1.0)
    assert (load <= [10.0, 0.45, 1.0]).all() and (best == 0).sum() == 2


def test_a_level_reached_only_by_splitting_blocks_is_certified_unpriced():
    # three blocks reach level 1 alone on either of two types, taking 0.6 of its capacity of 1:
    # two on one type overfill it, but each split half and half takes 0.9 of each
    m, K = 3, 2
    part = pd._Part(None, np.ones((m, K), order="F"), np.full((m, K), 0.6, order="F"), np.ones((m, K), order="F"),
                    np.ones(m), np.ones(K), np.ones((m, K), dtype=bool, order="F"), -np.inf)
    assert not pd._level_choice(part)[3]  # no whole-block choice fits
    x, z, y, mu, lam = pd._unpriced(part, np.random.default_rng(0), {"programs": 0})
    assert z == 1.0 and not y.any()
    assert np.allclose(x.sum(axis=1), 1.0) and (x >= 0).all()  # level 1 each, within budget 1
    assert (0.6 * x.sum(axis=0) <= 1.0 + 1e-12).all()
    assert float(part.n @ y + part.h @ mu) == pytest.approx(z)  # the dual bound: the worst block's reach


@settings(max_examples=30)
@given(distinct_jobs(min_jobs=2, max_jobs=60), st.sampled_from(sorted(BUILDS)), st.booleans())
def test_a_stated_layout_reads_as_the_sparsity_does(problem, program, negative):
    canon = BUILDS[program](problem).canonical()
    if negative:  # a level coefficient below 0 or a budget coefficient changed: not the stated shape any more
        canon = replace(canon, row_hi=np.where(np.arange(canon.row_hi.size) == 0, -1.0, canon.row_hi))
    assert canon.layout is not None and canon.layout.A is canon.A
    stated, read = assignment_structure(canon), assignment_structure(replace(canon, layout=None))
    assert (stated is None) == (read is None) and (stated is None) == negative
    if stated is None:
        return
    for name in ("c", "a", "g", "e", "h", "n", "run", "col", "cap_rows", "budget_rows", "level_rows", "level_scale",
                 "flip", "z_col", "z_lo", "sign", "model_c_z"):
        a, b = getattr(stated, name), getattr(read, name)
        assert (a is None and b is None) or np.array_equal(np.asarray(a), np.asarray(b)), name


def test_a_layout_stated_for_other_arrays_is_not_taken():
    canon = max_sum_throughput.build(_priced(200), "perf").canonical()
    other = replace(canon, A=canon.A._replace(data=canon.A.data * 2.0))
    assert other.layout.A is not other.A
    assert np.array_equal(assignment_structure(other).g, 2.0 * assignment_structure(canon).g)


@pytest.mark.parametrize("seed", range(12))
def test_the_compiled_level_choice_is_the_array_one(seed):
    rng = np.random.default_rng(seed)
    m, K = int(rng.integers(1, 2000)), int(rng.integers(1, 10))
    a = rng.uniform(0.1, 5.0, (m, K)) * (rng.random((m, K)) < 0.9)
    a = np.round(a) if seed % 2 else a  # ties
    run = (rng.random((m, K)) < 0.9) & (a > 0)
    g = rng.choice([1.0, 2.0, 4.0], (m, 1)) * np.ones((1, K))
    e, h = rng.choice([1.0, 2.0], (m, K)), rng.choice([1.0, 2.0], m)
    n = rng.uniform(0.05, 3.0, K) * m * rng.choice([0.1, 1.0, 10.0])
    choices = []
    for least in (10**12, 0):
        part = pd._Part(None, pd.fortran(a), pd.fortran(g), pd.fortran(e), h, n, pd.fortran(run), -np.inf)
        with mock.patch.object(pd, "COMPILED_MIN", least):
            choices.append(pd._choose_level(part))
    (Z, worst, best, fits), (Z2, worst2, best2, fits2) = choices
    assert (Z, worst, fits) == (Z2, worst2, fits2) and np.array_equal(best, best2)


def test_fill_hands_an_unpriced_types_room_out_as_the_whole_rows_say():
    rng = np.random.default_rng(5)
    m, K = 400, 4
    x = rng.uniform(0.0, 0.3, (m, K)) * (rng.random((m, K)) < 0.4)
    g, e, h = rng.choice([1.0, 2.0], (m, K)), rng.choice([1.0, 2.0], (m, K)), np.ones(m)
    x *= np.minimum(1.0, 0.8 / np.maximum((e * x).sum(axis=1), 1e-300))[:, None]  # within the budgets
    n = (g * x).sum(axis=0) + 5.0  # 5 GPUs spare on every type: type 0 fills before the budgets stop its blocks
    part = pd._Part(None, pd.fortran(np.ones((m, K))), pd.fortran(g), pd.fortran(e), h, n,
                    pd.fortran(np.ones((m, K), dtype=bool)), -np.inf)
    filled = fill(pd.fortran(x), part, np.array([0.0, 1.0, 0.0, 0.0]))
    assert np.array_equal(filled[:, 1], x[:, 1]) and (filled >= x).all()
    assert ((e * filled).sum(axis=1) <= h + 1e-12).all() and ((g * filled).sum(axis=0) <= part.n + 1e-9).all()
    grown = filled[:, 0] / np.where(x[:, 0] > 0, x[:, 0], 1.0)
    full_budget = np.isclose((e * filled).sum(axis=1), h)
    open_rows = (x[:, 0] > 0) & ~full_budget
    assert open_rows.any() and np.allclose(grown[open_rows], grown[open_rows][0])  # one factor below the budgets
    assert (g[:, 0] * filled[:, 0]).sum() == pytest.approx(n[0])


def test_a_cell_of_no_capacity_use_is_solved_by_highs_with_the_certificate():
    canon = max_sum_throughput.build(_priced(600), "perf").canonical()
    data = canon.A.data.copy()
    data[canon.A.indptr[0]] = 0.0  # job 0's first cell takes no GPUs: the GUB simplex refuses it
    canon = replace(canon, A=canon.A._replace(data=data))
    ours = solve(canon, "block")
    check_certificate(canon, ours)
    assert any("HiGHS solved the reduced LP, not the GUB simplex" in note for note in ours.notes)
    assert ours.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-9)


def test_a_level_reached_only_by_splitting_equal_blocks_is_fitted_over_their_classes():
    # 300 equal jobs at level 2 need 2 GPUs each: 150 / 150 overfills 299.5, 151 / 149 overfills 300.5
    m, K = 300, 2
    canon = _user_level_program(np.ones((m, K)), np.ones((m, K)), np.ones((m, K)), np.array([300.5, 299.5]))
    ours = solve(canon, "block")
    check_certificate(canon, ours)
    assert ours.objective == pytest.approx(-2.0) and solve(canon, "highs").objective == pytest.approx(-2.0)
    x = ours.value("x")
    assert np.allclose(x, x[0])  # every member of the one class at its class's split


@pytest.mark.parametrize("sample_min", [512, 16], ids=["direct", "from-a-sample"])
@pytest.mark.parametrize("share", [0.05, 0.2])
def test_a_level_program_whose_capacities_bind_is_solved_as_the_linked_program(share, sample_min):
    rng = np.random.default_rng(11)
    m, K = 300, 4
    problem = AllocationProblem(worker_types=tuple("abcd"), capacities=np.full(K, share * m / K), job_ids=np.arange(m),
                                job_types=tuple(f"j{i}" for i in range(m)), scale_factors=np.ones(m, dtype=int),
                                weights=rng.choice([1.0, 2.0, 4.0], m), throughputs=rng.uniform(1.0, 30.0, (m, K)),
                                remaining_steps=rng.uniform(1e3, 1e6, m))
    canon = max_min_fairness.build(problem, "perf").canonical()
    calls = []
    linked = pd.solve_linked

    def counted(*args):
        calls.append(linked(*args))
        return calls[-1]

    with mock.patch.object(pd, "solve_linked", counted), mock.patch.object(level_gub, "SAMPLE_MIN", sample_min):
        ours = solve(canon, "block")
    check_certificate(canon, ours)
    assert calls and calls[0] is not None and "0 round(s)" in ours.message
    assert ours.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-9)


def test_a_gub_simplex_at_its_pivot_limit_hands_the_reduced_lp_to_highs_and_says_so():
    from optim import reduced_lp

    canon = max_sum_throughput.build(_priced(600), "perf").canonical()
    with mock.patch.object(reduced_lp, "GUB_WORK", 1):  # no pivot allowed
        ours = solve(canon, "block")
    check_certificate(canon, ours)
    assert any("GUB simplex ended at its pivot limit" in note for note in ours.notes)
    assert ours.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-9)


def _budgets_bind(m: int = 256, K: int = 10, share: float = 0.5) -> AllocationProblem:
    """Distinct jobs of weights 1/2/4 on ``share`` GPUs a job: capacities bind, and at the linked
    program's point some jobs' time budgets are broken."""
    rng = np.random.default_rng(3)
    kinds = rng.uniform(1.0, 30.0, (4, K))  # four models, each a rate per type; every job measured apart
    throughputs = kinds[rng.integers(0, 4, m)] * rng.uniform(0.9, 1.1, (m, K))
    return AllocationProblem(worker_types=tuple(f"t{k}" for k in range(K)), capacities=np.full(K, share * m / K),
                             job_ids=np.arange(m), job_types=tuple(f"j{i}" for i in range(m)),
                             scale_factors=rng.choice([1, 2], m), weights=rng.choice([1.0, 2.0, 4.0], m),
                             throughputs=throughputs, remaining_steps=rng.uniform(1e3, 1e6, m))


def test_a_level_program_whose_budgets_bind_is_solved_by_the_level_simplex():
    from optim import reduced_lp

    canon = max_min_fairness.build(_budgets_bind(), "perf").canonical()
    solved = []
    level = reduced_lp._level

    def counted(*args):
        solved.append(level(*args))
        return solved[-1]

    with mock.patch.object(reduced_lp, "_level", counted):
        ours = solve(canon, "block")
    check_certificate(canon, ours)
    assert solved and all(s is not None for s in solved) and not ours.notes
    assert ours.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-9)


def test_a_level_simplex_at_its_pivot_limit_hands_the_reduced_lp_to_highs_and_says_so():
    from optim import reduced_lp

    canon = max_min_fairness.build(_budgets_bind(), "perf").canonical()
    with mock.patch.object(reduced_lp, "GUB_WORK", 1):  # no pivot allowed
        ours = solve(canon, "block")
    check_certificate(canon, ours)
    assert any("level simplex ended at its pivot limit" in note for note in ours.notes)
    assert ours.objective == pytest.approx(solve(canon, "highs").objective, rel=1e-9)
