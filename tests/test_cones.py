"""Hyperbolic (rotated second-order cone) constraints ``k <= u v``, ``u, v >= 0``."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import lp_backends, tolerance
from hypothesis import given
from hypothesis import strategies as st

from optim import (
    Capability,
    CapabilityError,
    Model,
    ModelError,
    SolveOptions,
    Status,
    backends_with,
    lp_certificate,
    parse_spec,
    solve,
)
from optim.reformulations import solve_log_by_tangent_cuts

BACKENDS = lp_backends()
SOC_BACKENDS = [b for b in BACKENDS if Capability.SOC in parse_spec(b).capabilities()]
NO_SOC_BACKENDS = [b for b in BACKENDS if b not in SOC_BACKENDS]
LP, MILP, LOG, SOC = Capability.LP, Capability.MILP, Capability.LOG, Capability.SOC
#: Gurobi's QCP barrier stops at ~1e-5 relative accuracy with its default BarQCPConvTol
QCP_BARRIER = {"gurobi": 1e-4, "cvxpy:GUROBI": 1e-4}


def conic_tol(spec: str) -> float:
    return QCP_BARRIER.get(spec, max(tolerance(spec), 1e-6))


def rationing(capacity: float = 1.0, integer: bool = False) -> Model:
    """``minimize r s.t. x1 + x2 <= capacity, x1 r >= 1, x2 (2 r) >= 1``.

    Both cones bind at the optimum: x1 = 1/r, x2 = 1/(2r), so 3/(2r) = capacity, r* = 1.5 /
    capacity, x* = (2/3, 1/3) capacity, and the capacity row's dual is dr*/dc = -1.5 / c^2.
    """
    m = Model("rationing")
    x = m.add_variables("x", 2, ub=10.0, vtype="integer" if integer else "continuous")
    r = m.add_variables("r")
    m.add_rows("capacity", {x: [[1.0, 1.0]]}, hi=capacity)
    m.add_hyperbolic("demand", {x: np.eye(2)}, 0.0, {r: [[1.0], [2.0]]}, 0.0, 1.0)
    m.set_objective({r: 1.0}, sense="min")
    return m


def test_soc_capability_follows_the_solvers():
    for spec in ("gurobi", "cvxpy:CLARABEL", "cvxpy:SCS", "cvxpy:GUROBI"):
        assert SOC in parse_spec(spec).capabilities(), spec
    for spec in ("highs", "cvxpy:HIGHS", "cvxpy:OSQP", "cvxpy:SCIPY", "pyomo:highs", "pyomo:gurobi"):
        assert SOC not in parse_spec(spec).capabilities(), spec


@pytest.mark.parametrize("backend", SOC_BACKENDS)
def test_hand_computed_cone_program_on_every_soc_backend(backend):
    model = rationing()
    res = solve(model, backend)
    tol = conic_tol(backend)
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert res.objective == pytest.approx(1.5, rel=tol)
    assert res.value("x") == pytest.approx([2 / 3, 1 / 3], abs=tol)
    assert model.canonical().max_violation(res.x) <= tol
    assert not res.notes
    assert res.row_duals is not None
    assert res.row_duals[0] == pytest.approx(-1.5, rel=1e-3)
    np.testing.assert_allclose(model.canonical().c, model.canonical().A.scipy().T @ res.row_duals + res.reduced_costs)


@pytest.mark.parametrize("backend", NO_SOC_BACKENDS)
def test_backends_without_soc_refuse_cones_naming_those_with_it(backend):
    with pytest.raises(CapabilityError) as info:
        solve(rationing(), backend)
    message = str(info.value)
    assert "\n" not in message
    assert re.search(rf"{re.escape(backend)} cannot solve 'rationing': .*needs SOC \(2 rotated", message)
    assert message.endswith("backends with it: " + (", ".join(SOC_BACKENDS) or "none installed"))


def test_backends_with_handles_soc():
    caps = {b: parse_spec(b).capabilities() for b in BACKENDS}
    assert backends_with(frozenset({LP, SOC})) == SOC_BACKENDS
    assert backends_with(frozenset({LP, MILP, SOC})) == [b for b in SOC_BACKENDS if MILP in caps[b]]
    assert backends_with(frozenset({LP, LOG, SOC})) == SOC_BACKENDS  # log terms: tangent cuts
    assert backends_with(frozenset({LP, LOG, SOC}), exact_log=True) == [b for b in SOC_BACKENDS if LOG in caps[b]]


def test_cones_are_stacked_into_the_canonical_model():
    m = Model()
    x = m.add_variables("x", 3)
    y = m.add_variables("y", 1)
    first = m.add_hyperbolic("a", {x: sp.csr_matrix([[1.0, 0, 2.0], [0, 1.0, 0]])}, [0.5, 0.0],
                             {y: [[1.0], [3.0]]}, 1.0, [2.0, 0.0])
    second = m.add_hyperbolic("b", {}, 4.0, {x: [1.0, 1.0, 0.0], y: 2.0}, 0.0, 1.0)
    assert (first, second) == (slice(0, 2), slice(2, 3))
    canon = m.canonical()
    cones = canon.hyperbolic
    np.testing.assert_array_equal(cones.U.toarray(), [[1, 0, 2, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(cones.V.toarray(), [[0, 0, 0, 1], [0, 0, 0, 3], [1, 1, 0, 2]])
    np.testing.assert_array_equal(cones.u_offset, [0.5, 0.0, 4.0])
    np.testing.assert_array_equal(cones.v_offset, [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(cones.k, [2.0, 0.0, 1.0])
    assert canon.num_cones == 3
    assert canon.required_capabilities() == {LP, SOC}
    m.add_variables("k", 1, vtype="integer")
    assert m.canonical().required_capabilities() == {LP, MILP, SOC}


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda m, x: m.add_hyperbolic("c", {x: np.eye(3)}, 0, {x: np.ones((2, 3))}, 0, 1),
         r"hyperbolic block 'c', side v: coefficients for block 'x' have shape \(2, 3\), expected \(3, 3\)"),
        (lambda m, x: m.add_hyperbolic("c", {x: np.eye(3)}, 0, {x: np.eye(3)}, 0, [1, -1, 1]),
         "hyperbolic block 'c': k must be >= 0"),
        (lambda m, x: m.add_hyperbolic("c", {x: np.eye(3)}, np.nan, {x: np.eye(3)}, 0, 1),
         "hyperbolic block 'c': non-finite offset or k"),
        (lambda m, x: m.add_hyperbolic("c", {x: np.eye(3)}, [0, 1], {x: np.eye(3)}, 0, 1),
         r"hyperbolic block 'c', u_offset: cannot broadcast to shape \(3,\)"),
        (lambda m, x: m.add_hyperbolic("c", {x: [[np.inf, 0, 0]]}, 0, {x: [[1, 0, 0]]}, 0, 1),
         "hyperbolic block 'c', side u: non-finite coefficient"),
        (lambda m, x: m.add_hyperbolic("c", {}, 1.0, {}, 1.0, 1),
         "hyperbolic block 'c' has no terms"),
        (lambda m, x: m.add_hyperbolic("c", {x: np.eye(3)}, 0, {Model().add_variables("w", 3): np.eye(3)}, 0, 1),
         "hyperbolic block 'c', side v: variable block 'w' is not part of this model"),
        (lambda m, x: [m.add_hyperbolic("c", {x: np.eye(3)}, 0, {x: np.eye(3)}, 0, 1) for _ in range(2)],
         "hyperbolic block 'c' already exists"),
    ],
)
def test_malformed_cones_are_rejected(build, message):
    m = Model()
    x = m.add_variables("x", 3)
    with pytest.raises(ModelError, match=message):
        build(m, x)


def test_max_violation_measures_the_cones():
    canon = rationing().canonical()
    assert canon.max_violation(np.array([2 / 3, 1 / 3, 1.5])) == pytest.approx(0.0, abs=1e-12)
    # x1 r = 0.75 < 1: residual ||(2 sqrt(k), u - v)|| - (u + v) = sqrt(4 + 1) - 2
    assert canon.max_violation(np.array([0.5, 0.5, 1.5])) == pytest.approx(np.sqrt(5.0) - 2.0)
    m = Model()
    z = m.add_variables("z", 2, lb=-np.inf)
    m.add_hyperbolic("signs", {z: [[1.0, 0.0]]}, 0.0, {z: [[0.0, 1.0]]}, 0.0, 0.0)
    signs = m.canonical()
    assert signs.max_violation(np.array([2.0, 0.0])) == 0.0
    assert signs.max_violation(np.array([-1.0, -3.0])) >= 3.0  # u v = 3 >= 0, but both factors < 0
    assert signs.max_violation(np.array([-1.0, 3.0])) >= 1.0


def test_reformulation_copies_keep_the_cones_and_certificates_refuse_them():
    canon = rationing().canonical()
    wider = canon.with_extra(new_cols=2, rows=sp.csr_matrix((1, canon.num_vars + 2)), lo=[0.0], hi=[0.0])
    assert wider.hyperbolic.U.shape == wider.hyperbolic.V.shape == (2, canon.num_vars + 2)
    assert SOC in wider.required_capabilities()
    x = np.array([0.5, 0.5, 1.5])
    assert wider.max_violation(np.concatenate([x, [0.0, 0.0]])) == canon.max_violation(x)
    with pytest.raises(ValueError, match="no cones"):
        lp_certificate(canon, np.array([2 / 3, 1 / 3, 1.5]), np.array([-1.5]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_cones_with_integers_need_a_misocp_backend(backend):
    """With capacity 2.5 the relaxation gives r = 0.6 at x = (5/3, 5/6); integer x gives r = 1."""
    model = rationing(capacity=2.5, integer=True)
    caps = parse_spec(backend).capabilities()
    missing = [cap.name for cap in (MILP, SOC) if cap not in caps]
    if missing:
        with pytest.raises(CapabilityError, match=rf"needs .*{missing[0]}.*no {'/'.join(missing)} support"):
            solve(model, backend)
        return
    grid = np.stack(np.meshgrid(np.arange(1, 4), np.arange(1, 4)), -1).reshape(-1, 2)
    grid = grid[grid.sum(axis=1) <= 2.5]
    best = np.max([1.0 / grid[:, 0], 1.0 / (2.0 * grid[:, 1])], axis=0).min()
    res = solve(model, backend)
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(best, rel=conic_tol(backend)) and best == 1.0
    assert res.value("x") == pytest.approx([1.0, 1.0], abs=1e-6)


def log_in_a_disc() -> Model:
    """``maximize log(y) s.t. (1 - y)(1 + y) >= 0.75`` (so y <= 1/2): optimum log(1/2)."""
    m = Model("log in a disc")
    y = m.add_variables("y")
    m.add_hyperbolic("disc", {y: -1.0}, 1.0, {y: 1.0}, 1.0, 0.75)
    m.set_objective({y: 0.0})
    m.add_log_utility([1.0], {y: [[1.0]]})
    return m


@pytest.mark.parametrize("backend", SOC_BACKENDS)
def test_log_terms_with_cones(backend):
    model = log_in_a_disc()
    tol = conic_tol(backend)
    native = solve(model, backend)
    assert native.objective == pytest.approx(np.log(0.5), rel=tol)
    assert any("tangent cuts" in n for n in native.notes) == (LOG not in parse_spec(backend).capabilities())
    cuts = solve_log_by_tangent_cuts(model.canonical(), parse_spec(backend), SolveOptions())
    assert cuts.has_solution and cuts.objective == pytest.approx(np.log(0.5), rel=tol)
    assert float(cuts.value("y")) == pytest.approx(0.5, abs=tol)


def test_an_empty_cone_block_needs_no_soc():
    m = Model()
    x = m.add_variables("x", 2)
    assert m.add_hyperbolic("none", {x: np.zeros((0, 2))}, 0.0, {x: np.zeros((0, 2))}, 0.0, 1.0) == slice(0, 0)
    assert m.canonical().hyperbolic is None
    assert m.canonical().required_capabilities() == {LP}


def time_to_serve(a, b, k, c) -> Model:
    """``minimize t s.t. (a_i x_i + b_i) t >= k_i, c . x <= 1, x >= 0, t >= 0``."""
    m = Model("time to serve")
    x = m.add_variables("x", a.size)
    t = m.add_variables("t")
    m.add_rows("budget", {x: c}, hi=1.0)
    m.add_hyperbolic("served", {x: np.diag(a)}, b, {t: np.ones((a.size, 1))}, 0.0, k)
    m.set_objective({t: 1.0}, sense="min")
    return m


def time_by_bisection(a, b, k, c) -> float:
    """Smallest t whose (now linear) constraints ``a_i x_i >= k_i / t - b_i`` fit in
    ``c . x <= 1``: bisection on t, each step an LP solved by HiGHS."""

    def fits(t: float) -> bool:
        m = Model("fixed t")
        x = m.add_variables("x", a.size)
        m.add_rows("served", {x: np.diag(a)}, lo=k / t - b)
        m.set_objective({x: c}, sense="min")
        return solve(m, "highs").objective <= 1.0

    lo, hi = 0.0, float((c * k / a).sum())  # t = sum c k / a fits even with b = 0
    while hi - lo > 1e-9 * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def test_gurobi_without_qcp_duals_still_returns_the_solution():
    """Gurobi's barrier ends inaccurate here and computes no QCP duals (it used to raise)."""
    a, k = np.array([1.0, 0.125, 2.0, 0.5]), np.array([0.0, 0.0, 0.0, 8.579506847673443])
    c = np.array([7.222848478480667, 9.895693906783082, 5.548436883285184, 9.126787841348813])
    for backend in SOC_BACKENDS:
        res = solve(time_to_serve(a, np.zeros(4), k, c), backend)
        assert res.objective == pytest.approx((c * k / a).sum(), rel=10 * conic_tol(backend)), backend
        assert res.row_duals is not None or any("no row duals" in n for n in res.notes), backend


