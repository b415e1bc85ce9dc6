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

(``h_b = Ab_b Θ g_x``): positive definite diagonal blocks, so LU solves it. This is block
Gaussian elimination in the order a sparse Cholesky factorization of the row-space normal
equations takes (dense coupling rows last), so the steps are as accurate as a Cholesky-based
interior-point method's; one step of iterative refinement on ``H`` (matrix-free) follows. Every
sum over blocks is one pass over (blocks, R, slots) arrays or one GEMM of K x (blocks R) panels:
O(B n R + B K R²) per step, nothing quadratic in B.

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
#: a block whose D-form Schur contribution cancels below this fraction of its terms, or whose D_b
#: is worse conditioned than :data:`COND`, is eliminated in the primal form (module doc)
TAU = 1e-3
COND = 1e8


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
            return (self.values[0] * v).sum(axis=0)
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

    def gram(self, theta: np.ndarray) -> np.ndarray:
        """``Ac Θ Acᵀ`` (K, K)."""
        K = self.K
        if self.aligned:
            return np.diag((self.values[0] ** 2 * theta).sum(axis=0))
        out = np.zeros(K * K)
        for r1, a1 in zip(self.rows, self.values, strict=True):
            for r2, a2 in zip(self.rows, self.values, strict=True):
                has = (r1 >= 0) & (r2 >= 0)
                out += np.bincount((r1 * K + r2)[has], weights=(a1 * a2 * theta)[has], minlength=K * K)
        return out.reshape(K, K)

    def gram_per_block(self, theta: np.ndarray) -> np.ndarray:
        """The diagonal of each block's ``Ac_b Θ Ac_bᵀ`` (aligned coupling): (B, K)."""
        return self.values[0] ** 2 * theta

    def per_block(self, theta: np.ndarray, Ab: np.ndarray) -> np.ndarray:
        """``C_b = Ac_b Θ Ab_bᵀ`` for every block: (B, K, R)."""
        B, R, n = Ab.shape
        if self.aligned:
            return (self.values[0] * theta)[:, :, None] * Ab.transpose(0, 2, 1)
        out = np.zeros(B * self.K * R)
        base = np.arange(B)[:, None] * self.K
        for r, a in zip(self.rows, self.values, strict=True):
            has = r >= 0
            index = (base + r)[has] * R
            scaled = (a * theta)[has]
            for k in range(R):
                out += np.bincount(index + k, weights=scaled * Ab[:, k, :][has], minlength=out.size)
        return out.reshape(B, self.K, R)


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


