"""Newton steps of :func:`optim.block_lp.solve_block` at a cost linear in the number of blocks.

The step solves ``H v = g`` with ``H = Aᵀ Dr A + Dv``: A the block rows ``Ab`` and coupling rows
``Ac`` over the block columns x and linking columns y, Dr their barrier weights and Dv the column
bounds'. With ``w = Dr A v`` it is the augmented system ``Aᵀ w + Dv v = g``, ``A v = Dr⁻¹ w``, and
with ``Θ = Dv_x⁻¹`` (x's bounds; a free column gets :data:`REGULARIZATION`):

    v_x = Θ (g_x - Abᵀ w_b - Acᵀ w_c)
    D_b w_b + C_bᵀ w_c - Aby_b v_y = Ab_b Θ g_x            D_b = Ab_b Θ Ab_bᵀ + Dr_b⁻¹  (R x R)
    M w_c + Σ_b C_b w_b - Acy v_y = Ac Θ g_x                M = Ac Θ Acᵀ + Dr_c⁻¹,  C_b = Ac_b Θ Ab_bᵀ
    Σ_b Aby_bᵀ w_b + Acyᵀ w_c + Dv_y v_y = g_y

Eliminating each block's w_b (an R x R solve per block, R the block's rows: 1-2 in the Gavel
family) leaves a dense system of K + L unknowns (coupling rows and linking columns: the worker
types and the level) whose matrix is the Schur complement

    [ M - Σ C_b D_b⁻¹ C_bᵀ         Σ C_b D_b⁻¹ Aby_b - Acy ] [w_c]   [Ac Θ g_x - Σ C_b D_b⁻¹ h_b ]
    [ Acyᵀ - Σ Aby_bᵀ D_b⁻¹ C_bᵀ   Dv_y + Σ Aby_bᵀ D_b⁻¹ Aby_b] [v_y] = [g_y - Σ Aby_bᵀ D_b⁻¹ h_b   ]

(``h_b = Ab_b Θ g_x``): positive definite diagonal blocks, so LU solves it; one step of iterative
refinement on ``H`` (matrix-free) follows. Every sum over blocks is one pass over (blocks, slots)
arrays or one GEMM of K x blocks panels: O(B n R² + B K R) per step, nothing quadratic in B.

Near an optimum the weights span 1e-10 to 1e10 and this elimination cancels in two ways, each met
by a form of its own:

- a block with a cell far inside its bounds (θ_j ~ 1/μ) and tight rows: ``M_b - C_b D_b⁻¹ C_bᵀ``
  keeps less than :data:`TAU` of its terms (or D_b is worse conditioned than :data:`COND`). Such
  blocks take the projected form (:class:`_ProjectedBlocks`), whose every entry is a sum in which
  the large θ_j never meets itself (Cauchy-Binet, O(n³) per block, for these blocks only);
- a block that moves freely (two or more interior cells: P large) along directions only stiff
  coupling rows hold (tight capacities, Dc ~ 1/μ): eliminating it before the coupling rows
  cancels in any form, as Woodbury's ``P - P U S⁻¹ Uᵀ P`` does. Such blocks (``Σ_k Ac_kj² Dc_k
  P_jj`` above :data:`STIFF`) are kept whole in one dense system with the coupling rows and linking
  columns (:class:`_FreeBlocks`), factorized with pivoting as the dense method factorizes all of H.

On random instances of 60-120 distinct jobs (2-10 types, max-min, throughput, makespan) every run
then converges to 1e-8 as the dense method does (120 seeds x 3 programs, none stalled; before the two forms, 72 of 180
stalled). Where the free blocks exceed :data:`FREE_MAX` cells they are eliminated like the others.

Coupling rows are read per cell: when every cell has one coupling entry and a block's cells have
distinct rows (a cell per worker type), the blocks are laid out with slot k = coupling row k
(:func:`aligned`) and ``C_b`` is read off directly; otherwise ``C_b`` is scattered per block."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .sparse import scipy_sparse as sp

#: the bound weight of a block column without finite bounds (its Θ is 1 / this)
REGULARIZATION = 1e-10
#: the stand-in for Dr⁻¹ where a row has no finite side (its w is 0)
NO_ROW = 1e30
#: a block whose row-space Schur contribution keeps less than this fraction of its terms, or whose
#: D_b is worse conditioned than :data:`COND`, takes the projected form (module doc)
TAU = 1e-3
COND = 1e8
#: a block whose free directions meet coupling rows stiffer than this (``cv² P_jj Dc``) is kept whole
#: in the dense system (:class:`_FreeBlocks`), up to :data:`FREE_MAX` cells in all
STIFF = 1e8
FREE_MAX = 3000
#: a step whose residual on H is within this fraction of the right side is not refined
REFINE = 1e-13


@dataclass
class Coupling:
    """Ac per cell: ``rows`` (P, B, n) the coupling row of each of a cell's P entries (-1: none) and
    ``values`` (P, B, n); ``aligned``: P = 1 and slot k of every block is in coupling row k."""

    rows: np.ndarray
    values: np.ndarray
    K: int
    aligned: bool

    @classmethod
    def of(cls, Ac: sp.csr_matrix, B: int, n: int) -> Coupling:
        K = Ac.shape[0]
        csc = Ac.tocsc()
        csc.sort_indices()
        per_col = np.diff(csc.indptr)
        P = int(per_col.max(initial=0))
        rows = np.full((max(P, 1), B * n), -1, dtype=np.int64)
        values = np.zeros((max(P, 1), B * n))
        col = np.repeat(np.arange(B * n), per_col)
        rank = np.arange(csc.indices.size) - np.repeat(csc.indptr[:-1], per_col)
        rows[rank, col], values[rank, col] = csc.indices, csc.data
        rows, values = rows.reshape(-1, B, n), values.reshape(-1, B, n)
        slot = np.broadcast_to(np.arange(n), (B, n))
        aligned = P <= 1 and n == K and bool(((rows[0] == slot) | (rows[0] < 0)).all())
        return cls(rows, values, K, aligned)

    def times(self, v: np.ndarray) -> np.ndarray:
        """``Ac v`` for cell values v (B, n)."""
        if self.aligned:
            return np.ones(v.shape[0]) @ (self.values[0] * v)
        out = np.zeros(self.K)
        for r, a in zip(self.rows, self.values, strict=True):
            has = r >= 0
            out += np.bincount(r[has], weights=(a * v)[has], minlength=self.K)
        return out

    def transpose_times(self, q: np.ndarray) -> np.ndarray:
        """``Acᵀ q`` as cell values (B, n)."""
        if self.aligned:
            return self.values[0] * q
        ext = np.append(q, 0.0)
        return sum(a * ext[r] for r, a in zip(self.rows, self.values, strict=True))

    def diagonal_per_block(self, theta: np.ndarray) -> np.ndarray:
        """The diagonal of each block's ``Ac_b Θ Ac_bᵀ``: (B, K)."""
        if self.aligned:
            return self.values[0] ** 2 * theta
        B = theta.shape[0]
        out = np.zeros(B * self.K)
        base = np.arange(B)[:, None] * self.K
        for rows, values in zip(self.rows, self.values, strict=True):
            has = rows >= 0
            out += np.bincount((base + rows)[has], weights=(values * values * theta)[has], minlength=out.size)
        return out.reshape(B, self.K)

    def weighted_squares(self, weights: np.ndarray) -> np.ndarray:
        """``Σ_k Ac[k, cell]² w_k`` per cell: (B, n)."""
        ext = np.append(weights, 0.0)
        return sum(a * a * ext[r] for r, a in zip(self.rows, self.values, strict=True))

    def gram(self, theta: np.ndarray) -> np.ndarray:
        """``Ac Θ Acᵀ`` (K, K)."""
        K = self.K
        if self.aligned:
            return np.diag(np.ones(theta.shape[0]) @ (self.values[0] ** 2 * theta))
        out = np.zeros(K * K)
        for r1, a1 in zip(self.rows, self.values, strict=True):
            for r2, a2 in zip(self.rows, self.values, strict=True):
                has = (r1 >= 0) & (r2 >= 0)
                out += np.bincount((r1 * K + r2)[has], weights=(a1 * a2 * theta)[has], minlength=K * K)
        return out.reshape(K, K)

    def per_block(self, theta: np.ndarray, A: list[np.ndarray]) -> list[np.ndarray]:
        """``C_b = Ac_b Θ Ab_bᵀ`` for every block, by column: ``C[r]`` (B, K) for block row r."""
        if self.aligned:
            scaled = self.values[0] * theta
            return [scaled * a for a in A]
        B = theta.shape[0]
        out = [np.zeros(B * self.K) for _ in A]
        base = np.arange(B)[:, None] * self.K
        for rows, values in zip(self.rows, self.values, strict=True):
            has = rows >= 0
            index = (base + rows)[has]
            scaled = (values * theta)[has]
            for acc, a in zip(out, A, strict=True):
                acc += np.bincount(index, weights=scaled * a[has], minlength=acc.size)
        return [acc.reshape(B, self.K) for acc in out]


