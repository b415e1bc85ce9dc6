"""Block-angular LPs with many equal blocks, and a primal-dual interior-point method that solves
them at the size of their distinct blocks.

An LP ``min c·v  s.t.  lo ≤ A v ≤ hi,  l ≤ v ≤ u`` is *block-angular* when, after setting aside a few
*linking columns* Y (columns in many rows: a max-min level z) and a few *coupling rows* (rows over
many columns: a capacity per worker type), every other row and column falls into small blocks that
share nothing: one per job in every Gavel-family program. :func:`block_structure` finds them from
the sparsity alone (a column or row with more than :data:`WIDE` entries is linking or coupling;
the blocks are the connected components of the rest) and pads the blocks to one size.

Jobs of one type, scale and weight have equal blocks (rows, bounds, costs, coupling coefficients),
and tens of thousands of jobs have a few dozen distinct ones. Equal blocks are interchangeable, so
the LP has an optimum giving them equal values, and its analytic centre does (the log barrier is
strictly concave and symmetric). :func:`aggregate` keeps one block per class of c equal blocks,
with costs and coupling coefficients times c and its own rows' and bounds' barrier terms weighted
by c: the weighted centre of that small LP is the centre of the full one, and its optimum the
optimum.

The method is Mehrotra's predictor-corrector on the inequality form ``G v ≤ h`` (each finite side
of a row or bound is one inequality with slack s > 0, dual λ > 0 and barrier weight w; centring
targets ``λ s = σ μ w``). Each Newton step solves the normal equations ``H Δv = r``,
``H = Gᵀ diag(λ / s) G``, by one dense LU factorization (at most :data:`DENSE_MAX` columns after
aggregation). Iterates follow the weighted central path towards the analytic centre of the
optimal face; Clarabel and ECOS stop at other points inside a wide face (on max-min programs of
256-4,096 jobs the allocations differ by up to 0.2-0.3 in a cell), so only the objective is
guaranteed to agree with theirs. It stops when
the primal and dual residuals and the duality gap are within ``tol`` relative to the data; the
dual objective bounds the optimum up to the dual residual, which is reported."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .block_schur import BlockOperator, Coupling
from .canonical import CanonicalModel
from .errors import CapabilityError
from .sparse import distinct_rows
from .sparse import scipy_sparse as sp

#: a row or column with more entries than this couples blocks
WIDE = 32
#: the largest block (columns) the method accepts: above it the model is not block-angular
LARGEST_BLOCK = 256
#: iterations in a row with both steps below 1e-3 after which the method stops (at its best iterate)
STALL = 3


@dataclass
class BlockLP:
    """``min sign·(c·v)`` over blocks X (B, n) and linking columns Y (L,); see module doc.
    ``col_x`` (B, n): each padded cell's column (-1: padding), ``col_y`` (L,); block rows
    ``Ab`` (B, R, n), ``Aby`` (B, R, L), bounds ``blo``, ``bhi`` (B, R) (padding: ±inf);
    coupling rows ``Ac`` (K, B·n) sparse, ``Acy`` (K, L), ``clo``, ``chi``; column bounds."""

    num_vars: int
    num_rows: int
    col_x: np.ndarray
    col_y: np.ndarray
    cx: np.ndarray
    cy: np.ndarray
    lx: np.ndarray
    ux: np.ndarray
    ly: np.ndarray
    uy: np.ndarray
    Ab: np.ndarray
    Aby: np.ndarray
    blo: np.ndarray
    bhi: np.ndarray
    Ac: sp.csr_matrix
    Acy: np.ndarray
    clo: np.ndarray
    chi: np.ndarray
    fixed_values: np.ndarray
    fixed_cost: float
    sign: float
    row_b: np.ndarray | None = None
    row_c: np.ndarray | None = None
    multiplicity: np.ndarray | None = None
    #: per original block, its class (None: blocks are not aggregated), and its columns and rows
    classes: np.ndarray | None = None
    original_col_x: np.ndarray | None = None
    original_row_b: np.ndarray | None = None

    def __post_init__(self):
        if self.multiplicity is None:
            self.multiplicity = np.ones(self.col_x.shape[0])


def block_structure(model: CanonicalModel) -> BlockLP:
    """The model as a :class:`BlockLP`, or :class:`~optim.errors.CapabilityError` when it has
    equality rows, integers, cones or no block-angular structure."""
    from scipy.sparse.csgraph import connected_components  # imported here: 0.1 s that only this backend needs

    if model.integrality.any() or model.log_terms is not None or model.hyperbolic is not None:
        raise CapabilityError("block: only linear programs")
    A = model.A.scipy().tocsr()
    lo, hi = model.row_lo.astype(float), model.row_hi.astype(float)
    if (lo == hi).any():
        raise CapabilityError("block: equality rows are not supported")
    fixed = model.col_lo == model.col_hi
    values = np.where(fixed, model.col_lo, 0.0)
    shift = A @ values
    lo, hi = lo - shift, hi - shift
    keep = np.flatnonzero(~fixed)
    A = A[:, keep].tocsr()
    A.eliminate_zeros()
    col_nnz = np.diff(A.tocsc().indptr)
    linking = col_nnz > WIDE
    rest = A[:, ~linking].tocsr()
    row_nnz = np.diff(rest.indptr)
    coupling = (row_nnz > WIDE) | (row_nnz == 0)
    inner = rest[~coupling]
    cols = inner.shape[1]
    graph = sp.bmat([[None, inner], [inner.T, None]]).tocsr() if inner.shape[0] else sp.csr_matrix((cols, cols))
    count, labels = connected_components(graph, directed=False)
    col_label = labels[inner.shape[0] :] if inner.shape[0] else np.arange(cols)
    _, col_block = np.unique(col_label, return_inverse=True)
    B = int(col_block.max()) + 1 if cols else 0
    order = np.argsort(col_block, kind="stable")
    sizes = np.bincount(col_block, minlength=B)
    n = int(sizes.max()) if B else 0
    if n > LARGEST_BLOCK:
        raise CapabilityError(f"block: no block-angular structure (a block of {n} columns)")
    slot = np.arange(cols) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    col_x = np.full((B, n), -1, dtype=np.int64)
    x_cols = keep[np.flatnonzero(~linking)]
    col_x[col_block[order], slot] = x_cols[order]
    position = np.full(A.shape[1], -1, dtype=np.int64)
    position[np.flatnonzero(~linking)[order]] = col_block[order] * n + slot
    inner_rows = np.flatnonzero(~coupling)
    first = rest[inner_rows]
    row_block = col_block[first.indices[first.indptr[:-1]]] if inner_rows.size else np.zeros(0, dtype=np.int64)
    row_sizes = np.bincount(row_block, minlength=B)
    R = int(row_sizes.max()) if inner_rows.size else 0
    row_order = np.argsort(row_block, kind="stable")
    row_slot = np.arange(inner_rows.size) - np.repeat(np.cumsum(row_sizes) - row_sizes, row_sizes)
    Ab = np.zeros((B, R, n))
    Aby = np.zeros((B, R, int(linking.sum())))
    blo, bhi = np.full((B, R), -np.inf), np.full((B, R), np.inf)
    rb, rs = row_block[row_order], row_slot
    rows_sorted = inner_rows[row_order]
    blo[rb, rs], bhi[rb, rs] = lo[rows_sorted], hi[rows_sorted]
    row_b = np.full((B, R), -1, dtype=np.int64)
    row_b[rb, rs] = rows_sorted
    block_part = A[rows_sorted][:, ~linking].tocoo()
    flat = position[np.flatnonzero(~linking)][block_part.col]
    Ab[rb[block_part.row], rs[block_part.row], flat % max(n, 1)] = block_part.data
    link_part = A[rows_sorted][:, linking].toarray()
    Aby[rb, rs] = link_part
    coupling_rows = np.flatnonzero(coupling)
    Cx = A[coupling_rows][:, ~linking].tocoo()
    Ac = sp.csr_matrix(
        (Cx.data, (Cx.row, position[np.flatnonzero(~linking)][Cx.col])), shape=(coupling_rows.size, B * n)
    )
    c = model.c[keep]
    xs = np.maximum(col_x, 0)
    pad = col_x < 0
    return BlockLP(
        num_vars=model.num_vars,
        num_rows=model.num_rows,
        col_x=col_x,
        col_y=keep[linking],
        cx=np.where(pad, 0.0, model.c[xs]),
        cy=c[linking],
        lx=np.where(pad, -np.inf, model.col_lo[xs]),
        ux=np.where(pad, np.inf, model.col_hi[xs]),
        ly=model.col_lo[keep[linking]],
        uy=model.col_hi[keep[linking]],
        Ab=Ab,
        Aby=Aby,
        blo=blo,
        bhi=bhi,
        Ac=Ac,
        Acy=A[coupling_rows][:, linking].toarray(),
        clo=lo[coupling_rows],
        chi=hi[coupling_rows],
        fixed_values=values,
        fixed_cost=float(model.c @ values),
        sign=-1.0 if model.sense == "max" else 1.0,
        row_b=row_b,
        row_c=coupling_rows,
    )


@dataclass
class _Sides:
    """One group of inequalities ``lo ≤ a ≤ hi`` (arrays of one shape): masks of the finite
    sides, slacks ``su = hi - a``, ``sl = a - lo`` and duals ``zu``, ``zl`` (1 and 0 where a side is
    absent; a side absent everywhere is the scalars 1 and 0 and costs nothing)."""

    lo: np.ndarray
    hi: np.ndarray
    w: np.ndarray | float = 1.0

    def __post_init__(self):
        self.mu, self.ml = np.isfinite(self.hi), np.isfinite(self.lo)
        self.has_u, self.has_l = bool(self.mu.any()), bool(self.ml.any())
        self.all_u, self.all_l = bool(self.mu.all()), bool(self.ml.all())
        self.hi_, self.lo_ = np.where(self.mu, self.hi, 0.0), np.where(self.ml, self.lo, 0.0)
        self.wu, self.wl = self.mu * self.w, self.ml * self.w

    def start(self, a: np.ndarray) -> None:
        self.su = np.where(self.mu, np.maximum(self.hi_ - a, 1.0), 1.0) if self.has_u else 1.0
        self.sl = np.where(self.ml, np.maximum(a - self.lo_, 1.0), 1.0) if self.has_l else 1.0
        self.zu = self.wu * 1.0 if self.has_u else 0.0
        self.zl = self.wl * 1.0 if self.has_l else 0.0

    def upper(self, v):
        """``v`` where the upper side is finite, 0 elsewhere."""
        return v if self.all_u else self.mu * v

    def lower(self, v):
        return v if self.all_l else self.ml * v

    def residual(self, a):
        """Primal residuals of both sides (0 where absent)."""
        ru = self.upper(a + self.su - self.hi_) if self.has_u else 0.0
        rl = self.lower(-a + self.sl + self.lo_) if self.has_l else 0.0
        return ru, rl

    def weight(self):
        return (self.zu / self.su if self.has_u else 0.0) + (self.zl / self.sl if self.has_l else 0.0)

    def dual(self):
        """The side duals' net effect on the dual residual: ``zu - zl``."""
        return self.zu - self.zl

    def total(self, vu, vl) -> float:
        """The sum of ``vu`` over the finite upper sides and ``vl`` over the finite lower ones."""
        up = (np.sum(vu) if self.all_u else np.sum(vu * self.mu)) if self.has_u else 0.0
        low = (np.sum(vl) if self.all_l else np.sum(vl * self.ml)) if self.has_l else 0.0
        return float(up + low)

    def complementarity(self):
        return self.total(self.zu * self.su, self.zl * self.sl)

    def count(self) -> float:
        """The sides' total barrier weight."""
        return float(np.sum(self.wu) + np.sum(self.wl))

    def rhs(self, ru, rl, cu, cl):
        """``(r_c - z r_p) / s`` for the upper side less the lower side's."""
        up = self.upper((cu - self.zu * ru) / self.su) if self.has_u else 0.0
        low = self.lower((cl - self.zl * rl) / self.sl) if self.has_l else 0.0
        return up - low

    def step(self, da, ru, rl, cu, cl):
        """Slack and dual directions for an activity change ``da``."""
        dsu = self.upper(-ru - da) if self.has_u else 0.0
        dsl = self.lower(-rl + da) if self.has_l else 0.0
        dzu = self.upper((-cu - self.zu * dsu) / self.su) if self.has_u else 0.0
        dzl = self.lower((-cl - self.zl * dsl) / self.sl) if self.has_l else 0.0
        return dsu, dsl, dzu, dzl

    def move(self, ap, ad, dsu, dsl, dzu, dzl) -> None:
        """Slacks and duals after steps ``ap`` (primal) and ``ad`` (dual)."""
        if self.has_u:
            self.su = np.where(self.mu, self.su + ap * dsu, 1.0) if not self.all_u else self.su + ap * dsu
            self.zu = np.where(self.mu, self.zu + ad * dzu, 0.0) if not self.all_u else self.zu + ad * dzu
        if self.has_l:
            self.sl = np.where(self.ml, self.sl + ap * dsl, 1.0) if not self.all_l else self.sl + ap * dsl
            self.zl = np.where(self.ml, self.zl + ad * dzl, 0.0) if not self.all_l else self.zl + ad * dzl

    def lengths(self, dsu, dsl, dzu, dzl) -> tuple[float, float]:
        """The largest primal and dual steps in [0, 1] keeping this group's slacks and duals positive."""
        ap = ad = 1.0
        for has, s, z, ds, dz in ((self.has_u, self.su, self.zu, dsu, dzu), (self.has_l, self.sl, self.zl, dsl, dzl)):
            if not has:
                continue
            ap = min(ap, _ratio(s, ds))
            ad = min(ad, _ratio(z, dz))
        return ap, ad

    def dual_objective(self) -> float:
        return self.total(-self.zu * self.hi_, self.zl * self.lo_)