def newton_schur(lp, weights, pad, coupling: Coupling):
    """The Newton solve ``g -> H⁻¹ g`` of one interior-point iteration (module doc); ``weights``:
    the barrier weights of block rows (B, R), coupling rows (K), block columns (B, n), linking
    columns (L); returns ``solve(q, rx, ry)`` with the contract of the dense solve in
    :mod:`optim.block_lp`."""
    db, dc, dx, dy = weights
    Ab, Aby, Acy = lp.Ab, lp.Aby, lp.Acy
    B, R, n = Ab.shape
    K, L = coupling.K, Aby.shape[2]
    theta = np.where(pad, 0.0, 1.0 / np.maximum(dx, REGULARIZATION))
    rinv_b = np.divide(1.0, db, out=np.full(db.shape, NO_ROW), where=db > 0)
    rinv_c = np.divide(1.0, dc, out=np.full(dc.shape, NO_ROW), where=dc > 0)
    AT = Ab * theta[:, None, :]
    D = np.einsum("brn,bsn->brs", AT, Ab)
    D[:, np.arange(R), np.arange(R)] += rinv_b
    Dinv = _inverse(D, Ab, theta, rinv_b)
    C = coupling.per_block(theta, Ab)  # (B, K, R)
    G = np.einsum("bkr,brs->bks", C, Dinv)  # C_b D_b⁻¹
    M = coupling.gram_per_block(theta) if coupling.aligned else None
    reduced = np.einsum("bks,bks->bk", G, C)
    hform = np.zeros(B, dtype=bool)
    if coupling.aligned:
        cond = np.einsum("brr->b", D) ** 2 / np.maximum(np.abs(np.linalg.det(D)) if R > 2 else _det(D, Ab, theta, rinv_b), 1e-300)
        hform = ((M - reduced) < TAU * M).any(axis=1) | (cond > COND)
    dform = ~hform
    S = np.zeros((K + L, K + L))
    S[:K, :K] = coupling.gram(theta * dform[:, None]) + np.diag(rinv_c) - \
        G[dform].transpose(1, 0, 2).reshape(K, -1) @ C[dform].transpose(1, 0, 2).reshape(K, -1).T
    DA = np.einsum("brs,bsl->brl", Dinv, Aby)  # D_b⁻¹ Aby_b
    if L:
        S[:K, K:] = np.einsum("bkr,brl->kl", G[dform], Aby[dform]) - Acy
        S[K:, :K] = Acy.T - np.einsum("brl,bkr->lk", DA[dform], C[dform])
        S[K:, K:] = np.diag(dy) + np.einsum("brl,brm->lm", Aby[dform], DA[dform])
    hb = np.flatnonzero(hform)
    if hb.size:
        Ah, drh, cv = Ab[hb], db[hb], coupling.values[0][hb]
        Hb = np.einsum("brn,br,brm->bnm", Ah, drh, Ah)
        Hb[:, np.arange(n), np.arange(n)] += np.where(pad[hb], 1.0, np.maximum(dx[hb], REGULARIZATION))
        Hinv = np.linalg.inv(Hb)
        E = np.einsum("brn,br,brl->bnl", Ah, drh, Aby[hb])
        HE = np.einsum("bnm,bml->bnl", Hinv, E)
        S[:K, :K] += np.einsum("bn,bnm,bm->nm", cv, Hinv, cv)
        if L:
            S[:K, K:] += np.einsum("bn,bnl->nl", cv, HE)
            S[K:, :K] -= np.einsum("bnl,bn->ln", HE, cv)
            S[K:, K:] += np.einsum("brl,br,brm->lm", Aby[hb], drh, Aby[hb]) - np.einsum("bnl,bnm->lm", E, HE)
    lu = _lu(S)

    def apply(gx, gy):
        h = np.einsum("brn,bn->br", AT, gx)
        t = np.einsum("brs,bs->br", Dinv, h)
        t[hform] = 0.0
        rhs = np.concatenate([coupling.times(theta * gx * dform[:, None]) - np.einsum("bkr,br->k", C, t),
                              gy - np.einsum("brl,br->l", Aby, t)])
        if hb.size:
            Hg = np.einsum("bnm,bm->bn", Hinv, gx[hb])
            rhs[:K] += (cv * Hg).sum(axis=0)
            rhs[K:] -= np.einsum("bnl,bn->l", E, Hg)
        sol = _lu_solve(lu, rhs)
        wc, vy = sol[:K], sol[K:]
        wb = np.einsum("brs,bs->br", Dinv, h - np.einsum("bkr,k->br", C, wc) + Aby @ vy)
        vx = theta * (gx - np.einsum("brn,br->bn", Ab, wb) - coupling.transpose_times(wc))
        if hb.size:
            vx[hb] = np.einsum("bnm,bm->bn", Hinv, gx[hb] - cv * wc[None, :] - E @ vy)
        return vx, vy

    def operator(vx, vy):
        """``H v`` without forming H."""
        ab = np.einsum("brn,bn->br", Ab, vx) + Aby @ vy
        ac = coupling.times(vx) + Acy @ vy
        hx = np.einsum("brn,br->bn", Ab, db * ab) + coupling.transpose_times(dc * ac) + np.where(pad, 0.0, dx) * vx
        hy = np.einsum("brl,br->l", Aby, db * ab) + Acy.T @ (dc * ac) + dy * vy
        return hx, hy

    def solve(q, rx, ry):
        qb, qc, qx, qy = q
        gx = np.where(pad, 0.0, rx + np.einsum("brn,br->bn", Ab, qb) + coupling.transpose_times(qc) + qx)
        gy = ry + np.einsum("brl,br->l", Aby, qb) + Acy.T @ qc + qy
        vx, vy = apply(gx, gy)
        hx, hy = operator(vx, vy)
        ex, ey = apply(gx - hx, gy - hy)
        return np.where(pad, 0.0, vx + ex), vy + ey

    return solve


def _det(D, A, theta, rinv):
    """Determinants of the 1 x 1 or 2 x 2 blocks ``D = A Θ Aᵀ + diag(rinv)``, the 2 x 2 ones by
    Cauchy-Binet (a sum of nonnegative terms: no cancellation where Θ's entries are far apart, as
    they are near an optimum)."""
    if D.shape[1] == 1:
        return D[:, 0, 0]
    det = rinv[:, 0] * rinv[:, 1] + rinv[:, 0] * (D[:, 1, 1] - rinv[:, 1]) + rinv[:, 1] * (D[:, 0, 0] - rinv[:, 0])
    n = A.shape[2]
    for j in range(n):
        for k in range(j + 1, n):
            minor = A[:, 0, j] * A[:, 1, k] - A[:, 0, k] * A[:, 1, j]
            det += theta[:, j] * theta[:, k] * minor * minor
    return det


def _inverse(D: np.ndarray, A: np.ndarray, theta: np.ndarray, rinv: np.ndarray) -> np.ndarray:
    """The inverses of the blocks' ``D = A Θ Aᵀ + diag(rinv)``: closed form for 1 x 1 and 2 x 2
    (determinant by :func:`_det`)."""
    R = D.shape[1]
    if R == 1:
        return 1.0 / D
    if R == 2:
        det = _det(D, A, theta, rinv)
        out = np.empty_like(D)
        out[:, 0, 0], out[:, 1, 1] = D[:, 1, 1] / det, D[:, 0, 0] / det
        out[:, 0, 1] = out[:, 1, 0] = -D[:, 0, 1] / det
        return out
    return np.linalg.inv(D)


def _lu(S: np.ndarray):
    import scipy.linalg as la

    return la.lu_factor(S, check_finite=False)


def _lu_solve(lu, rhs: np.ndarray) -> np.ndarray:
    import scipy.linalg as la

    return la.lu_solve(lu, rhs, check_finite=False)