def aligned(lp):
    """``lp`` (a :class:`~optim.block_lp.BlockLP`) with each block's slot k in coupling row k where
    every cell has exactly one coupling entry, in a row of its own within its block; else ``lp``."""
    B, n = lp.col_x.shape
    K = lp.Ac.shape[0]
    coupling = Coupling.of(lp.Ac, B, n)
    pad = lp.col_x < 0
    rows = coupling.rows
    if coupling.aligned or rows.shape[0] != 1 or K > 4 * max(n, 1) or ((rows[0] < 0) != pad).any():
        return lp
    slots = np.sort(np.where(pad, K, rows[0]), axis=1)
    if ((np.diff(slots, axis=1) == 0) & (slots[:, 1:] < K)).any():
        return lp
    b, j = np.nonzero(~pad)
    k = rows[0][b, j]

    def spread(a, fill):
        out = np.full((B, K) + a.shape[2:], fill, dtype=a.dtype)
        out[b, k] = a[b, j]
        return out

    Ab = np.zeros((B, lp.Ab.shape[1], K))
    Ab[b, :, k] = lp.Ab[b, :, j]
    values = np.zeros((B, K))
    values[b, k] = coupling.values[0][b, j]
    Ac = sp.csr_matrix((values[b, k], (k, b * K + k)), shape=(K, B * K))
    return replace(lp, col_x=spread(lp.col_x, -1), cx=spread(lp.cx, 0.0), lx=spread(lp.lx, -np.inf),
                   ux=spread(lp.ux, np.inf), Ab=Ab, Ac=Ac)


