"""Starting bases (optim.basis): the max-min LP's crash basis is a primal feasible basis, and vertex
backends start their simplex method from a basis without moving the optimum."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import lp_backends, many_equal_jobs, problems, tiny
from hypothesis import given
from hypothesis import strategies as st

from formulations import max_min_fairness
from formulations.classes import merge_equal_jobs
from optim import Basis, CapabilityError, ModelError, SolveOptions, solve
from optim.basis import BASIC, LOWER, UPPER


def basic_solution(canon, basis: Basis) -> tuple[np.ndarray, np.ndarray]:
    """The columns and row activities of ``basis``: nonbasic entries at their bound (a free one
    at 0), the basic ones from ``[A -I] (x, r) = 0``; raises if the basis matrix is singular."""
    A = canon.A.toarray()
    M = np.hstack([A, -np.eye(canon.num_rows)])
    lo = np.concatenate([canon.col_lo, canon.row_lo])
    hi = np.concatenate([canon.col_hi, canon.row_hi])
    status = np.concatenate([basis.columns, basis.rows])
    value = np.where(status == UPPER, hi, np.where(status == LOWER, lo, 0.0))
    value[~np.isfinite(value)] = 0.0
    basic = status == BASIC
    B = M[:, basic]
    assert np.linalg.matrix_rank(B) == canon.num_rows
    value[basic] = np.linalg.solve(B, -M[:, ~basic] @ value[~basic])
    return value[: canon.num_vars], value[canon.num_vars:]


def merged_start(problem, variant: str):
    """``(problem', model, canonical model, start basis)`` of the max-min LP, merged where jobs repeat."""
    problem = merge_equal_jobs(problem) or problem
    model = max_min_fairness.build(problem, variant)
    return problem, model, model.canonical(), max_min_fairness.start_basis(problem, model, variant)


@given(st.one_of(problems(max_jobs=10), many_equal_jobs()), st.sampled_from(["perf", "agnostic"]))
def test_the_max_min_start_basis_is_a_primal_feasible_basis(problem, variant):
    problem, model, canon, basis = merged_start(problem, variant)
    basis.check(canon)
    x, activity = basic_solution(canon, basis)
    scale = 1e-9 * max(1.0, np.abs(x).max())
    assert (x >= canon.col_lo - scale).all() and (x <= canon.col_hi + scale).all()
    assert (activity >= canon.row_lo - scale).all() and (activity <= canon.row_hi + scale).all()


@given(st.one_of(problems(max_jobs=10), many_equal_jobs()), st.sampled_from(["perf", "agnostic"]))
def test_a_start_basis_at_the_bound_is_optimal(problem, variant):
    # no job passes Z = min_i max_j c_ij; where the balanced choice reaches Z the basis is optimal
    problem, model, canon, basis = merged_start(problem, variant)
    x, _ = basic_solution(canon, basis)
    coef = max_min_fairness.normalized_coefficients(problem, variant)
    runs = canon.col_hi[model.blocks["x"].columns].reshape(coef.shape) > 0
    bound = np.where(runs, coef, 0.0).max(axis=1).min()
    level = x[model.blocks["z"].start]
    assert level <= bound * (1 + 1e-12)
    result = solve(model, "highs", SolveOptions(method="primal", basis=basis))
    assert result.objective == pytest.approx(max(level, result.objective), rel=1e-9)
    if level >= bound * (1 - 1e-12):
        assert result.iterations == 0 and result.objective == pytest.approx(bound, rel=1e-9)


@pytest.mark.parametrize("solver", [b for b in ("highs", "gurobi") if b in lp_backends()])
@given(many_equal_jobs())
def test_a_vertex_backend_started_from_the_basis_reaches_the_optimum(solver, problem):
    problem = merge_equal_jobs(problem)
    model = max_min_fairness.build(problem, "perf")
    cold = solve(model, solver, SolveOptions(method="primal"))
    warm = solve(model, solver, SolveOptions(method="primal", basis=max_min_fairness.start_basis(problem, model)))
    assert warm.objective == pytest.approx(cold.objective, rel=1e-9)
    assert not warm.notes


@pytest.mark.parametrize("solver", [b for b in ("highs", "gurobi") if b in lp_backends()])
def test_the_basis_saves_pivots(solver):
    # 60 jobs of 6 kinds on 3 types: from the all-slack basis primal simplex pivots 12 (HiGHS) or 10
    # (Gurobi) times, from the start basis 3
    rates = np.array([[4.0, 2.0, 1.0], [1.0, 3.0, 2.0], [2.0, 1.0, 5.0], [3.0, 3.0, 1.0], [1.0, 1.0, 1.0],
                      [5.0, 1.0, 2.0]])
    problem = merge_equal_jobs(tiny(np.repeat(rates, 10, axis=0), caps=(8, 8, 8)))
    model = max_min_fairness.build(problem, "perf")
    cold = solve(model, solver, SolveOptions(method="primal"))
    warm = solve(model, solver, SolveOptions(method="primal", basis=max_min_fairness.start_basis(problem, model)))
    assert warm.objective == pytest.approx(cold.objective, rel=1e-12)
    assert warm.iterations <= cold.iterations - 5


def test_a_basis_is_checked_and_only_a_vertex_backend_takes_one():
    problem = tiny([[1.0, 2.0], [2.0, 1.0]], caps=(1, 1))
    model = max_min_fairness.build(problem, "perf")
    basis = max_min_fairness.start_basis(problem, model)
    with pytest.raises(CapabilityError, match="cannot start .* from a basis"):
        solve(model, "clarabel", SolveOptions(basis=basis))
    with pytest.raises(ModelError, match="basic entries"):
        solve(model, "highs", SolveOptions(basis=Basis(np.full(basis.columns.size, BASIC, dtype=np.int8), basis.rows)))
    with pytest.raises(ModelError, match="columns and"):
        solve(model, "highs", SolveOptions(basis=Basis(basis.columns[1:], basis.rows)))


def test_a_session_keeps_its_own_basis():
    from optim import Session

    problem = tiny([[1.0, 2.0], [2.0, 1.0]], caps=(1, 1))
    model = max_min_fairness.build(problem, "perf")
    with pytest.raises(ValueError, match="last basis"):
        Session("highs", SolveOptions(basis=max_min_fairness.start_basis(problem, model)))


@pytest.mark.parametrize("solver", [b for b in ("highs", "gurobi") if b in lp_backends()])
def test_an_optimal_basis_of_any_row_kind_leaves_no_pivot(solver):
    # rows of every kind (<=, >=, =, ranged) and columns at either bound: HiGHS' optimal basis, in the
    # neutral codes, handed back to each vertex backend
    import highspy

    from optim import Model
    from optim.backends.highs import load_highs

    model = Model("kinds")
    x = model.add_variables("x", 4, lb=0.0, ub=np.array([3.0, 2.0, np.inf, 1.0]))
    model.add_rows("le", {x: [[1.0, 1.0, 1.0, 1.0]]}, hi=5.0)
    model.add_rows("ge", {x: [[1.0, -1.0, 0.0, 0.0]]}, lo=0.5)
    model.add_rows("eq", {x: [[0.0, 1.0, 1.0, 0.0]]}, lo=2.0, hi=2.0)
    model.add_rows("range", {x: [[1.0, 0.0, -1.0, 1.0]]}, lo=-1.0, hi=2.5)
    model.set_objective({x: [2.0, 1.0, -1.0, 3.0]}, sense="max")
    canon = model.canonical()
    h = load_highs(canon, SolveOptions())
    h.run()
    code = {highspy.HighsBasisStatus.kLower: LOWER, highspy.HighsBasisStatus.kBasic: BASIC,
            highspy.HighsBasisStatus.kUpper: UPPER}
    found = h.getBasis()
    basis = Basis(np.array([code[s] for s in found.col_status], dtype=np.int8),
                  np.array([code[s] for s in found.row_status], dtype=np.int8))
    result = solve(model, solver, SolveOptions(method="primal", basis=basis))
    assert result.objective == pytest.approx(h.getInfo().objective_function_value, rel=1e-12)
    assert result.iterations == 0


def test_a_basis_highs_refuses_is_named_in_the_result():
    # below solve()'s check: HiGHS itself refuses a basis of the wrong length, solves from its own
    # start and the result says so (an inconsistent count it would repair silently; solve() stops that)
    from optim.backends.highs import HighsBackend

    problem = tiny([[1.0, 2.0], [2.0, 1.0]], caps=(1, 1))
    model = max_min_fairness.build(problem, "perf")
    basis = max_min_fairness.start_basis(problem, model)
    cold = solve(model, "highs", SolveOptions(method="primal"))
    result = HighsBackend().solve(model, SolveOptions(method="primal", basis=Basis(basis.columns[1:], basis.rows)))
    assert result.objective == pytest.approx(cold.objective, rel=1e-12)
    assert result.notes == ["HiGHS refused the starting basis; its simplex started from its own"]


@pytest.mark.parametrize("solver", [b for b in ("highs", "gurobi") if b in lp_backends()])
def test_a_singular_basis_is_repaired_by_the_backend(solver):
    # one basic entry per row, as check() asks, but on two equal columns: HiGHS takes the basis as
    # not alien and repairs the rank deficiency with slacks when it factors; the optimum is the same
    from optim import Model

    model = Model("singular")
    x = model.add_variables("x", 3)
    model.add_rows("cap", {x: [[1.0, 1.0, 1.0], [1.0, 1.0, 2.0]]}, hi=[2.0, 3.0])
    model.set_objective({x: [1.0, 1.0, 1.5]}, sense="max")
    basis = Basis(np.array([BASIC, BASIC, LOWER], dtype=np.int8), np.array([UPPER, UPPER], dtype=np.int8))
    cold = solve(model, solver, SolveOptions(method="primal"))
    result = solve(model, solver, SolveOptions(method="primal", basis=basis))
    assert result.objective == pytest.approx(cold.objective, rel=1e-12) == 2.5
