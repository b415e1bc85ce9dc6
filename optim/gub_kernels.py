"""A primal simplex with generalized upper bounds for the sum form's reduced LP, compiled (and,
in its linked mode, for the level form without budgets: :mod:`optim.level_gub`).

In the budget shares ``u_bk = e_bk x_bk / h_b`` the program is

    max  sum_bk C_bk u_bk   s.t.  sum_k u_bk <= 1 (block b),  sum_b A_bk u_bk <= n_k (type k),  u >= 0

with ``C = c h / e`` and ``A = g h / e`` on the allowed cells. Dantzig and Van Slyke's GUB basis:
each block has one *key* basic variable (one of its cells, or its idle slack: choice K) whose
value is 1 less the block's other basics; K *extra* basics (cells of any block, or capacity
slacks) form the working basis W (K x K). The column of extra cell (b, j) is ``A_bj e_j - A_bk
e_k`` for the block's key cell k (no second term when the key idles); a capacity slack's is
``e_k``. One iteration:

- prices: ``W^T y = r`` with ``r`` the extras' costs less their keys' (0 for a slack);
  ``mu_b = C_b,key - y_key A_b,key`` (0 idle);
- reduced costs: ``C_bj - y_j A_bj - mu_b`` for a cell, ``-mu_b`` idle, ``-y_k`` for a capacity
  slack. None above ``tol``: optimal, and ``(u; y, mu)`` is a primal-dual pair with equal
  objectives (dual feasibility is the reduced costs' sign, complementarity holds on the basis);
- entering: the largest reduced cost (Dantzig) among the blocks priced (partial pricing, in the
  linked mode and from :data:`PARTIAL_MIN` blocks: at least a :data:`WINDOW_SHARE`-th of them,
  from where the last iteration stopped, all of them before optimality is declared); after
  ``stall`` (:data:`STALL`) pivots in a row that do not move, the lowest-numbered variable of
  positive reduced cost and the lowest-numbered leaving variable among ties (Bland's rule: no
  cycling);
- ratio test: ``W alpha = column``; the extras fall at rates ``alpha``, the key of a block at
  rate ``[entering block] - sum of its extras' alpha``; the first to reach 0 leaves. A leaving
  key hands its place to one of its block's extras (whose slot the entering variable takes), or,
  in the entering block without extras, to the entering variable.

Values and prices are computed from the basis each iteration (W by Gaussian elimination with
partial pivoting: K is small), so no error accumulates. The start must be primal feasible: the
keys given, every extra a capacity slack (the keys' usage within the capacities). The linked
mode adds one column T (cost -1, entries ``-link_k`` in the capacity rows) that may be an extra,
and no block idles: :func:`gub_simplex`. :func:`fit_in_order` makes the sum form's start.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: statuses of :func:`gub_simplex`
OPTIMAL, ITERATION_LIMIT, UNBOUNDED, SINGULAR = range(4)
STATUS = ("optimal", "at its pivot limit", "unbounded", "with a singular working basis")
#: degenerate pivots in a row after which Bland's rule chooses
STALL = 30
#: partial pricing: an iteration prices at least a WINDOW_SHARE-th of the blocks (and WINDOW_MIN),
#: from where the last stopped, and goes on until it finds a variable to enter or has priced all
WINDOW_MIN = 32
WINDOW_SHARE = 8
#: the sum form prices partially from this many blocks (throughput, 256 distinct jobs x 3 types:
#: 0.62 ms against 0.52 ms priced fully; 4,096 x 6: 6.5 ms against 7.4 ms); the linked mode always
PARTIAL_MIN = 1024


@njit(cache=True)
def _factor(W, piv):
    """LU of W in place with partial pivoting (row swaps in ``piv``); False where singular."""
    K = W.shape[0]
    for i in range(K):
        piv[i] = i
    for c in range(K):
        p = c
        best = abs(W[c, c])
        for r in range(c + 1, K):
            if abs(W[r, c]) > best:
                best, p = abs(W[r, c]), r
        if best < 1e-300:
            return False
        if p != c:
            for q in range(K):
                W[c, q], W[p, q] = W[p, q], W[c, q]
            piv[c], piv[p] = piv[p], piv[c]
        for r in range(c + 1, K):
            W[r, c] /= W[c, c]
            f = W[r, c]
            if f != 0.0:
                for q in range(c + 1, K):
                    W[r, q] -= f * W[c, q]
    return True


@njit(cache=True)
def _solve(LU, piv, rhs, out):
    """``W out = rhs`` from :func:`_factor`'s LU."""
    K = LU.shape[0]
    for i in range(K):
        out[i] = rhs[piv[i]]
    for i in range(K):
        for q in range(i):
            out[i] -= LU[i, q] * out[q]
    for i in range(K - 1, -1, -1):
        for q in range(i + 1, K):
            out[i] -= LU[i, q] * out[q]
        out[i] /= LU[i, i]