class BlockOperator:
    """The block LP's matrices as per-row arrays (row r of every block: ``A[r]`` (B, n), its
    linking entries ``Y[r]`` (B, L)), read once per solve: products with them are elementwise
    passes and GEMMs, no einsum over small axes."""

    def __init__(self, lp, coupling: Coupling):
        self.A = [np.ascontiguousarray(lp.Ab[:, r, :]) for r in range(lp.Ab.shape[1])]
        self.Y = [np.ascontiguousarray(lp.Aby[:, r, :]) for r in range(lp.Aby.shape[1])]
        self.Acy = lp.Acy
        self.coupling = coupling
        self.pad = lp.col_x < 0

    def activity(self, x, y):
        """Activities of block rows (B, R), coupling rows, and the columns themselves."""
        rows = np.stack([_rowsum(a * x) + yr @ y for a, yr in zip(self.A, self.Y, strict=True)], axis=1)
        return rows, self.coupling.times(x) + self.Acy @ y, x, y

    def transpose(self, q):
        """``Gᵀ q`` for duals of block rows, coupling rows, x's and y's bounds."""
        qb, qc, qx, qy = q
        gx = self.coupling.transpose_times(qc) + qx
        gy = qc @ self.Acy + qy
        for a, yr, qr in zip(self.A, self.Y, np.ascontiguousarray(qb.T), strict=True):
            gx += a * qr[:, None]
            gy += qr @ yr
        return gx, gy

    def newton(self, weights):
        return newton_schur(self, weights)


