"""A primal simplex for the level form's reduced LP (:mod:`optim.reduced_lp`), compiled: blocks of
two rows, K coupling rows and one linking column. The program, with slacks,

    max z   s.t.   sum_b g_bk x_bk + G_k z + sig_k = n_k     (type k)
                   sum_k e_bk x_bk + s_b = h_b               (budget of block b)
                   z - sum_k a_bk x_bk + t_b = 0             (level of block b)
                   x, sig, s, t >= 0,   z_lo <= z <= z_max

Basis partitioning, the GUB idea for blocks of two rows (Kaul; Hartman and Lasdon). A block's own
variables are its cells (columns ``(e_bj, -a_bj)`` in its rows), ``s_b`` ``(1, 0)`` and ``t_b``
``(0, 1)``. Each iteration reads every block's basic own variables from the basis: a block with two
whose columns span its rows takes the best conditioned pair as its *keys* (a 2 x 2 matrix M_b,
inverted in closed form) and the rest as *extras*; a block without such a pair (at most a few: only
z can make up for it) is *deficient* and keeps its two rows. Eliminating the keys leaves the
working basis W over the coupling rows and the deficient blocks' rows, whose unknowns are the
extras, the basic ``sig``, z and the deficient blocks' basics: the column of extra j of block b is
``g_bj e_j - gK_b M_b^-1 col_j`` (``gK_b``: the keys' coupling entries), z's ``G - sum_b gK_b
M_b^-1 (0, 1)``. Then

- values: ``W v = n - G z_nb - sum_b gK_b M_b^-1 (h_b, -z_nb)`` (``z_nb``: z's bound where it is
  nonbasic), the keys ``M_b^-1 ((h_b, -z) - sum of the extras' columns times their values)``;
- prices: ``W^T rho = r`` (r: 1 for z, 0 else): y the coupling rows' duals, a complete block's
  ``(mu_b, lam_b) = -M_b^-T gK_b^T y``, a deficient block's from rho;
- reduced costs: ``a_bj lam_b - e_bj mu_b - g_bj y_j`` (cell), ``-mu_b`` (s), ``-lam_b`` (t),
  ``-y_k`` (sig), ``1 - G . y - sum_b lam_b`` (z). None beyond ``tol`` (z at its upper bound: none
  below ``-tol``): optimal, and ``(x, z; y, mu, lam)`` a primal-dual pair of equal objectives;
- entering: Dantzig's largest reduced cost over the blocks priced (partial pricing, as in
  :mod:`optim.gub_kernels`), Bland's rule after ``stall_limit`` degenerate pivots
  in a row; ratio test over the basics (z between its bounds; an entering z may flip bounds).

Values and prices are computed from the basis each iteration (W by a dense LU), so no error
accumulates; the keys of a block are read again only when a pivot touches it, the sums over the
complete blocks are kept up to date (and summed afresh every :data:`REFRESH` pivots), and the keys
that move with z alone are ranked by their *breakpoints* (the z at which each reaches 0), so an
iteration prices a window of blocks and makes one pass of comparisons over the blocks. The start
must be primal feasible: :func:`optim.reduced_lp.crash_start` builds one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .gub_kernels import (
    ITERATION_LIMIT,
    OPTIMAL,
    SINGULAR,
    UNBOUNDED,
    WINDOW_MIN,
    WINDOW_SHARE,
    _earlier,
    _factor,
    _solve,
    _solve_t,
    priced_next,
)

#: deficient blocks the working basis holds at most (a basis has one where z is basic and its
#: level row sets z; more only in degenerate bases)
DEFICIENT_MAX = 4
#: a pair of own columns spans its block's rows where |det| / (|col_p| |col_q|) exceeds this
SPAN_TOL = 1e-9
#: pivots after which the sums over the complete blocks are summed afresh
REFRESH = 64



@njit(cache=True, inline="always")
def _column(a, e, b, j, K):
    """Own variable ``j`` of block ``b`` in its block's (budget, level) rows."""
    if j < K:
        return e[b, j], -a[b, j]
    if j == K:
        return 1.0, 0.0
    return 0.0, 1.0