@njit(cache=True)
def _solve_t(LU, piv, rhs, out):
    """``W^T out = rhs`` from :func:`_factor`'s LU (``P W = L U``: ``W^T = U^T L^T P``)."""
    K = LU.shape[0]
    w = np.empty(K)
    for i in range(K):
        w[i] = rhs[i]
        for q in range(i):
            w[i] -= LU[q, i] * w[q]
        w[i] /= LU[i, i]
    for i in range(K - 1, -1, -1):
        for q in range(i + 1, K):
            w[i] -= LU[q, i] * w[q]
    for i in range(K):
        out[piv[i]] = w[i]


@njit(cache=True, inline="always")
def priced_next(bland, scanned, cursor, f):
    """Partial pricing's next block and cursor: in order under Bland's rule, else the cursor's
    block, the cursor moving round the ``f`` blocks."""
    if bland:
        return scanned, cursor
    return cursor, (cursor + 1 if cursor + 1 < f else 0)


@njit(cache=True)
def _earlier(t, theta, index, leave_index, rate, pivot, bland):
    """Whether a ratio ``t`` (its variable's ``index``, its ``rate``) leaves before the one so far:
    a smaller ratio, or a tie broken by the lower index (Bland) or the larger pivot."""
    if theta == np.inf or t < theta - 1e-12 * max(theta, 1.0):
        return True
    if t > theta + 1e-12 * max(theta, 1.0):
        return False
    return index < leave_index if bland else rate > pivot


