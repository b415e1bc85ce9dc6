"""Clarabel called directly (no cvxpy): an interior-point solver for LPs and cones.

Rows ``lo <= A x <= hi`` and column bounds become Clarabel's ``A' x + s = b``, ``s`` in
a product of cones: equal bounds go to the zero cone, one-sided bounds to the
nonnegative cone, and each hyperbolic constraint ``k <= u v`` to the second-order cone
``(u + v, u - v, 2 sqrt(k))``. An interior-point method converges to the analytic centre
of the optimal face, so where optima are not unique it returns the same allocation as
the ECOS solver the published Gavel simulator used, not a vertex.

Duals are returned in HiGHS' convention (``reduced costs = c - A^T y``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..canonical import CanonicalModel
from ..capabilities import Capability
from ..options import SolveOptions
from ..result import Result, Status, Timings
from ..sparse import csc_from_triplets, transpose_times
from ..sparse import scipy_sparse as sp
from .base import Backend, stopwatch


class ClarabelBackend(Backend):
    spec = "clarabel"
    package = "clarabel"

    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.LP, Capability.SOC, Capability.DUALS})

    def version(self) -> str:
        return _version()

    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result:
        import clarabel

        timings = Timings()
        with stopwatch(timings, "translate"):
            form = _conic_form(model)
            settings = clarabel.DefaultSettings()
            settings.verbose = bool(options.verbose)
            if options.time_limit is not None:
                settings.time_limit = float(options.time_limit)
            if options.feasibility_tol is not None:
                settings.tol_feas = float(options.feasibility_tol)
            if options.optimality_tol is not None:
                settings.tol_gap_abs = settings.tol_gap_rel = float(options.optimality_tol)
            for key, value in options.raw.items():
                setattr(settings, key, value)
            n = model.num_vars
            sign = -1.0 if model.sense == "max" else 1.0
            A = _ListCsc(form.A.data.tolist(), form.A.indices.tolist(), form.A.indptr.tolist(), form.A.shape)
            q, b = (sign * model.c).tolist(), form.b.tolist()
        with stopwatch(timings, "solve"):  # Clarabel's setup (KKT structure, equilibration) is solver work
            solver = clarabel.DefaultSolver(_zero_square(n), q, A, b, form.cones, settings)
            sol = solver.solve()
        return _read_result(sol, model, form, sign, timings, self)


class _ListCsc(NamedTuple):
    """A canonical CSC matrix as Clarabel's binding reads it, in lists: it reads a numpy array
    one element at a time, a list faster."""

    data: list[float]
    indices: list[int]
    indptr: list[int]
    shape: tuple[int, int]
    has_canonical_format: bool = True


@functools.lru_cache(maxsize=64)
def _zero_square(n: int) -> _ListCsc:
    """The (n, n) zero matrix (LPs and SOCPs have no quadratic term); Clarabel only reads it."""
    return _ListCsc([], [], [0] * (n + 1), (n, n))


@functools.cache
def _version() -> str:
    import clarabel

    return clarabel.__version__


class _ConicForm:
    """Clarabel's data plus the row bookkeeping that maps its duals back."""

    def __init__(self, A, b, cones, eq_rows, up_rows, lo_rows, start_nonneg):
        self.A, self.b, self.cones = A, b, cones
        self.eq_rows, self.up_rows, self.lo_rows = eq_rows, up_rows, lo_rows
        self.start_nonneg = start_nonneg  # first row of the nonnegative cone