def _ratio(v: np.ndarray, dv) -> float:
    """``min(-v / dv)`` over ``dv < 0`` (1 where none)."""
    dv = np.asarray(dv)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(dv < 0, -v / dv, np.inf)
    return float(min(1.0, r.min(initial=np.inf)))


@dataclass
class BlockSolution:
    """Column values of the model (fixed columns included), objective (model sense, without the
    model's offset), dual bound, residuals, iterations, whether the tolerances were met, and the
    rows' duals in the sensitivity convention (``c = Aᵀ y + reduced costs``, model sense)."""

    x: np.ndarray
    objective: float
    bound: float
    primal_residual: float
    dual_residual: float
    iterations: int
    converged: bool
    row_duals: np.ndarray | None = None


def solve_block(lp: BlockLP, tol: float = 1e-8, max_iter: int = 100) -> BlockSolution:
    """Mehrotra's predictor-corrector on ``lp`` (module doc), stopping when the relative primal and
    dual residuals and duality gap are within ``tol``; returns its best iterate."""
    B, n = lp.col_x.shape
    L = lp.col_y.size
    pad = lp.col_x < 0
    cx, cy = lp.sign * lp.cx, lp.sign * lp.cy
    x = np.where(pad, 0.0, np.clip(0.0, lp.lx, lp.ux))
    boxed = np.isfinite(lp.lx) & np.isfinite(lp.ux)
    x = np.where(boxed, (np.where(boxed, lp.lx, 0.0) + np.where(boxed, lp.ux, 0.0)) / 2, x)
    y = np.clip(np.zeros(L), lp.ly, lp.uy)
    wb = lp.multiplicity[:, None]
    groups = [
        _Sides(lp.blo, lp.bhi, wb),
        _Sides(lp.clo, lp.chi),
        _Sides(np.where(pad, -np.inf, lp.lx), np.where(pad, np.inf, lp.ux), wb),
        _Sides(lp.ly, lp.uy),
    ]
    op = BlockOperator(lp, Coupling.of(lp.Ac, B, n))
    activity, transpose = op.activity, op.transpose
    dense = lp.classes is not None and B * n + L <= DENSE_MAX

    for g, a in zip(groups, activity(x, y), strict=True):
        g.start(a)
    total = sum(g.count() for g in groups)
    scale_h = 1.0 + max((np.abs(np.concatenate([g.hi_[g.mu], g.lo_[g.ml]])).max(initial=0.0)) for g in groups)
    scale_c = 1.0 + max(np.abs(cx).max(initial=0.0), np.abs(cy).max(initial=0.0))
    converged, it, stalled, best = False, 0, 0, None
    for it in range(1, max_iter + 1):
        acts = activity(x, y)
        res = [g.residual(a) for g, a in zip(groups, acts, strict=True)]
        dx, dy = transpose([g.dual() for g in groups])
        rdx, rdy = np.where(pad, 0.0, cx + dx), cy + dy
        mu = sum(g.complementarity() for g in groups) / max(total, 1)
        pobj = float((cx * x).sum() + cy @ y)
        dobj = sum(g.dual_objective() for g in groups)
        rp = max(max(np.abs(ru).max(initial=0.0), np.abs(rl).max(initial=0.0)) for ru, rl in res)
        rd = max(np.abs(rdx).max(initial=0.0), np.abs(rdy).max(initial=0.0))
        error = max(rp / scale_h, rd / scale_c, abs(pobj - dobj) / (1.0 + abs(pobj)))
        if best is None or error < best[0]:
            best = (error, x.copy(), y.copy(), pobj, dobj, rp, rd, groups[0].dual(), groups[1].dual())
        if error <= tol:
            converged = True
            break
        if stalled >= STALL:
            break
        weights = [g.weight() * (g.mu | g.ml) for g in groups]
        solve = _newton_dense(lp, weights, pad) if dense else op.newton(weights)
        comps = [(g.zu * g.su, g.zl * g.sl) for g in groups]

        def direction(comps):
            q = [g.rhs(ru, rl, cu, cl) for g, (ru, rl), (cu, cl) in zip(groups, res, comps, strict=True)]
            vx, vy = solve(q, -rdx, -rdy)
            da = activity(vx, vy)
            return (
                vx,
                vy,
                [g.step(d, ru, rl, cu, cl) for g, d, (ru, rl), (cu, cl) in zip(groups, da, res, comps, strict=True)],
            )

        vx, vy, steps = direction(comps)
        ap, ad = _lengths(groups, steps)
        gap_aff = sum(
            g.total((g.zu + ad * dzu) * (g.su + ap * dsu), (g.zl + ad * dzl) * (g.sl + ap * dsl))
            for g, (dsu, dsl, dzu, dzl) in zip(groups, steps, strict=True)
        ) / max(total, 1)
        sigma = (gap_aff / mu) ** 3 if mu > 0 else 0.0
        comps = [
            (g.zu * g.su + dsu * dzu - sigma * mu * g.wu, g.zl * g.sl + dsl * dzl - sigma * mu * g.wl)
            for g, (dsu, dsl, dzu, dzl) in zip(groups, steps, strict=True)
        ]
        vx, vy, steps = direction(comps)
        ap, ad = _lengths(groups, steps)
        ap, ad = min(1.0, 0.99 * ap), min(1.0, 0.99 * ad)
        stalled = stalled + 1 if max(ap, ad) < 1e-3 else 0
        x, y = x + ap * vx, y + ap * vy
        for g, step in zip(groups, steps, strict=True):
            g.move(ap, ad, *step)
    _, x, y, pobj, dobj, rp, rd, yb, yc = best
    duals = np.zeros(lp.num_rows)
    rows_b = lp.row_b if lp.classes is None else lp.original_row_b
    yb = yb if lp.classes is None else yb[lp.classes] / lp.multiplicity[lp.classes, None]
    duals[rows_b[rows_b >= 0]] = -lp.sign * yb[rows_b >= 0]
    duals[lp.row_c] = -lp.sign * yc
    out = lp.fixed_values.copy()
    if lp.classes is not None:
        full = lp.original_col_x
        x = x[lp.classes]
        pad = full < 0
        out[full[~pad]] = x[~pad]
    else:
        out[lp.col_x[~pad]] = x[~pad]
    out[lp.col_y] = y
    return BlockSolution(
        out, lp.sign * pobj + lp.fixed_cost, lp.sign * dobj + lp.fixed_cost, rp, rd, it, converged, duals
    )