@njit(cache=True, inline="always")
def _keys(a, e, b, members, count, K):
    """The best conditioned pair among the ``count`` basic own variables ``members`` of block
    ``b``: (p, q, M^-1 as m00, m01, m10, m11); p = -1 where no pair spans the rows."""
    best, bp, bq = SPAN_TOL * SPAN_TOL, -1, -1
    for i in range(count):
        p0, p1 = _column(a, e, b, members[i], K)
        pp = p0 * p0 + p1 * p1
        for i2 in range(i + 1, count):
            q0, q1 = _column(a, e, b, members[i2], K)
            det = p0 * q1 - p1 * q0
            det = det * det / max(pp * (q0 * q0 + q1 * q1), 1e-300)
            if det > best:
                best, bp, bq = det, members[i], members[i2]
    if bp < 0:
        return -1, -1, 0.0, 0.0, 0.0, 0.0
    p0, p1 = _column(a, e, b, bp, K)
    q0, q1 = _column(a, e, b, bq, K)
    det = p0 * q1 - p1 * q0
    return bp, bq, q1 / det, -q0 / det, -p1 / det, p0 / det


@njit(cache=True)
def level_simplex(a, e, g, h, allowed, n, G, z_lo, z_max, own, slack, z_state, max_iter, tol, stall_limit):
    """Solve the module's program from the primal feasible basis ``own`` (f, K + 2: cells, s, t
    basic), ``slack`` (K: sig basic) and ``z_state`` (0 basic, 1 at z_lo, 2 at z_max), all
    changed in place. Variables are numbered ``b (K + 2) + j`` (own variable j of block b), then
    ``f (K + 2) + k`` (sig_k), then ``f (K + 2) + K`` (z). Returns ``(status, x (f, K), z, y (K),
    mu (f), lam (f), iterations)`` (:data:`~optim.gub_kernels.STATUS`).

    Only the blocks a pivot touches have their keys read again; the sums over the complete blocks
    of ``gK_b M_b^-1 (h_b, 0)`` and ``gK_b M_b^-1 (0, 1)`` are kept up to date (and summed afresh
    every :data:`REFRESH` pivots), and only *special* blocks (with extras, or deficient) enter the
    working basis. A key of a block with neither (a *normal* block) other than the entering one
    moves with z alone: at rate ``s Q`` (``Q = (M_b^-1 (0, 1))_key``, ``s`` z's rate), reaching 0 at
    the breakpoint ``z = h_b (M_b^-1)_key,0 / Q``, so the ratio test takes the nearest breakpoint
    (Bland's rule: every block in turn)."""
    f, K = a.shape
    J = K + 2
    S = K + 2 * DEFICIENT_MAX
    W = np.zeros((S, S))
    piv = np.zeros(S, dtype=np.int64)
    rhs, v, r, rho, col, alpha = np.zeros(S), np.zeros(S), np.zeros(S), np.zeros(S), np.zeros(S), np.zeros(S)
    kind, ub, uj = np.zeros(S, dtype=np.int64), np.zeros(S, dtype=np.int64), np.zeros(S, dtype=np.int64)
    key0, key1 = np.zeros(f, dtype=np.int64), np.zeros(f, dtype=np.int64)
    Mi = np.zeros((f, 4))
    complete = np.zeros(f, dtype=np.bool_)
    slot = np.full(f, -1)  # a deficient block's place among the deficient
    special = np.zeros(f, dtype=np.bool_)
    specials = np.zeros(f, dtype=np.int64)
    n_special = 0
    members = np.zeros(J, dtype=np.int64)
    mu, lam, y = np.zeros(f), np.zeros(f), np.zeros(K)
    acc0, acc1 = np.zeros(f), np.zeros(f)  # special blocks: their extras' columns times values (rates)
    t0, t1 = np.zeros(f), np.zeros(f)
    hsum, zsum = np.zeros(K), np.zeros(K)
    zu, zd = np.full((f, 2), np.inf), np.full((f, 2), -np.inf)  # breakpoints of keys that rise / fall with z
    dirty = np.zeros(f, dtype=np.int64)
    n_dirty = f
    for b in range(f):
        dirty[b] = b
    z = 0.0
    stall, status, it, since, cursor = 0, ITERATION_LIMIT, 0, 0, 0
    while it < max_iter:
        if since >= REFRESH:
            n_dirty, since = f, 0
            for b in range(f):
                dirty[b] = b
            hsum[:] = 0.0
            zsum[:] = 0.0
            for b in range(f):
                complete[b] = False
        for i in range(n_dirty):  # the keys of the blocks the last pivot touched
            b = dirty[i]
            if complete[b]:
                _add_keys(hsum, zsum, g, h, b, key0[b], key1[b], Mi, -1.0, K)
            count = 0
            for j in range(J):
                if own[b, j]:
                    members[count] = j
                    count += 1
            p, q, m00, m01, m10, m11 = _keys(a, e, b, members, count, K)
            complete[b] = p >= 0
            if p >= 0:
                key0[b], key1[b] = p, q
                Mi[b, 0], Mi[b, 1], Mi[b, 2], Mi[b, 3] = m00, m01, m10, m11
                _add_keys(hsum, zsum, g, h, b, p, q, Mi, 1.0, K)
            now = count != 2 or p < 0
            if now and not special[b]:
                specials[n_special] = b
                n_special += 1
            elif special[b] and not now:
                for s_ in range(n_special):
                    if specials[s_] == b:
                        specials[s_] = specials[n_special - 1]
                        n_special -= 1
                        break
            special[b] = now
            for side in range(2):  # the keys' breakpoints: z where a key of a normal block reaches 0
                zu[b, side], zd[b, side] = np.inf, -np.inf
                coef = Mi[b, 1 + 2 * side]
                if not now and coef != 0.0:
                    point = h[b] * Mi[b, 2 * side] / coef
                    if coef > 0:
                        zu[b, side] = point
                    else:
                        zd[b, side] = point
        n_dirty = 0
        nd, nu, ok = 0, 0, True  # the working basis' unknowns
        for s_ in range(n_special):
            b = specials[s_]
            slot[b] = -1
            if not complete[b]:
                if nd == DEFICIENT_MAX:
                    ok = False
                    break
                slot[b] = nd
                nd += 1
            for j in range(J):
                if not own[b, j] or (complete[b] and (j == key0[b] or j == key1[b])):
                    continue
                if nu == S:
                    ok = False
                    break
                kind[nu], ub[nu], uj[nu] = 0, b, j
                nu += 1
            if not ok:
                break
        for k in range(K):
            if ok and slack[k]:
                if nu == S:
                    ok = False
                    break
                kind[nu], ub[nu], uj[nu] = 1, -1, k
                nu += 1
        if ok and z_state == 0:
            if nu == S:
                ok = False
            else:
                kind[nu], ub[nu], uj[nu] = 2, -1, K
                nu += 1
        D = K + 2 * nd
        if not ok or nu != D:
            status = SINGULAR
            break
        z_nb = 0.0 if z_state == 0 else (z_lo if z_state == 1 else z_max)
        Wd = W[:D, :D]
        for u in range(D):
            r[u] = 1.0 if kind[u] == 2 else 0.0
            col[:] = 0.0
            _column_of(col, kind[u], ub[u], uj[u], a, e, g, G, key0, key1, Mi, complete, slot, zsum, nd, K)
            for i in range(D):
                Wd[i, u] = col[i]
        for k in range(K):
            rhs[k] = n[k] - G[k] * z_nb - hsum[k] + z_nb * zsum[k]
        for s_ in range(n_special):
            b = specials[s_]
            if slot[b] >= 0:
                rhs[K + 2 * slot[b]], rhs[K + 2 * slot[b] + 1] = h[b], -z_nb
        if not _factor(Wd, piv[:D]):
            status = SINGULAR
            break
        _solve(Wd, piv[:D], rhs[:D], v[:D])
        _solve_t(Wd, piv[:D], r[:D], rho[:D])
        z = _extras_times(v, 1.0, z_nb, acc0, acc1, D, kind, ub, uj, complete, specials, n_special, a, e, K)
        for k in range(K):
            y[k] = rho[k]
        bland = stall >= stall_limit
        best, eb, ej = tol, -2, -1  # entering: own (b, j); -1: sig_j; -3: z; -2: none
        lam_sum = 0.0  # sum_b lam_b: -y . zsum over the complete blocks
        for k in range(K):
            lam_sum -= y[k] * zsum[k]
        for s_ in range(n_special):
            b = specials[s_]
            if not complete[b]:
                lam_sum += rho[K + 2 * slot[b] + 1]
        window = f if bland else max(WINDOW_MIN, f // WINDOW_SHARE)
        scanned = 0
        while scanned < f and (scanned < window or eb == -2):  # partial pricing from where the last stopped
            b, cursor = priced_next(bland, scanned, cursor, f)
            scanned += 1
            if complete[b]:
                w0 = g[b, key0[b]] * y[key0[b]] if key0[b] < K else 0.0
                w1 = g[b, key1[b]] * y[key1[b]] if key1[b] < K else 0.0
                mu[b] = -(Mi[b, 0] * w0 + Mi[b, 2] * w1)
                lam[b] = -(Mi[b, 1] * w0 + Mi[b, 3] * w1)
            else:
                mu[b], lam[b] = rho[K + 2 * slot[b]], rho[K + 2 * slot[b] + 1]
            for j in range(J):
                if own[b, j] or (j < K and not allowed[b, j]):
                    continue
                if j < K:
                    d = a[b, j] * lam[b] - e[b, j] * mu[b] - g[b, j] * y[j]
                else:
                    d = -mu[b] if j == K else -lam[b]
                if d > best:
                    best, eb, ej = d, b, j
                    if bland:
                        break
            if bland and eb >= 0:
                break
        if eb == -2 or not bland:
            for k in range(K):
                if not slack[k] and -y[k] > best:
                    best, eb, ej = -y[k], -1, k
                    if bland:
                        break
        direction = 1.0
        if z_state != 0 and (eb == -2 or not bland):
            d = 1.0 - lam_sum
            for k in range(K):
                d -= G[k] * y[k]
            if z_state == 1 and d > best:
                best, eb, ej = d, -3, K
            elif z_state == 2 and -d > best:
                best, eb, ej, direction = -d, -3, K, -1.0
        if eb == -2:
            status = OPTIMAL
            break
        col[:] = 0.0  # the entering column, eliminated like the basics'
        _column_of(col, 2 if eb == -3 else (1 if eb == -1 else 0), eb, ej, a, e, g, G, key0, key1, Mi, complete,
                   slot, zsum, nd, K)
        _solve(Wd, piv[:D], col[:D], alpha[:D])
        scale = 1.0
        for u in range(D):
            scale = max(scale, abs(alpha[u]))
        eps = 1e-11 * scale
        if eb >= 0:
            t0[eb], t1[eb] = 0.0, 0.0
        rate_z = _extras_times(alpha, -1.0, 0.0, t0, t1, D, kind, ub, uj, complete, specials, n_special, a, e, K)
        if eb >= 0 and complete[eb]:
            c0, c1 = _column(a, e, eb, ej, K)
            t0[eb] += c0
            t1[eb] += c1
        lift = (1.0 if eb == -3 else 0.0) - rate_z  # z's (0, 1) in every level row
        theta, leave, pivot, leave_index, at_upper = np.inf, -1, 0.0, 0, False
        for u in range(D):  # the working basis' unknowns
            rate = direction * alpha[u]
            if kind[u] == 2:
                if rate > eps and np.isfinite(z_lo):
                    tt, up = max(z - z_lo, 0.0) / rate, False
                elif rate < -eps and np.isfinite(z_max):
                    tt, up = max(z_max - z, 0.0) / -rate, True
                else:
                    continue
                index = f * J + K
            elif rate > eps:
                tt, up = max(v[u], 0.0) / rate, False
                index = ub[u] * J + uj[u] if kind[u] == 0 else f * J + uj[u]
            else:
                continue
            if _earlier(tt, theta, index, leave_index, abs(rate), pivot, bland):
                theta, leave, pivot, leave_index, at_upper = tt, u, abs(rate), index, up
        leave_block, leave_key = -1, -1
        fast = lift != 0.0 and not bland
        every = lift != 0.0 and bland  # Bland's rule: every block in turn, the lowest index among ties
        for i in range(f if every else n_special + 1):  # the keys that move other than with z alone
            b = i if every else (specials[i] if i < n_special else eb)
            if b < 0 or not complete[b]:
                continue
            busy = special[b] or b == eb
            d0 = t0[b] if busy else 0.0
            d1 = (t1[b] if busy else 0.0) + lift
            if d0 == 0.0 and d1 == 0.0:
                continue
            e0, e1 = (acc0[b], acc1[b]) if special[b] else (0.0, 0.0)
            for side in range(2):
                kj = key0[b] if side == 0 else key1[b]
                m0, m1 = (Mi[b, 0], Mi[b, 1]) if side == 0 else (Mi[b, 2], Mi[b, 3])
                rate = direction * (m0 * d0 + m1 * d1)
                if rate > eps:
                    value = m0 * (h[b] - e0) + m1 * (-z - e1)
                    tt = max(value, 0.0) / rate
                    index = b * J + kj
                    if _earlier(tt, theta, index, leave_index, rate, pivot, bland):
                        theta, leave, pivot, leave_index, at_upper = tt, -1, rate, index, False
                        leave_block, leave_key = b, kj
        if fast:  # the other blocks' keys move with z alone, at s Q: the first to reach its breakpoint
            s = direction * lift
            lone = eb >= 0 and not special[eb]
            if lone:
                kept = (zu[eb, 0], zu[eb, 1], zd[eb, 0], zd[eb, 1])
                zu[eb, 0], zu[eb, 1], zd[eb, 0], zd[eb, 1] = np.inf, np.inf, -np.inf, -np.inf
            first, side = -1, 0
            if s > 0:
                edge = np.inf
                for b in range(f):
                    for q in range(2):
                        if zu[b, q] < edge:
                            edge, first, side = zu[b, q], b, q
            else:
                edge = -np.inf
                for b in range(f):
                    for q in range(2):
                        if zd[b, q] > edge:
                            edge, first, side = zd[b, q], b, q
            if lone:
                zu[eb, 0], zu[eb, 1], zd[eb, 0], zd[eb, 1] = kept
            if first >= 0:
                rate = s * (Mi[first, 1] if side == 0 else Mi[first, 3])
                tt = max((edge - z) / s, 0.0)
                kj = key0[first] if side == 0 else key1[first]
                if rate <= eps:  # a key of almost no rate: the ratio test over every block this once
                    stall = stall_limit
                    continue
                if _earlier(tt, theta, first * J + kj, leave_index, rate, pivot, False):
                    theta, leave, pivot, leave_index, at_upper = tt, -1, rate, first * J + kj, False
                    leave_block, leave_key = first, kj
        flip = eb == -3 and np.isfinite(z_lo) and np.isfinite(z_max) and z_max - z_lo <= theta
        if theta == np.inf and not flip:
            status = UNBOUNDED
            break
        stall = stall + 1 if (theta <= 1e-12 and not flip) else 0
        it += 1
        since += 1
        if flip:
            z_state = 2 if z_state == 1 else 1
            continue
        if leave >= 0:
            if kind[leave] == 2:
                z_state = 2 if at_upper else 1
            elif kind[leave] == 1:
                slack[uj[leave]] = False
            else:
                own[ub[leave], uj[leave]] = False
                dirty[n_dirty] = ub[leave]
                n_dirty += 1
        else:
            own[leave_block, leave_key] = False
            dirty[n_dirty] = leave_block
            n_dirty += 1
        if eb == -3:
            z_state = 0
        elif eb == -1:
            slack[ej] = True
        else:
            own[eb, ej] = True
            if n_dirty == 0 or dirty[0] != eb:
                dirty[n_dirty] = eb
                n_dirty += 1
    x = np.zeros((f, K))
    for u in range(nu if status == OPTIMAL else 0):
        if kind[u] == 0 and uj[u] < K:
            x[ub[u], uj[u]] = max(v[u], 0.0)
    for b in range(f if status == OPTIMAL else 0):
        if complete[b]:
            e0, e1 = (acc0[b], acc1[b]) if special[b] else (0.0, 0.0)
            if key0[b] < K:
                x[b, key0[b]] = max(Mi[b, 0] * (h[b] - e0) + Mi[b, 1] * (-z - e1), 0.0)
            if key1[b] < K:
                x[b, key1[b]] = max(Mi[b, 2] * (h[b] - e0) + Mi[b, 3] * (-z - e1), 0.0)
    return status, x, z, y, mu, lam, it


@njit(cache=True, inline="always")
def _extras_times(w, sign, z_else, out0, out1, D, kind, ub, uj, complete, specials, n_special, a, e, K):
    """``out_b = sign * sum of the extras' columns of block b times w`` for every special block
    (the others' are not touched); returns z's entry of ``w``, ``z_else`` where z is not basic."""
    for s_ in range(n_special):
        out0[specials[s_]], out1[specials[s_]] = 0.0, 0.0
    z_w = z_else
    for u in range(D):
        if kind[u] == 2:
            z_w = w[u]
        elif kind[u] == 0 and complete[ub[u]]:
            c0, c1 = _column(a, e, ub[u], uj[u], K)
            out0[ub[u]] += sign * c0 * w[u]
            out1[ub[u]] += sign * c1 * w[u]
    return z_w


@njit(cache=True, inline="always")
def _add_keys(hsum, zsum, g, h, b, k0, k1, Mi, sign, K):
    """``hsum += sign gK_b M_b^-1 (h_b, 0)``, ``zsum += sign gK_b M_b^-1 (0, 1)``."""
    if k0 < K:
        hsum[k0] += sign * g[b, k0] * Mi[b, 0] * h[b]
        zsum[k0] += sign * g[b, k0] * Mi[b, 1]
    if k1 < K:
        hsum[k1] += sign * g[b, k1] * Mi[b, 2] * h[b]
        zsum[k1] += sign * g[b, k1] * Mi[b, 3]


@njit(cache=True, inline="always")
def _column_of(out, kind, b, j, a, e, g, G, key0, key1, Mi, complete, slot, zsum, nd, K):
    """A variable's column in the working basis' rows (``out`` zeroed): own variable ``j`` of
    block ``b`` (kind 0), sig_j (1) or z (2: ``G - zsum``, and 1 in each deficient level row)."""
    if kind == 1:
        out[j] = 1.0
    elif kind == 2:
        for k in range(K):
            out[k] = G[k] - zsum[k]
        for i in range(nd):
            out[K + 2 * i + 1] = 1.0
    else:
        c0, c1 = _column(a, e, b, j, K)
        if j < K:
            out[j] += g[b, j]
        if not complete[b]:
            out[K + 2 * slot[b]] = c0
            out[K + 2 * slot[b] + 1] = c1
        else:
            _less_keys(out, g, b, key0[b], key1[b], Mi, c0, c1, K)


@njit(cache=True, inline="always")
def _less_keys(out, g, b, k0, k1, Mi, c0, c1, K):
    """``out -= gK_b M_b^-1 (c0, c1)``: what the keys of block ``b`` take from the coupling rows
    to cover ``(c0, c1)`` in its rows."""
    if k0 < K:
        out[k0] -= g[b, k0] * (Mi[b, 0] * c0 + Mi[b, 1] * c1)
    if k1 < K:
        out[k1] -= g[b, k1] * (Mi[b, 2] * c0 + Mi[b, 3] * c1)