#: data within a factor 4 keeps u_i / v_i above ~1e-3 (very unbalanced cones cost accuracy)
moderate = st.floats(0.5, 2.0)


@given(st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(moderate, min_size=n, max_size=n),
    st.lists(st.one_of(st.just(0.0), st.floats(0.1, 1.0)), min_size=n, max_size=n),
    st.lists(st.one_of(st.just(0.0), moderate), min_size=n, max_size=n),
    st.lists(moderate, min_size=n, max_size=n),
)))
def test_conic_optimum_matches_a_bisection_of_lps(data):
    a, b, k, c = (np.array(v) for v in data)
    model = time_to_serve(a, b, k, c)
    expected = time_by_bisection(a, b, k, c)
    if not b.any():
        assert expected == pytest.approx((c * k / a).sum(), rel=1e-8)
    for backend in SOC_BACKENDS:
        res = solve(model, backend)
        tol = conic_tol(backend)
        assert res.status in (Status.OPTIMAL, Status.FEASIBLE), backend
        assert res.objective == pytest.approx(expected, rel=tol, abs=tol), backend
        assert model.canonical().max_violation(res.x) <= tol * max(1.0, expected), backend


@given(st.data())
def test_the_conic_form_stacks_every_row_and_bound_in_cone_order(data):
    """:func:`optim.backends.conic.conic_form` against its definition, dense: equal rows and fixed
    columns (zero cone), then upper rows, negated lower rows, negated lower and upper bounds
    (nonnegative cone), ``A' x + s = b``."""
    from optim.backends.conic import conic_form

    n, m = data.draw(st.integers(1, 5)), data.draw(st.integers(0, 5))
    A = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, -2.0, 3.5]), min_size=m * n, max_size=m * n)))
    A = A.reshape(m, n)
    kinds = data.draw(st.lists(st.sampled_from(["up", "lo", "eq", "both"]),
                               min_size=m, max_size=m))
    lo = np.array([{"up": -np.inf, "lo": -1.0, "eq": 2.0, "both": -3.0}[k] for k in kinds])
    hi = np.array([{"up": 4.0, "lo": np.inf, "eq": 2.0, "both": 5.0}[k] for k in kinds])
    bounds = data.draw(st.lists(st.sampled_from([(0.0, np.inf), (-np.inf, np.inf), (0.0, 0.0), (-1.0, 2.0),
                                                 (-np.inf, 3.0)]), min_size=n, max_size=n))
    model = Model("form")
    x = model.add_variables("x", n, lb=[b[0] for b in bounds], ub=[b[1] for b in bounds])
    if m:
        model.add_rows("rows", {x: A}, lo=lo, hi=hi)
    model.set_objective({x: np.ones(n)}, sense="min")
    canon = model.canonical()
    form = conic_form(canon)
    clo, chi = canon.col_lo, canon.col_hi
    fixed = np.isfinite(clo) & (clo == chi)
    eq = np.isfinite(lo) & (lo == hi)
    rows = [A[eq], np.eye(n)[fixed], A[np.isfinite(hi) & ~eq], -A[np.isfinite(lo) & ~eq],
            -np.eye(n)[np.isfinite(clo) & ~fixed], np.eye(n)[np.isfinite(chi) & ~fixed]]
    sides = [hi[eq], clo[fixed], hi[np.isfinite(hi) & ~eq], -lo[np.isfinite(lo) & ~eq], -clo[np.isfinite(clo) & ~fixed],
             chi[np.isfinite(chi) & ~fixed]]
    dense = np.zeros(form.A.shape)
    dense[form.A.indices, form.A.columns()] = form.A.data
    np.testing.assert_array_equal(dense, np.vstack(rows))
    np.testing.assert_array_equal(form.b, np.concatenate(sides))
    assert (form.zero, form.nonneg) == (int(eq.sum() + fixed.sum()), dense.shape[0] - int(eq.sum() + fixed.sum()))
    for j in range(n):  # rows sorted within each column
        column = form.A.indices[form.A.indptr[j]:form.A.indptr[j + 1]]
        assert (np.diff(column) > 0).all()
