"""Clarabel called directly (no cvxpy): an interior-point solver for LPs and cones.

The model goes to Clarabel as :mod:`optim.backends.conic`'s conic form. An interior-point
method stops near the centre of the optimal face, so where optima are not unique it returns
an allocation inside the face, not a vertex (the published Gavel simulator's ECOS returns
another point inside it: :mod:`optim.backends.ecos`).

Duals are returned in HiGHS' convention (``reduced costs = c - A^T y``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from ..canonical import CanonicalModel
from ..options import SolveOptions
from ..result import Status
from .conic import ConicBackend, ConicForm, Solved


class ClarabelBackend(ConicBackend):
    spec = "clarabel"
    package = "clarabel"

    def version(self) -> str:
        return _version()

    def _setup(self, model: CanonicalModel, form: ConicForm, sign: float, options: SolveOptions):
        import clarabel

        settings = clarabel.DefaultSettings()
        settings.verbose = bool(options.verbose)
        if options.time_limit is not None:
            settings.time_limit = float(options.time_limit)
        if options.feasibility_tol is not None:
            settings.tol_feas = float(options.feasibility_tol)
        if options.optimality_tol is not None:
            settings.tol_gap_abs = settings.tol_gap_rel = float(options.optimality_tol)
        if options.scaling is False:
            settings.equilibrate_enable = False
        for key, value in options.raw.items():
            setattr(settings, key, value)
        A = _ListCsc(form.A.data.tolist(), form.A.indices.tolist(), form.A.indptr.tolist(), form.A.shape)
        q, b = (sign * model.c).tolist(), form.b.tolist()

        def run() -> Solved:  # Clarabel's setup (KKT structure, equilibration) is solver work
            sol = clarabel.DefaultSolver(_zero_square(model.num_vars), q, A, b, _cones(form), settings).solve()
            name = str(sol.status).split(".")[-1]
            return _STATUS.get(name, Status.ERROR), f"clarabel: {name}", sol.x, sol.z, sol.iterations

        return run


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


_STATUS = {
    "Solved": Status.OPTIMAL,
    "AlmostSolved": Status.FEASIBLE,
    "PrimalInfeasible": Status.INFEASIBLE,
    "AlmostPrimalInfeasible": Status.INFEASIBLE,
    "DualInfeasible": Status.UNBOUNDED,
    "AlmostDualInfeasible": Status.UNBOUNDED,
    "MaxTime": Status.TIME_LIMIT,
}


def _cones(form) -> list:
    """Clarabel's cone objects for the form's zero, nonnegative and second-order rows."""
    import clarabel

    cones = [clarabel.ZeroConeT(form.zero)] if form.zero else []
    if form.nonneg:
        cones.append(clarabel.NonnegativeConeT(form.nonneg))
    return cones + [clarabel.SecondOrderConeT(3)] * form.soc