@njit(cache=True)
def gub_simplex(C, A, allowed, n, key, max_iter, tol, stall_limit, link):
    """Solve the module's program from the feasible start ``key`` (f,; K: idle; changed in place),
    Bland's rule after ``stall_limit`` degenerate pivots in a row. With a nonempty ``link`` (K,),
    the linked program instead (:func:`optim.level_gub` states it): a column T of cost -1 and
    entries ``-link_k`` in the capacity rows, no idling (every block's shares add up to 1; its
    start ``key`` a cell each), T basic in place of the slack of the type its start fills most.
    Variables are numbered ``b (K + 1) + j`` (choice j of block b, K: idle), then ``f (K + 1) + k``
    (capacity slack k), then ``f (K + 1) + K`` (T). Returns ``(status, u (f, K), y (K), mu (f),
    iterations, T)``."""
    f, K = C.shape
    linked = link.size > 0
    ext_b = np.full(K, -1)  # the extras: block (-1: capacity slack of type ext_j, -2: T) and choice
    ext_j = np.arange(K)
    if linked:
        load = -n.copy()
        for b in range(f):
            load[key[b]] += A[b, key[b]]
        tight = 0
        for k in range(K):
            if load[k] * link[tight] > load[tight] * link[k]:
                tight = k
        ext_b[tight] = -2
    W = np.zeros((K, K))
    piv = np.zeros(K, dtype=np.int64)
    r, y, v, rhs, col, alpha = np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K)
    mu, uk = np.zeros(f), np.ones(f)
    stall, status, it, cursor = 0, ITERATION_LIMIT, 0, 0
    while it < max_iter:
        W[:] = 0.0
        for i in range(K):
            b, j = ext_b[i], ext_j[i]
            if b == -2:
                for k in range(K):
                    W[k, i] = -link[k]
                r[i] = -1.0
                continue
            if b < 0:
                W[j, i], r[i] = 1.0, 0.0
                continue
            r[i] = 0.0
            if j < K:
                W[j, i] += A[b, j]
                r[i] = C[b, j]
            kb = key[b]
            if kb < K:
                W[kb, i] -= A[b, kb]
                r[i] -= C[b, kb]
        if not _factor(W, piv):
            status = SINGULAR
            break
        _solve_t(W, piv, r, y)
        rhs[:] = n
        for b in range(f):
            kb = key[b]
            if kb < K:
                rhs[kb] -= A[b, kb]
                mu[b] = C[b, kb] - y[kb] * A[b, kb]
            else:
                mu[b] = 0.0
            uk[b] = 1.0
        _solve(W, piv, rhs, v)
        for i in range(K):
            if ext_b[i] >= 0:
                uk[ext_b[i]] -= v[i]
        bland = stall >= stall_limit
        best, eb, ej = tol, -2, -1  # entering: block eb (-1: capacity slack ej, -3: T; -2: none) and choice ej
        window = f if bland or not (linked or f >= PARTIAL_MIN) else max(WINDOW_MIN, f // WINDOW_SHARE)
        scanned = 0
        while scanned < f and (scanned < window or eb == -2):  # partial pricing from where the last stopped
            b, cursor = priced_next(bland, scanned, cursor, f)
            scanned += 1
            for j in range(K if linked else K + 1):
                if j < K and not allowed[b, j]:
                    continue
                d = (C[b, j] - y[j] * A[b, j] - mu[b]) if j < K else -mu[b]
                if d > best:
                    best, eb, ej = d, b, j
                    if bland:
                        break
            if bland and eb >= 0:
                break
        if eb == -2 or not bland:
            for k in range(K):
                if -y[k] > best:
                    best, eb, ej = -y[k], -1, k
                    if bland:
                        break
        if linked and (eb == -2 or not bland):
            d = -1.0
            for k in range(K):
                d += y[k] * link[k]
            if d > best:
                best, eb, ej = d, -3, K
        if eb == -2:
            status = OPTIMAL
            break
        col[:] = 0.0
        if eb == -3:  # T enters
            for k in range(K):
                col[k] = -link[k]
        elif eb < 0:
            col[ej] = 1.0
        else:
            if ej < K:
                col[ej] += A[eb, ej]
            kb = key[eb]
            if kb < K:
                col[kb] -= A[eb, kb]
        _solve(W, piv, col, alpha)
        scale = 1.0
        for i in range(K):
            scale = max(scale, abs(alpha[i]))
        eps = 1e-11 * scale
        theta, leave, leave_block, pivot, leave_index = np.inf, -1, -1, 0.0, 0
        for i in range(K):  # the extras
            if alpha[i] > eps:
                t = max(v[i], 0.0) / alpha[i]
                index = ext_b[i] * (K + 1) + ext_j[i]  # a cell; a capacity slack or T after every block's
                if ext_b[i] < 0:
                    index = f * (K + 1) + (K if ext_b[i] == -2 else ext_j[i])
                if _earlier(t, theta, index, leave_index, alpha[i], pivot, bland):
                    theta, leave, leave_block, pivot, leave_index = t, i, -1, alpha[i], index
        for q in range(K + 1):  # the keys of the blocks that move: the extras' and the entering one's
            b = eb if q == K else ext_b[q]
            if b < 0:
                continue
            seen = False
            for p in range(K if q == K else q):
                if ext_b[p] == b:
                    seen = True
            if seen:
                continue
            rate = 1.0 if b == eb else 0.0
            for p in range(K):
                if ext_b[p] == b:
                    rate -= alpha[p]
            if rate > eps:
                t = max(uk[b], 0.0) / rate
                index = b * (K + 1) + key[b]
                if _earlier(t, theta, index, leave_index, rate, pivot, bland):
                    theta, leave, leave_block, pivot, leave_index = t, -1, b, rate, index
        if leave < 0 and leave_block < 0:
            status = UNBOUNDED
            break
        stall = stall + 1 if theta <= 1e-12 else 0
        if eb == -3:
            eb, ej = -2, 0
        if leave >= 0:
            ext_b[leave], ext_j[leave] = eb, ej
        else:
            heir = -1
            for p in range(K):
                if ext_b[p] == leave_block:
                    heir = p
                    break
            if heir >= 0:
                key[leave_block] = ext_j[heir]
                ext_b[heir], ext_j[heir] = eb, ej
            else:  # the entering block's key, in a block without extras: the entering variable takes it
                key[leave_block] = ej
        it += 1
    u = np.zeros((f, K))
    for b in range(f):
        if key[b] < K:
            u[b, key[b]] = max(uk[b], 0.0)
    T = 0.0
    for i in range(K):
        if ext_b[i] >= 0 and ext_j[i] < K:
            u[ext_b[i], ext_j[i]] = max(v[i], 0.0)
        elif ext_b[i] == -2:
            T = v[i]
    return status, u, y, mu, it, T


@njit(cache=True)
def fit_in_order(k, busy, need, value, n, tol):
    """(f,): the ``busy`` blocks that keep their type ``k`` in a primal feasible start: on each
    type, best ``value`` per unit of ``need`` first (the lower index among equals), as long as
    their needs add up within ``n_k (1 + tol)``."""
    f, K = k.size, n.size
    fits = np.zeros(f, dtype=np.bool_)
    count = np.zeros(K + 1, dtype=np.int64)
    for b in range(f):
        if busy[b]:
            count[k[b] + 1] += 1
    for j in range(K):
        count[j + 1] += count[j]
    members = np.empty(count[K], dtype=np.int64)
    at = count[:K].copy()
    for b in range(f):
        if busy[b]:
            members[at[k[b]]] = b
            at[k[b]] += 1
    for j in range(K):
        group = members[count[j]:count[j + 1]]
        order = np.argsort(-value[group], kind="mergesort")
        used, cap = 0.0, n[j] * (1 + tol)
        for i in order:
            used += need[group[i]]
            if used > cap:
                break
            fits[group[i]] = True
    return fits
