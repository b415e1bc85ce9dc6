"""The level form's compiled simplex (:mod:`optim.level_simplex`): optimal against HiGHS on random
reduced LPs (budgets that bind, aggregates, bounds on z, ties, empty types), with a certificate;
its crash start; Bland's rule from the first pivot; the pivot limit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from optim.gub_kernels import ITERATION_LIMIT, OPTIMAL
from optim.level_simplex import level_simplex
from optim.reduced_lp import crash_start


def highs_level(a, e, g, h, run, n, G, z_lo, z_max) -> float:
    """max z s.t. capacities, budgets and levels (the module's program) by HiGHS."""
    f, K = a.shape
    cells = np.flatnonzero(run.reshape(-1))
    b, k = np.divmod(cells, K)
    cols = np.arange(cells.size)
    M = sp.csr_matrix((np.concatenate([g[b, k], e[b, k], -a[b, k], G, np.ones(f)]),
                       (np.concatenate([k, K + b, K + f + b, np.arange(K), K + f + np.arange(f)]),
                        np.concatenate([cols, cols, cols, np.full(K + f, cells.size)]))),
                      shape=(K + 2 * f, cells.size + 1))
    bounds = [(0, None)] * cells.size + [(None if z_lo == -np.inf else z_lo, None if z_max == np.inf else z_max)]
    res = linprog(-np.eye(cells.size + 1)[-1], A_ub=M, b_ub=np.concatenate([n, h, np.zeros(f)]), bounds=bounds,
                  method="highs")
    assert res.status == 0
    return -res.fun


@st.composite
def programs(draw):
    f, K = draw(st.integers(1, 60)), draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.uniform(0.2, 2.0, (f, K)) / rng.choice([1.0, 2.0, 4.0], f)[:, None]
    if draw(st.booleans()):  # ties: rounded values, and half the blocks equal
        a = np.round(a * 4) / 4 + 0.25
        a[: f // 2] = a[0]
    e = rng.uniform(0.5, 1.5, (f, K)) if draw(st.booleans()) else np.ones((f, K))
    g = rng.choice([1.0, 2.0, 4.0], (f, 1)) * np.ones((1, K))
    h = rng.uniform(0.3, 1.0, f) if draw(st.booleans()) else np.ones(f)
    run = rng.random((f, K)) < 0.8
    run[np.arange(f), rng.integers(0, K, f)] = True
    n = rng.uniform(0.2, 1.5, K) * f * draw(st.sampled_from([0.1, 0.5, 3.0]))
    n[rng.random(K) < 0.1] = 0.0
    G = rng.uniform(0.0, 2.0, K) * (rng.random(K) < 0.5) if draw(st.booleans()) else np.zeros(K)
    z_lo = draw(st.sampled_from([-np.inf, 0.0]))
    z_max = draw(st.sampled_from([np.inf, 0.05, 0.3]))
    return a, e, g, h, run, n, G, z_lo, z_max, draw(st.sampled_from([0, 30])), draw(st.booleans())


@settings(max_examples=200)
@given(programs())
def test_the_level_simplex_is_optimal_with_a_certificate(program):
    a, e, g, h, run, n, G, z_lo, z_max, stall, picked = program
    f, K = a.shape
    pick = np.random.default_rng(0).integers(0, K, f) if picked else None
    status, x, z, y, mu, lam, _ = level_simplex(a, e, g, h, run, n, G, z_lo, z_max,
                                                *crash_start(a, e, g, h, run, n, G, z_lo, z_max, pick), 10**6,
                                                1e-11 * a.max(), stall)
    assert status == OPTIMAL
    assert z == pytest.approx(highs_level(a, e, g, h, run, n, G, z_lo, z_max), rel=1e-9, abs=1e-12)
    tol = 1e-9 * (1 + z)
    assert (x >= 0).all() and (x[~run] == 0).all()
    assert ((g * x).sum(axis=0) + G * z <= n + tol * (1 + n)).all()
    assert ((e * x).sum(axis=1) <= h + tol).all() and ((a * x).sum(axis=1) >= z - tol).all()
    assert z <= z_max and z >= z_lo
    scale = max(1.0, float(np.abs(np.concatenate([y, mu, lam])).max()))
    assert (y >= -1e-9 * scale).all() and (mu >= -1e-9 * scale).all() and (lam >= -1e-9 * scale).all()
    reduced = np.where(run, a * lam[:, None] - e * mu[:, None] - g * y, -np.inf)
    assert (reduced <= 1e-9 * scale * a.max()).all()
    d_z = 1.0 - G @ y - lam.sum()  # z's reduced cost: 0 where basic, of its bound's sign where not
    bound = n @ y + h @ mu + d_z * z  # the dual objective
    assert bound == pytest.approx(z, rel=1e-9, abs=1e-9 * scale)
    if d_z > 1e-9 * scale:
        assert z == z_max
    if d_z < -1e-9 * scale:
        assert z == z_lo


def test_the_crash_start_is_feasible_and_says_what_sets_z():
    a, e, g = np.array([[1.0, 2.0], [1.0, 1.5]]), np.ones((2, 2)), np.ones((2, 2))
    run = np.ones((2, 2), dtype=bool)
    own, slack, z_state = crash_start(a, e, g, np.ones(2), run, np.array([10.0, 0.5]), np.zeros(2), -np.inf, np.inf)
    # both blocks on type 1 (least g / a), 1/2 + 2/3 of it per unit of z: type 1 sets z = 3/7 (budgets: 1.5)
    assert own[:, 1].all() and own[:, 2].all() and not own[:, 3].any() and z_state == 0
    assert slack.tolist() == [True, False]
    own, slack, z_state = crash_start(a, e, g, np.array([0.1, 1.0]), run, np.array([10.0, 10.0]), np.zeros(2),
                                      -np.inf, np.inf)
    assert not own[0, 2] and own[1, 2] and slack.all() and z_state == 0  # block 0's budget sets z = 0.2
    assert crash_start(a, e, g, np.ones(2), run, np.full(2, 10.0), np.zeros(2), -np.inf, 0.1)[2] == 2  # z_max
    assert crash_start(a, e, g, np.ones(2), run, np.full(2, 10.0), np.zeros(2), 50.0, np.inf) is None
    assert crash_start(a, e, g, np.ones(2), np.array([[True, True], [False, False]]), np.full(2, 10.0), np.zeros(2),
                       -np.inf, np.inf) is None


def test_a_degenerate_program_of_equal_blocks_ends_and_the_pivot_limit_is_reported():
    # 120 equal blocks, two types of room for 30 and 30 at level 1: every block splits or ties
    f, K = 120, 2
    a, e, g = np.ones((f, K)), np.ones((f, K)), np.ones((f, K))
    run, n, G = np.ones((f, K), dtype=bool), np.array([30.0, 30.0]), np.zeros(K)
    for stall in (0, 30):
        start = crash_start(a, e, g, np.ones(f), run, n, G, -np.inf, np.inf)
        status, x, z, y, mu, lam, _ = level_simplex(a, e, g, np.ones(f), run, n, G, -np.inf, np.inf, *start, 10**5,
                                                    1e-11, stall)
        assert status == OPTIMAL and z == pytest.approx(0.5) and n @ y == pytest.approx(0.5)
    start = crash_start(a, e, g, np.ones(f), run, n, G, -np.inf, np.inf)
    assert level_simplex(a, e, g, np.ones(f), run, n, G, -np.inf, np.inf, *start, 3, 1e-11, 30)[0] == ITERATION_LIMIT