def newton_schur(op: BlockOperator, weights):
    """The Newton solve ``g -> H⁻¹ g`` of one interior-point iteration (module doc); ``weights``:
    the barrier weights of block rows (B, R), coupling rows (K), block columns (B, n), linking
    columns (L); returns ``solve(q, rx, ry)``: ``H⁻¹ (r + Gᵀ q)``."""
    db, dc, dx, dy = weights
    A, Y, Acy, coupling, pad = op.A, op.Y, op.Acy, op.coupling, op.pad
    R, K, L = len(A), coupling.K, Acy.shape[1]
    theta = np.where(pad, 0.0, 1.0 / np.maximum(dx, REGULARIZATION))
    rinv_b = np.divide(1.0, db, out=np.full(db.shape, NO_ROW), where=db > 0)
    rinv_c = np.divide(1.0, dc, out=np.full(dc.shape, NO_ROW), where=dc > 0)
    AT = [a * theta for a in A]
    D = [[_rowsum(AT[r] * A[s]) + (rinv_b[:, r] if r == s else 0.0) for s in range(R)] for r in range(R)]
    Q, cond = _inverse(D, A, theta, rinv_b)
    C = coupling.per_block(theta, A)  # C[r] (B, K): C_b's column r
    G = [sum(C[r] * Q[r][s][:, None] for r in range(R)) for s in range(R)]  # C_b D_b⁻¹, by column
    DA = [sum(Q[r][s][:, None] * Y[s] for s in range(R)) for r in range(R)]  # D_b⁻¹ Aby_b, by row
    primal = None
    M = coupling.diagonal_per_block(theta)
    flagged = (M - sum(g * c for g, c in zip(G, C, strict=True)) < TAU * M).any(axis=1) | (cond > COND)
    if coupling.aligned and R <= 2 and flagged.any():
        primal = _ProjectedBlocks(op, np.flatnonzero(flagged), db, dx)
    stiffness = coupling.weighted_squares(dc)
    free = np.zeros(pad.shape[0], dtype=bool)
    if (theta * stiffness).max(initial=0.0) > STIFF:  # P_jj ≤ θ_j: else no block can be free
        P_diag = np.maximum(theta - theta ** 2 * sum(A[r] * A[s] * Q[r][s][:, None] for r in range(R)
                                                     for s in range(R)), 0.0)  # the row-space P_jj
        if primal:
            P_diag[primal.blocks] = np.diagonal(primal.P, axis1=1, axis2=2)
        free = (P_diag * stiffness).max(axis=1) > STIFF
    if not primal:  # without the projected form, a block that cancels is kept whole
        free |= flagged
    if free.sum() * pad.shape[1] > FREE_MAX:
        free[:] = False
    if primal and free.any():
        primal = primal.without(free[primal.blocks])
    keep = ~free
    if primal:
        keep[primal.blocks] = False
    S = np.zeros((K + L, K + L))
    every = bool(keep.all())
    S[:K, :K] = coupling.gram(theta if every else theta * keep[:, None]) + np.diag(rinv_c)
    S[:K, K:], S[K:, :K], S[K:, K:] = -Acy, Acy.T, np.diag(dy)
    for r in range(R):
        Gk, Ck, Yk, DAk = (G[r], C[r], Y[r], DA[r]) if every else (G[r][keep], C[r][keep], Y[r][keep], DA[r][keep])
        S[:K, :K] -= Gk.T @ Ck
        S[:K, K:] += Gk.T @ Yk
        S[K:, :K] -= DAk.T @ Ck
        S[K:, K:] += Yk.T @ DAk
    if primal:
        primal.add_schur(S)
    dense = _FreeBlocks(op, np.flatnonzero(free), db, dx, S) if free.any() else None
    lu = None if dense else _lu(S)

    def apply(gx, gy):
        h = [_rowsum(at * gx) for at in AT]
        t = [np.where(keep, sum(Q[r][s] * h[s] for s in range(R)), 0.0) for r in range(R)]
        coupled = coupling.times(theta * gx * keep[:, None]) - sum(tr @ c for c, tr in zip(C, t, strict=True))
        rhs = np.concatenate([coupled,
                              gy - sum(tr @ yr for yr, tr in zip(Y, t, strict=True))])
        if primal:
            primal.add_rhs(rhs, gx)
        if dense:
            wc, vy, v_free = dense.solve(rhs, gx)
        else:
            sol = _lu_solve(lu, rhs)
            wc, vy = sol[:K], sol[K:]
        u = [h[s] - C[s] @ wc + Y[s] @ vy for s in range(R)]
        vx = gx - coupling.transpose_times(wc)
        for r in range(R):
            vx -= A[r] * sum(Q[r][s] * u[s] for s in range(R))[:, None]
        vx *= theta
        if primal:
            primal.solve(vx, gx, wc, vy)
        if dense:
            vx[dense.blocks] = v_free
        return vx, vy

    def operator(vx, vy):
        """``H v`` without forming H."""
        ab, ac, _, _ = op.activity(vx, vy)
        hx, hy = op.transpose((db * ab, dc * ac, np.where(pad, 0.0, dx) * vx, dy * vy))
        return hx, hy

    def solve(q, rx, ry):
        gx, gy = op.transpose(q)
        gx = np.where(pad, 0.0, rx + gx)
        gy = ry + gy
        vx, vy = apply(gx, gy)
        hx, hy = operator(vx, vy)
        rx, ry = gx - hx, gy - hy
        scale = max(np.abs(gx).max(initial=0.0), np.abs(gy).max(initial=0.0))
        if max(np.abs(np.where(pad, 0.0, rx)).max(initial=0.0), np.abs(ry).max(initial=0.0)) > REFINE * scale:
            ex, ey = apply(rx, ry)
            vx, vy = vx + ex, vy + ey
        return np.where(pad, 0.0, vx), vy

    return solve


