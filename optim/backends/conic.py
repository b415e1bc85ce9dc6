"""The canonical model as a conic program, for the interior-point adapters (Clarabel, ECOS).

Rows ``lo <= A x <= hi`` and column bounds become ``A' x + s = b`` with ``s`` in a product of
cones, in this order: the zero cone (equal bounds: equality rows, fixed columns), the
nonnegative cone (upper rows, negated lower rows, negated lower and upper column bounds), then
one second-order cone ``(u + v, u - v, 2 sqrt(k))`` per hyperbolic constraint ``k <= u v``.
Both solvers minimize ``q . x`` and return the cone duals ``z`` with ``q + A'^T z = 0``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable

import numpy as np

from ..canonical import CanonicalModel
from ..capabilities import Capability
from ..options import SolveOptions
from ..result import Result, Status, Timings
from ..sparse import csc_from_triplets, transpose_times
from .base import Backend, stopwatch

#: what a conic adapter's run returns: status, message, x, cone duals z, iterations
Solved = tuple[Status, str, object, object, int]


class ConicBackend(Backend):
    """An interior-point solver that reads :func:`conic_form`: LPs and second-order cones, with duals.

    An adapter turns the form into its solver's call (:meth:`_setup`, timed as the translation)
    and returns that call, which runs the solver (timed as the solve); :meth:`solve` does the rest."""

    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.LP, Capability.SOC, Capability.DUALS})

    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result:
        timings = Timings()
        sign = -1.0 if model.sense == "max" else 1.0  # the solvers minimize: a maximum goes in as -c
        with stopwatch(timings, "translate"):
            form = conic_form(model)
            run = self._setup(model, form, sign, options)
        with stopwatch(timings, "solve"):
            status, message, x, z, iterations = run()
        return conic_result(status, message, x, z, iterations, model, form, sign, timings, self.spec, self.version())

    @abstractmethod
    def _setup(self, model: CanonicalModel, form: ConicForm, sign: float,
               options: SolveOptions) -> Callable[[], Solved]: ...


class ConicForm:
    """The conic data (``A``, ``b``; ``zero``, ``nonneg`` rows and ``soc`` cones of size 3, in
    that order) plus the row bookkeeping that maps the duals back to the model's rows."""

    def __init__(self, A, b, zero: int, nonneg: int, soc: int, eq_rows, up_rows, lo_rows):
        self.A, self.b = A, b
        self.zero, self.nonneg, self.soc = zero, nonneg, soc
        self.eq_rows, self.up_rows, self.lo_rows = eq_rows, up_rows, lo_rows


def conic_form(model: CanonicalModel) -> ConicForm:
    """One COO assembly of the rows in the order of the module docstring."""
    n, m = model.num_vars, model.num_rows
    lo, hi, clo, chi = model.row_lo, model.row_hi, model.col_lo, model.col_hi
    if (model.hyperbolic is None and (lo == -np.inf).all() and np.isfinite(hi).all() and (clo == -np.inf).all()
            and (chi == np.inf).all()):  # A x <= hi over free columns: A itself
        return ConicForm(model.A, hi.copy(), 0, m, 0, _NONE, np.arange(m), _NONE)
    eq = np.isfinite(lo) & (lo == hi)
    up = np.isfinite(hi) & ~eq
    lw = np.isfinite(lo) & ~eq
    fixed = np.isfinite(clo) & (clo == chi)
    cl = np.isfinite(clo) & ~fixed
    cu = np.isfinite(chi) & ~fixed
    counts = [int(np.count_nonzero(mask)) for mask in (eq, fixed, up, lw, cl, cu)]
    A = model.A
    starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
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
    total, soc = int(starts[6]), 0
    if model.hyperbolic is not None:
        h = model.hyperbolic
        U, V = h.U.tocoo(), h.V.tocoo()  # cone i's rows 3i, 3i + 1, 3i + 2: -(u + v), -(u - v), 0 (summed below)
        rows.append(total + np.concatenate([3 * U.row, 3 * V.row, 3 * U.row + 1, 3 * V.row + 1]))
        cols.append(np.concatenate([U.col, V.col, U.col, V.col]))
        vals.append(np.concatenate([-U.data, -V.data, -U.data, V.data]))
        b.append(np.stack([h.u_offset + h.v_offset, h.u_offset - h.v_offset, 2.0 * np.sqrt(h.k)], axis=1).ravel())
        soc = h.size
        total += 3 * h.size
    matrix = csc_from_triplets(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), (total, n),
                               distinct=model.hyperbolic is None)
    return ConicForm(matrix, np.concatenate(b), int(starts[2]), int(starts[6] - starts[2]), soc,
                     np.flatnonzero(eq), np.flatnonzero(up), np.flatnonzero(lw))


_NONE = np.zeros(0, dtype=np.int64)


def conic_result(status: Status, message: str, x, z, iterations: int, model: CanonicalModel, form: ConicForm,
                 sign: float, timings: Timings, spec: str, version: str) -> Result:
    """The :class:`Result` of a solved conic form: ``x`` and the cone duals ``z`` (read only when the
    status has a solution); ``sign`` is -1 where the model maximizes (the solver minimized ``-c``).
    Row duals come back in HiGHS' convention (``reduced costs = c - A^T y``)."""
    result = Result(status, spec, message=message, timings=timings, solver_version=version)
    result.blocks = model.blocks
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return result
    x = np.asarray(x, dtype=float)
    z = np.asarray(z, dtype=float)
    result.x = x
    result.objective = model.objective_value(x)
    result.iterations = int(iterations)
    y = np.zeros(model.num_rows)
    k_eq, k_up, start = form.eq_rows.size, form.up_rows.size, form.zero
    y[form.eq_rows] = -z[:k_eq]
    y[form.up_rows] -= z[start:start + k_up]
    y[form.lo_rows] += z[start + k_up:start + k_up + form.lo_rows.size]
    result.row_duals = sign * y
    result.reduced_costs = model.c - transpose_times(model.A, result.row_duals)
    if status is Status.OPTIMAL:
        result.bound = result.objective
    return result