def _lengths(groups, steps) -> tuple[float, float]:
    """The largest primal and dual steps in [0, 1] keeping slacks and duals positive."""
    ap = ad = 1.0
    for g, step in zip(groups, steps, strict=True):
        gp, gd = g.lengths(*step)
        ap, ad = min(ap, gp), min(ad, gd)
    return ap, ad


def aggregate(lp: BlockLP) -> BlockLP:
    """``lp`` with equal blocks merged: blocks with the same data (rows, bounds, costs and coupling
    coefficients) are interchangeable, so the LP's analytic centre gives them equal values. One
    block per class stands for them: its costs and coupling coefficients times the class size,
    and its own rows and bounds with barrier weight the class size, so that the weighted centre
    of the small LP is the centre of the full one (and its optimum the optimum)."""
    B, n = lp.col_x.shape
    K = lp.Ac.shape[0]
    Acd = lp.Ac.toarray().reshape(K, B, n).transpose(1, 0, 2).reshape(B, K * n)
    pad = (lp.col_x < 0).astype(float)
    key = np.concatenate(
        [lp.Ab.reshape(B, -1), lp.Aby.reshape(B, -1), lp.blo, lp.bhi, lp.cx, lp.lx, lp.ux, pad, Acd], axis=1
    )
    key = np.where(np.isfinite(key), key, np.sign(key) * 1e308)
    first, classes, counts = distinct_rows(key)
    mult = counts.astype(float)
    rep = first
    C = rep.size
    Ac = (Acd[rep] * np.repeat(mult, K * n).reshape(C, K * n)).reshape(C, K, n).transpose(1, 0, 2).reshape(K, C * n)
    return replace(
        lp,
        col_x=lp.col_x[rep],
        cx=lp.cx[rep] * mult[:, None],
        lx=lp.lx[rep],
        ux=lp.ux[rep],
        Ab=lp.Ab[rep],
        Aby=lp.Aby[rep],
        blo=lp.blo[rep],
        bhi=lp.bhi[rep],
        Ac=sp.csr_matrix(Ac),
        row_b=lp.row_b[rep],
        multiplicity=mult,
        classes=classes.ravel(),
        original_col_x=lp.col_x,
        original_row_b=lp.row_b,
    )