def _conic_form(model: CanonicalModel) -> _ConicForm:
    """One COO assembly: zero-cone rows (equalities, fixed columns), then nonnegative rows
    (upper rows, negated lower rows, negated lower and upper column bounds), then cones."""
    import clarabel

    n, m = model.num_vars, model.num_rows
    lo, hi, clo, chi = model.row_lo, model.row_hi, model.col_lo, model.col_hi
    eq = np.isfinite(lo) & (lo == hi)
    up = np.isfinite(hi) & ~eq
    lw = np.isfinite(lo) & ~eq
    fixed = np.isfinite(clo) & (clo == chi)
    cl = np.isfinite(clo) & ~fixed
    cu = np.isfinite(chi) & ~fixed
    counts = [int(np.count_nonzero(mask)) for mask in (eq, fixed, up, lw, cl, cu)]
    starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
    A = model.A
    a_rows, a_cols = A.indices, A.columns()
    rows, cols, vals = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    for mask, slot, sign in ((eq, 0, 1.0), (up, 2, 1.0), (lw, 3, -1.0)):
        if counts[slot] == m:  # every row: positions follow the rows
            rows.append(starts[slot] + a_rows)
            cols.append(a_cols)
            vals.append(sign * A.data)
        elif counts[slot]:
            pos = np.full(m, -1, dtype=np.int64)
            pos[mask] = starts[slot] + np.arange(counts[slot])
            keep = pos[a_rows] >= 0
            rows.append(pos[a_rows[keep]])
            cols.append(a_cols[keep])
            vals.append(sign * A.data[keep])
    for mask, slot, sign in ((fixed, 1, 1.0), (cl, 4, -1.0), (cu, 5, 1.0)):
        if counts[slot]:
            rows.append(starts[slot] + np.arange(counts[slot]))
            cols.append(np.flatnonzero(mask))
            vals.append(np.full(counts[slot], sign))
    b = [hi[eq], clo[fixed], hi[up], -lo[lw], -clo[cl], chi[cu]]
    cones = []
    if starts[2]:
        cones.append(clarabel.ZeroConeT(int(starts[2])))
    if starts[6] - starts[2]:
        cones.append(clarabel.NonnegativeConeT(int(starts[6] - starts[2])))
    total = int(starts[6])
    if model.hyperbolic is not None:
        h = model.hyperbolic
        U, V = h.U.tocsr(), h.V.tocsr()
        soc = sp.vstack([-(U + V), -(U - V), sp.csr_matrix((h.size, n))]).tocsr()
        order = np.arange(3 * h.size).reshape(3, h.size).T.ravel()
        soc = soc[order].tocoo()
        rows.append(total + soc.row)
        cols.append(soc.col)
        vals.append(soc.data)
        b.append(np.stack([h.u_offset + h.v_offset, h.u_offset - h.v_offset, 2.0 * np.sqrt(h.k)], axis=1).ravel())
        cones += [clarabel.SecondOrderConeT(3)] * h.size
        total += 3 * h.size
    matrix = csc_from_triplets(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), (total, n),
                               distinct=model.hyperbolic is None)
    return _ConicForm(matrix, np.concatenate(b), cones, np.flatnonzero(eq), np.flatnonzero(up), np.flatnonzero(lw),
                      starts[2])


_STATUS = {
    "Solved": Status.OPTIMAL,
    "AlmostSolved": Status.FEASIBLE,
    "PrimalInfeasible": Status.INFEASIBLE,
    "AlmostPrimalInfeasible": Status.INFEASIBLE,
    "DualInfeasible": Status.UNBOUNDED,
    "AlmostDualInfeasible": Status.UNBOUNDED,
    "MaxTime": Status.TIME_LIMIT,
}


def _read_result(sol, model: CanonicalModel, form: _ConicForm, sign: float, timings: Timings,
                 backend: ClarabelBackend) -> Result:
    name = str(sol.status).split(".")[-1]
    status = _STATUS.get(name, Status.ERROR)
    result = Result(status, backend.spec, message=f"clarabel: {name}", timings=timings,
                    solver_version=backend.version())
    result.blocks = model.blocks
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return result
    x = np.asarray(sol.x, dtype=float)
    z = np.asarray(sol.z, dtype=float)
    result.x = x
    result.objective = model.objective_value(x)
    result.iterations = int(sol.iterations)
    y = np.zeros(model.num_rows)
    k_eq, k_up, start_nonneg = form.eq_rows.size, form.up_rows.size, form.start_nonneg
    y[form.eq_rows] = -z[:k_eq]
    y[form.up_rows] -= z[start_nonneg:start_nonneg + k_up]
    y[form.lo_rows] += z[start_nonneg + k_up:start_nonneg + k_up + form.lo_rows.size]
    result.row_duals = sign * y
    result.reduced_costs = model.c - transpose_times(model.A, result.row_duals)
    if status is Status.OPTIMAL:
        result.bound = result.objective
    return result