class _ProjectedBlocks:
    """Blocks eliminated in the projected form, free of cancellation (aligned coupling, R ≤ 2).

    Per block ``P = Θ - Θ Aᵀ D⁻¹ A Θ`` (n x n), ``u = Θ Aᵀ D⁻¹ Y`` (n x L), ``V = Yᵀ D⁻¹ Y``; the block
    adds ``cv P cv``, ``±cv u`` and V to S, ``cv P g`` and ``-uᵀ g`` to the right side, and its
    step is ``v = P (g - cv w_c) - u v_y``. With ``adj D = Jᵀ D J`` (J the quarter turn) and the 2-D
    cross products ``X_ji = a_j × a_i`` (exactly 0 for i = j), ``a_jᵀ adj(D) a_k = Σ_i θ_i X_ji X_ki +
    e0 a_j1 a_k1 + e1 a_j0 a_k0`` holds no θ_j or θ_k term, and ``P_jj = θ_j det D₋ⱼ / det D`` (D₋ⱼ:
    without cell j) with both determinants sums of nonnegative terms (Cauchy-Binet). For R = 1 the
    same holds with ``D = e + Σ θ_i a_i²``."""

    def __init__(self, op: BlockOperator, blocks, db, dx):
        self.blocks = blocks
        n = op.pad.shape[1]
        theta = np.where(op.pad[blocks], 0.0, 1.0 / np.maximum(dx[blocks], REGULARIZATION))
        d = db[blocks]
        e = np.divide(1.0, d, out=np.full(d.shape, NO_ROW), where=d > 0)
        A = [a[blocks] for a in op.A]
        Y = np.stack([y[blocks] for y in op.Y], axis=1)  # (b, R, L)
        self.cv = op.coupling.values[0][blocks]
        off = ~np.eye(n, dtype=bool)
        if len(A) == 1:
            a = A[0]
            t = theta * a * a
            det = e[:, 0] + t.sum(axis=1)
            without = e[:, 0, None] + t @ off.astype(float)  # e + Σ_{i≠j} θ_i a_i²
            N = a[:, :, None] * a[:, None, :]
            M = a[:, :, None] * Y[:, 0, None, :]  # a_j y
            V = np.einsum("bl,bm->blm", Y[:, 0], Y[:, 0])
        else:
            a0, a1 = A
            X = a0[:, :, None] * a1[:, None, :] - a1[:, :, None] * a0[:, None, :]  # X_ji = a_j × a_i
            W = theta[:, :, None] * theta[:, None, :] * X * X
            e0, e1 = e[:, 0, None], e[:, 1, None]
            s0, s1 = theta * a0 * a0, theta * a1 * a1
            det = e0[:, 0] * e1[:, 0] + e0[:, 0] * s1.sum(axis=1) + e1[:, 0] * s0.sum(axis=1) + 0.5 * W.sum(axis=(1, 2))
            without = np.empty_like(theta)
            for j in range(n):
                keep = off[j].astype(float)
                without[:, j] = (e0[:, 0] * e1[:, 0] + e0[:, 0] * (s1 @ keep) + e1[:, 0] * (s0 @ keep)
                                 + 0.5 * np.einsum("bik,i,k->b", W, keep, keep))
            N = np.einsum("bji,bi,bki->bjk", X, theta, X) + e0[:, :, None] * a1[:, :, None] * a1[:, None, :] + \
                e1[:, :, None] * a0[:, :, None] * a0[:, None, :]
            Z = Y[:, 0, None, :] * a1[:, :, None] - Y[:, 1, None, :] * a0[:, :, None]  # (y × a_i), (b, n, L)
            M = np.einsum("bji,bi,bil->bjl", X, theta, Z) + e0[:, :, None] * a1[:, :, None] * Y[:, 1, None, :] + \
                e1[:, :, None] * a0[:, :, None] * Y[:, 0, None, :]
            V = np.einsum("bil,bi,bim->blm", Z, theta, Z) + e0[:, :, None] * Y[:, 1, :, None] * Y[:, 1, None, :] + \
                e1[:, :, None] * Y[:, 0, :, None] * Y[:, 0, None, :]
        det = det[:, None, None]
        self.P = -theta[:, :, None] * theta[:, None, :] * N / det
        self.P[:, np.arange(n), np.arange(n)] = theta * without / det[:, :, 0]
        self.u = theta[:, :, None] * M / det
        self.V = V / det

    def without(self, drop: np.ndarray) -> _ProjectedBlocks | None:
        """These blocks less those where ``drop``; None if none is left."""
        if drop.all():
            return None
        out = object.__new__(_ProjectedBlocks)
        out.blocks, out.cv, out.P, out.u, out.V = (self.blocks[~drop], self.cv[~drop], self.P[~drop], self.u[~drop],
                                                   self.V[~drop])
        return out

    def add_schur(self, S):
        K = self.cv.shape[1]
        S[:K, :K] += np.einsum("bn,bnm,bm->nm", self.cv, self.P, self.cv)
        S[:K, K:] += np.einsum("bn,bnl->nl", self.cv, self.u)
        S[K:, :K] -= np.einsum("bnl,bn->ln", self.u, self.cv)
        S[K:, K:] += self.V.sum(axis=0)

    def add_rhs(self, rhs, gx):
        K = self.cv.shape[1]
        g = gx[self.blocks]
        rhs[:K] += np.einsum("bn,bnm,bm->n", self.cv, self.P, g)
        rhs[K:] -= np.einsum("bnl,bn->l", self.u, g)

    def solve(self, vx, gx, wc, vy):
        g = gx[self.blocks] - self.cv * wc[None, :]
        vx[self.blocks] = np.einsum("bnm,bm->bn", self.P, g) - self.u @ vy