#: the largest normal-equations matrix (columns) the method solves as one dense system
DENSE_MAX = 1500




def _newton_dense(lp: BlockLP, weights, pad):
    """The Newton step by the normal equations ``H = Θ + Aᵀ D A`` as one dense LU factorization:
    exact to rounding where the structured solves are not near the optimum, and cheap once equal
    blocks are merged (:func:`aggregate`: tens of classes)."""
    import scipy.linalg as la

    B, n = lp.col_x.shape
    L, K = lp.col_y.size, lp.Ac.shape[0]
    db, dc, dx, dy = weights
    N = B * n + L
    H = np.zeros((N, N))
    M = np.einsum("brn,br,brk->bnk", lp.Ab, db, lp.Ab)
    M[:, np.arange(n), np.arange(n)] += np.where(pad, 1.0, dx)
    idx = np.arange(B)[:, None, None] * n
    H[(idx + np.arange(n)[None, :, None]).repeat(n, 2), (idx + np.arange(n)[None, None, :]).repeat(n, 1)] = M
    if L:
        E = np.einsum("brn,br,brl->bnl", lp.Ab, db, lp.Aby).reshape(B * n, L)
        H[: B * n, B * n :], H[B * n :, : B * n] = E, E.T
        H[B * n :, B * n :] = np.einsum("brl,br,brk->lk", lp.Aby, db, lp.Aby) + np.diag(dy)
    if K:
        W = np.concatenate([lp.Ac.toarray(), lp.Acy], axis=1)
        H += (W.T * dc) @ W
    factor = la.lu_factor(H, check_finite=False)
    AcT = lp.Ac.T

    def solve(q, rx, ry):
        qb, qc, qx, qy = q
        gx = np.einsum("brn,br->bn", lp.Ab, qb) + (AcT @ qc).reshape(B, n) + qx
        gy = np.einsum("brl,br->l", lp.Aby, qb) + lp.Acy.T @ qc + qy
        v = la.lu_solve(factor, np.concatenate([np.where(pad, 0.0, rx + gx).ravel(), ry + gy]), check_finite=False)
        return v[: B * n].reshape(B, n), v[B * n :]

    return solve
