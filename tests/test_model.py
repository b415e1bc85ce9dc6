import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from optim import Capability, Model, ModelError, VarType, solve


def test_blocks_are_laid_out_contiguously():
    m = Model()
    x = m.add_variables("x", (3, 2))
    y = m.add_variables("y", 4, vtype=VarType.BINARY)
    z = m.add_variables("z")
    assert (x.start, x.stop, y.start, y.stop, z.start, z.size) == (0, 6, 6, 10, 10, 1)
    canon = m.canonical()
    assert canon.num_vars == 11
    assert canon.integrality.tolist() == [False] * 6 + [True] * 4 + [False]
    assert canon.col_hi[6:10].tolist() == [1.0] * 4


def test_rows_from_dense_and_sparse_blocks_are_assembled():
    m = Model()
    x = m.add_variables("x", 3)
    y = m.add_variables("y", 2)
    m.add_rows("a", {x: np.array([[1.0, 0, 2.0]]), y: sp.csr_matrix([[0, 3.0]])}, lo=-1.0, hi=5.0)
    m.add_rows("b", {y: np.eye(2)}, hi=[1.0, 2.0])
    canon = m.canonical()
    expected = np.array([[1, 0, 2, 0, 3], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1]], dtype=float)
    np.testing.assert_array_equal(canon.A.toarray(), expected)
    np.testing.assert_array_equal(canon.row_lo, [-1, -np.inf, -np.inf])
    np.testing.assert_array_equal(canon.row_hi, [5, 1, 2])
    assert canon.row_blocks == {"a": slice(0, 1), "b": slice(1, 3)}


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda m, x: m.add_rows("r", {x: np.ones((2, 2))}), "shape"),
        (lambda m, x: m.add_rows("r", {x: np.ones((1, 3))}, lo=2, hi=1), "lower side above"),
        (lambda m, x: m.add_rows("r", {x: [[np.nan, 1, 1]]}), "non-finite"),
        (lambda m, x: m.add_variables("x", 2), "already exists"),
        (lambda m, x: m.add_variables("w", 2, lb=3, ub=1), "lower bound above"),
        (lambda m, x: m.add_log_utility([-1.0], {x: [[1, 1, 1]]}), "concave"),
        (lambda m, x: m.set_objective({x: 1.0}, sense="maximize"), "sense"),
    ],
)
def test_malformed_models_are_rejected(build, message):
    m = Model()
    x = m.add_variables("x", 3)
    with pytest.raises(ModelError, match=message):
        build(m, x)


def test_foreign_block_is_rejected():
    other = Model().add_variables("x", 3)
    m = Model()
    m.add_variables("x", 2)
    with pytest.raises(ModelError, match="not part of this model"):
        m.add_rows("r", {other: np.ones((1, 3))})


def test_log_terms_need_a_maximized_objective():
    m = Model()
    x = m.add_variables("x", 2)
    m.add_log_utility([1.0, 1.0], {x: np.eye(2)}, offset=1.0)
    m.set_objective({x: 0.0}, sense="min")
    with pytest.raises(ModelError, match="maximized"):
        m.canonical()


def test_required_capabilities_follow_the_model():
    m = Model()
    x = m.add_variables("x", 2)
    m.set_objective({x: 1.0})
    assert m.canonical().required_capabilities() == {Capability.LP}
    m.add_variables("k", 1, vtype="integer")
    m.add_log_utility([1.0], {x: [[1.0, 1.0]]})
    assert m.canonical().required_capabilities() == {Capability.LP, Capability.MILP, Capability.LOG}


def test_objective_value_and_violation_helpers():
    m = Model()
    x = m.add_variables("x", 2, ub=1.0)
    m.add_rows("r", {x: [[1.0, 1.0]]}, hi=1.5)
    m.set_objective({x: [1.0, 2.0]}, constant=0.5)
    m.add_log_utility([2.0], {x: [[1.0, 0.0]]}, offset=1.0)
    canon = m.canonical()
    assert canon.objective_value(np.array([1.0, 0.5])) == pytest.approx(0.5 + 1 + 1 + 2 * np.log(2))
    assert canon.max_violation(np.array([1.0, 1.0])) == pytest.approx(0.5)
    assert canon.max_violation(np.array([0.5, 0.5])) == 0.0


def test_canonical_is_cached_until_the_model_changes():
    m = Model()
    x = m.add_variables("x", 2)
    first = m.canonical()
    assert m.canonical() is first
    m.add_rows("r", {x: [[1.0, 1.0]]}, hi=1.0)
    assert m.canonical() is not first
    assert m.canonical().num_rows == 1