class _FreeBlocks:
    """Blocks kept whole: where a block moves freely (``P`` large) along directions only stiff
    coupling rows hold (``Σ_k Ac_kj² Dc_k P_jj`` above :data:`STIFF`), eliminating it first cancels whatever
    its form. Their cells join the coupling rows' duals and the linking columns in one dense system,
    factorized by LU with partial pivoting, as the dense method factorizes all of H:

        [ H_F     U_F   E_F ] [v_F]   [g_F  ]     H_b = Dv_b + Ab_bᵀ Dr_b Ab_b,  E_b = Ab_bᵀ Dr_b Aby_b
        [-U_Fᵀ    S_cc  S_cy] [w_c] = [rhs_c]     (S and the right side: the other blocks' Schur
        [ E_Fᵀ    S_yc  S_yy] [v_y]   [rhs_y]      complement, plus Σ_F Aby_bᵀ Dr_b Aby_b in S_yy)"""

    def __init__(self, op: BlockOperator, blocks, db, dx, S):
        n, K, L = op.pad.shape[1], op.coupling.K, S.shape[0] - op.coupling.K
        F = blocks.size
        self.blocks, self.n, self.K = blocks, n, K
        d = db[blocks]
        A = [a[blocks] for a in op.A]
        Y = [y[blocks] for y in op.Y]
        H = sum(d[:, r, None, None] * A[r][:, :, None] * A[r][:, None, :] for r in range(len(A)))
        H[:, np.arange(n), np.arange(n)] += np.where(op.pad[blocks], 1.0, dx[blocks])
        N = F * n
        Z = np.zeros((N + K + L, N + K + L))
        index = np.arange(F)[:, None] * n + np.arange(n)[None, :]
        Z[index[:, :, None], index[:, None, :]] = H
        for row, value in zip(op.coupling.rows, op.coupling.values, strict=True):
            has = (row[blocks] >= 0).ravel()
            cells, coupled = index.ravel()[has], N + row[blocks].ravel()[has]
            Z[cells, coupled] = value[blocks].ravel()[has]
            Z[coupled, cells] = -value[blocks].ravel()[has]
        E = sum((d[:, r, None] * A[r])[:, :, None] * Y[r][:, None, :] for r in range(len(A)))  # (F, n, L)
        Z[:N, N + K:] = E.reshape(N, L)
        Z[N + K:, :N] = E.reshape(N, L).T
        Z[N:, N:] = S
        Z[N + K:, N + K:] += sum((Y[r] * d[:, r, None]).T @ Y[r] for r in range(len(A)))
        self.lu = _lu(Z)

    def solve(self, rhs, gx):
        """``(w_c, v_y, v_F)`` for the other blocks' right side ``rhs`` and ``gx``."""
        sol = _lu_solve(self.lu, np.concatenate([gx[self.blocks].ravel(), rhs]))
        N = self.blocks.size * self.n
        return sol[N:N + self.K], sol[N + self.K:], sol[:N].reshape(self.blocks.size, self.n)


