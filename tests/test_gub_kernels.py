"""The compiled kernels of the sum form's price-directed solve: the GUB simplex
(:mod:`optim.gub_kernels`) against HiGHS on random programs with ties, idle capacity and empty
types, its certificate, Bland's rule from the first pivot; market clearing's weighted threshold
(:mod:`optim.clearing_kernels`) against its sorted definition."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from optim.clearing_kernels import _crossing, clearing_prices
from optim.gub_kernels import OPTIMAL, gub_simplex

NO_LINK = np.zeros(0)


def highs_value(C, A, allowed, n) -> float:
    f, K = C.shape
    cells = np.flatnonzero(allowed.reshape(-1))
    b, k = np.divmod(cells, K)
    M = sp.csr_matrix((np.concatenate([A[b, k], np.ones(cells.size)]),
                       (np.concatenate([k, K + b]), np.tile(np.arange(cells.size), 2))), shape=(K + f, cells.size))
    res = linprog(-C[b, k], A_ub=M, b_ub=np.concatenate([n, np.ones(f)]), method="highs")
    assert res.status == 0
    return -res.fun


@st.composite
def programs(draw):
    f, K = draw(st.integers(1, 80)), draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    C = rng.uniform(0.0, 10.0, (f, K)) * rng.choice([1.0, 2.0, 4.0], f)[:, None]
    if draw(st.booleans()):  # ties: integer values, and some blocks equal
        C = np.round(C)
        C[: f // 2] = C[0]
    per_cell = draw(st.booleans())
    A = rng.uniform(0.5, 3.0, (f, K)) if per_cell else rng.choice([1.0, 2.0, 4.0, 8.0], (f, 1)) * np.ones((1, K))
    allowed = rng.random((f, K)) < 0.8
    allowed[np.arange(f), rng.integers(0, K, f)] = True
    n = rng.uniform(0.0, 1.5, K) * f * draw(st.sampled_from([0.1, 0.5, 3.0]))
    n[rng.random(K) < 0.15] = 0.0
    return C, A, allowed, n, draw(st.sampled_from([0, 30]))


@settings(max_examples=150)
@given(programs())
def test_the_gub_simplex_is_optimal_with_a_certificate(program):
    C, A, allowed, n, stall = program
    f, K = C.shape
    status, u, y, mu, *_ = gub_simplex(C, A, allowed, n, np.full(f, K), 10**6, 1e-11 * C.max(initial=1.0), stall,
                                       NO_LINK)
    assert status == OPTIMAL
    value, scale = float((C * u).sum()), max(1.0, float(np.abs(C).max()))
    assert value == pytest.approx(highs_value(C, A, allowed, n), rel=1e-9, abs=1e-9 * scale)
    assert float(n @ y + mu.sum()) == pytest.approx(value, rel=1e-9, abs=1e-9 * scale)  # the dual bound
    assert (u >= 0).all() and (u[~allowed] == 0).all() and (u.sum(axis=1) <= 1 + 1e-9).all()
    assert ((A * u).sum(axis=0) <= n + 1e-9 * (1 + n)).all()
    assert (y >= -1e-9 * scale).all() and (mu >= -1e-9 * scale).all()
    reduced = np.where(allowed, C - y * A - mu[:, None], -np.inf)
    assert (reduced <= 1e-9 * scale).all()


def test_a_feasible_start_is_kept_and_a_degenerate_program_ends():
    # 200 equal blocks on 3 types of room for exactly 60: every pivot of the optimum is degenerate
    f, K = 200, 3
    C, A = np.tile([3.0, 2.0, 1.0], (f, 1)), np.ones((f, K))
    allowed, n = np.ones((f, K), dtype=bool), np.full(K, 60.0)
    pivots = []
    for key in (np.where(np.arange(f) < 60, 0, K), np.full(f, K)):
        status, u, y, mu, done, _ = gub_simplex(C, A, allowed, n, key, 10**5, 1e-11, 0, NO_LINK)
        assert status == OPTIMAL and (C * u).sum() == pytest.approx(3 * 60 + 2 * 60 + 60)
        assert (A * u).sum(axis=0) == pytest.approx(n) and n @ y + mu.sum() == pytest.approx((C * u).sum())
        pivots.append(done)
    assert 120 <= pivots[0] < pivots[1]  # from the start, type 0's 60 blocks are not redone


def test_the_iteration_limit_is_reported():
    C, A, allowed = np.ones((50, 2)), np.ones((50, 2)), np.ones((50, 2), dtype=bool)
    status, *_ = gub_simplex(C, A, allowed, np.full(2, 10.0), np.full(50, 2), 3, 1e-11, 30, NO_LINK)
    assert status != OPTIMAL


@settings(max_examples=100)
@given(st.lists(st.tuples(st.integers(-5, 20), st.floats(0.0, 4.0)), min_size=0, max_size=60),
       st.floats(0.0, 100.0))
def test_the_weighted_crossing_is_the_sorted_definition(pairs, capacity):
    theta = np.array([float(t) for t, _ in pairs])
    need = np.array([w for _, w in pairs])
    order = np.argsort(-theta, kind="stable")
    over = int(np.searchsorted(np.cumsum(need[order]), capacity, side="right"))
    expected = theta[order[over]] if over < theta.size else -np.inf
    assert _crossing(theta.copy(), need.copy(), theta.size, capacity) == expected


def test_clearing_prices_one_type_at_the_block_that_overfills_it():
    c = np.array([[5.0, 4.0, 3.0, 2.0, 1.0]])
    ones, run, h = np.ones_like(c), np.ones(c.shape, dtype=bool), np.ones(5)
    assert clearing_prices(c, ones, ones, h, run, np.array([2.5]), np.zeros(1), 1, 0.1)[0] == 3.0
    assert clearing_prices(c, ones, ones, h, run, np.array([9.0]), np.zeros(1), 1, 0.1)[0] == 0.0  # room for all


@pytest.mark.parametrize("seed", range(8))
def test_the_compiled_best_choices_are_the_array_ones(seed):
    from optim import price_directed as pd

    rng = np.random.default_rng(seed)
    m, K = int(rng.integers(1, 500)), int(rng.integers(1, 8))
    c = np.round(rng.uniform(0.0, 5.0, (m, K)))  # ties between types and with idling
    g, e = rng.choice([1.0, 2.0], (m, K)), rng.choice([1.0, 2.0], (m, K))
    run = rng.random((m, K)) < 0.8
    part = pd._Part(pd.fortran(c), None, pd.fortran(g), pd.fortran(e), np.ones(m), np.ones(K), pd.fortran(run), -np.inf)
    y = np.round(rng.uniform(0.0, 2.0, K))
    assert np.array_equal(pd._start(part, y), pd._choices(part, y)[0])


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.integers(1, 4), st.integers(0, 6)), max_size=40),
       st.lists(st.floats(0.0, 12.0), min_size=4, max_size=4))
def test_a_start_keeps_each_types_best_blocks_while_they_fit(blocks, capacity):
    from optim.gub_kernels import fit_in_order

    k = np.array([b[0] for b in blocks], dtype=np.int64)
    busy = np.array([b[1] for b in blocks], dtype=bool)
    need, value = np.array([float(b[2]) for b in blocks]), np.array([float(b[3]) for b in blocks])
    n = np.array(capacity)
    expected = np.zeros(len(blocks), dtype=bool)
    for j in range(4):
        used = 0.0
        for b in sorted(np.flatnonzero(busy & (k == j)), key=lambda b: (-value[b], b)):
            used += need[b]
            if used > n[j]:
                break
            expected[b] = True
    assert np.array_equal(fit_in_order(k, busy, need, value, n, 0.0), expected)


def linked_value(p, allowed, n) -> float:
    """min T s.t. sum_b p_bk w_bk <= n_k T, sum_k w_bk = 1, by HiGHS."""
    f, K = p.shape
    cells = np.flatnonzero(allowed.reshape(-1))
    b, k = np.divmod(cells, K)
    N = cells.size
    A_ub = sp.csr_matrix((np.concatenate([p[b, k], -n]), (np.concatenate([k, np.arange(K)]),
                                                          np.concatenate([np.arange(N), np.full(K, N)]))),
                         shape=(K, N + 1))
    A_eq = sp.csr_matrix((np.ones(N), (b, np.arange(N))), shape=(f, N + 1))
    res = linprog(np.append(np.zeros(N), 1.0), A_ub=A_ub, b_ub=np.zeros(K), A_eq=A_eq, b_eq=np.ones(f), method="highs")
    assert res.status == 0
    return res.fun


@settings(max_examples=100)
@given(st.integers(1, 80), st.integers(1, 8), st.integers(0, 2**32 - 1), st.booleans(), st.sampled_from([0, 30]))
def test_the_linked_program_is_optimal_with_a_certificate(f, K, seed, ties, stall):
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.2, 5.0, (f, K))) + 1.0 if ties else rng.uniform(0.2, 5.0, (f, K))
    p[: f // 2] = p[0] if ties else p[: f // 2]
    allowed = rng.random((f, K)) < 0.8
    allowed[np.arange(f), rng.integers(0, K, f)] = True
    n = rng.uniform(0.5, 10.0, K)
    key = np.where(allowed, p / n, np.inf).argmin(axis=1)
    status, w, y, mu, _, T = gub_simplex(np.zeros((f, K)), p, allowed, np.zeros(K), key, 10**6, 1e-12 * p.max(),
                                         stall, n)
    assert status == OPTIMAL and T == pytest.approx(linked_value(p, allowed, n), rel=1e-9)
    assert np.allclose(w.sum(axis=1), 1.0) and (w[~allowed] == 0).all() and (w >= 0).all()
    assert ((p * w).sum(axis=0) <= n * T * (1 + 1e-9)).all()
    assert n @ y == pytest.approx(1.0) and -mu.sum() == pytest.approx(T)  # the dual: n y = 1, bound T
    assert (y >= -1e-12).all() and (np.where(allowed, -p * y - mu[:, None], -np.inf) <= 1e-9).all()