def test_large_model_is_built_from_blocks():
    from formulations import max_min_fairness
    from simulator import build_problem, example_table, parse_cluster, sample_jobs

    table = example_table()
    problem = build_problem(parse_cluster("v100=3000,p100=3000,k80=3000"), sample_jobs(table, 10_000, 1), table)
    canon = max_min_fairness.build(problem).canonical()
    assert canon.num_vars == 30_001
    assert canon.num_rows == 3 + 2 * 10_000
    assert canon.num_nonzeros == 3 * 30_000 + 10_000 - (problem.throughputs == 0).sum()


def test_empty_solution_of_a_tiny_milp():
    m = Model("knapsack")
    pick = m.add_variables("pick", 3, vtype="binary")
    m.add_rows("weight", {pick: [[3.0, 4.0, 5.0]]}, hi=8.0)
    m.set_objective({pick: [4.0, 5.0, 7.0]})
    res = solve(m, "highs")
    assert res.objective == pytest.approx(11.0)
    assert res.value("pick").tolist() == pytest.approx([1.0, 0.0, 1.0])


def _distinct_by_dict(data: np.ndarray):
    seen: dict[tuple, int] = {}
    first, label = [], []
    for i, row in enumerate(map(tuple, data + 0.0)):  # + 0.0: -0.0 is 0.0
        if row not in seen:
            seen[row] = len(first)
            first.append(i)
        label.append(seen[row])
    return np.array(first, dtype=np.int64), np.array(label, dtype=np.int64), np.bincount(label, minlength=len(first))


@given(st.integers(0, 40), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_distinct_rows_labels_rows_by_their_first_occurrence(m, width, seed):
    from optim.sparse import distinct_rows

    rng = np.random.default_rng(seed)
    data = rng.choice([0.0, -0.0, 1.0, 2.5, np.inf, -np.inf, np.nan], size=(m, width),
                      p=[0.3, 0.1, 0.3, 0.2, 0.04, 0.04, 0.02])
    for got, expected in zip(distinct_rows(data), _distinct_by_dict(data), strict=True):
        assert np.array_equal(got, expected)


def test_distinct_rows_sorts_exactly_when_distinct_rows_share_a_projection():
    from optim.sparse import _projection, distinct_rows

    w = _projection(2)
    data = np.array([[w[1], 0.0], [0.0, w[0]], [w[1], 0.0], [0.0, w[0]]])  # every key is w[0] * w[1]
    assert len(set((data @ w).tolist())) == 1
    first, label, count = distinct_rows(data)
    assert first.tolist() == [0, 1] and label.tolist() == [0, 1, 0, 1] and count.tolist() == [2, 2]


@given(st.integers(0, 6), st.integers(0, 6), st.integers(0, 30), st.integers(0, 2**32 - 1))
def test_csc_arrays_equal_scipy_on_duplicates_zeros_and_products(m, n, k, seed):
    """The canonical matrix of triplets (duplicates summed, zeros dropped), its products, and
    ``CscArrays.of`` a scipy matrix, against scipy and dense numpy."""
    from optim.sparse import CscArrays, csc_from_triplets, transpose_times

    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(0, max(m, 1), k) if m else np.zeros(0, int), rng.integers(0, max(n, 1), k)
    if not (m and n):
        rows, cols = rows[:0], cols[:0]
    vals = rng.choice([-1.0, 0.0, 0.5, 2.0], size=rows.size)
    A = csc_from_triplets(rows, cols, vals, (m, n))
    dense = sp.coo_matrix((vals, (rows, cols)), shape=(m, n)).toarray()
    assert np.array_equal(A.toarray(), dense) and np.array_equal(A.scipy().toarray(), dense)
    assert A.nnz == np.count_nonzero(dense) and A.has_canonical_format
    for j in range(n):  # sorted, distinct rows in each column
        assert (np.diff(A.indices[A.indptr[j]:A.indptr[j + 1]]) > 0).all()
    x, y = rng.normal(size=n), rng.normal(size=m)
    np.testing.assert_allclose(A @ x, dense @ x, atol=1e-12)
    np.testing.assert_allclose(transpose_times(A, y), dense.T @ y, atol=1e-12)
    again = CscArrays.of(sp.coo_matrix((vals, (rows, cols)), shape=(m, n)))
    assert np.array_equal(again.toarray(), dense) and again.shape == (m, n)
    right = sp.random(m, 3, density=0.5, random_state=rng, format="csc")
    both = A.hstack(right)
    assert np.array_equal(both.toarray(), np.hstack([dense, right.toarray()])) and both.shape == (m, n + 3)
    for j in range(n + 3):
        assert (np.diff(both.indices[both.indptr[j]:both.indptr[j + 1]]) > 0).all()