def _det(D, A, theta, rinv):
    """Determinants of the 2 x 2 blocks ``D = A Θ Aᵀ + diag(rinv)`` by Cauchy-Binet: a sum of
    nonnegative terms, no cancellation where Θ's entries are far apart, as they are near an optimum."""
    det = rinv[:, 0] * rinv[:, 1] + rinv[:, 0] * (D[1][1] - rinv[:, 1]) + rinv[:, 1] * (D[0][0] - rinv[:, 0])
    n = A[0].shape[1]
    for j in range(n):
        for k in range(j + 1, n):
            minor = A[0][:, j] * A[1][:, k] - A[0][:, k] * A[1][:, j]
            det += theta[:, j] * theta[:, k] * minor * minor
    return det


def _inverse(D, A, theta, rinv):
    """The inverses of the blocks' ``D = A Θ Aᵀ + diag(rinv)`` (``D[r][s]`` (B,)) as ``Q[r][s]``, and
    their condition estimates ``trace² / det``: closed form for 1 x 1 and 2 x 2 (determinant by
    :func:`_det`), LU beyond."""
    R = len(D)
    if R == 1:
        return [[1.0 / D[0][0]]], np.ones(D[0][0].shape)
    if R == 2:
        det = _det(D, A, theta, rinv)
        Q = [[D[1][1] / det, -D[0][1] / det], [-D[1][0] / det, D[0][0] / det]]
        return Q, (D[0][0] + D[1][1]) ** 2 / np.maximum(det, 1e-300)
    full = np.stack([np.stack(row, axis=-1) for row in D], axis=-2)
    inv = np.linalg.inv(full)
    return [[inv[:, r, s] for s in range(R)] for r in range(R)], np.linalg.cond(full)


def _rowsum(a: np.ndarray) -> np.ndarray:
    """Row sums of a (B, n) array with n small: one GEMV, several times faster than ``sum(axis=1)``."""
    return a @ np.ones(a.shape[1])


def _lu(S: np.ndarray):
    import scipy.linalg as la

    return la.lu_factor(S, check_finite=False)


def _lu_solve(lu, rhs: np.ndarray) -> np.ndarray:
    import scipy.linalg as la

    return la.lu_solve(lu, rhs, check_finite=False)
