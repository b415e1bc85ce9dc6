"""LP optimality certificates from row duals, independent of the solver's own claims.

For any row multipliers ``y`` (sensitivity convention, see :class:`optim.Result`), weak
duality gives a bound on the LP optimum: with ``r = c - A.T y``,

    max problems:  c.x <= sum_i (y_i > 0 ? y_i hi_i : y_i lo_i) + sum_j (r_j > 0 ? r_j u_j : r_j l_j)

(and the mirror image for min problems). Multipliers on an infinite side contribute an
infinite bound, so only ``y`` of the right signs certify anything.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .canonical import CanonicalModel
from .sparse import transpose_times


@dataclass(frozen=True)
class Certificate:
    primal: float
    dual_bound: float

    @property
    def gap(self) -> float:
        """Relative primal-dual gap ``|bound - primal| / max(1, |primal|)``."""
        return abs(self.dual_bound - self.primal) / max(1.0, abs(self.primal))


def _side_sum(mult: np.ndarray, lo: np.ndarray, hi: np.ndarray, upper: bool) -> float:
    """sum of mult * (hi where mult pushes up, lo where it pushes down)."""
    pos, neg = mult > 0, mult < 0
    first, second = (hi, lo) if upper else (lo, hi)
    with np.errstate(invalid="ignore"):
        total = float(np.sum(mult[pos] * first[pos]) + np.sum(mult[neg] * second[neg]))
    return total if np.isfinite(total) else (np.inf if upper else -np.inf)


def lp_dual_bound(model: CanonicalModel, row_duals: np.ndarray, zero_tol: float = 1e-6) -> float:
    """The weak-duality bound that ``row_duals`` prove for the LP ``model``.

    Multipliers and reduced costs below ``zero_tol`` times the objective's scale
    (``max(1, max |c|)``) in magnitude are taken as 0: solvers stop at optimality tolerances of
    about 1e-6 relative (Gurobi, HiGHS; interior-point ones nearer 1e-8 of the largest cost), and
    a reduced cost of 1e-7 with the wrong sign on a column without upper bound would make the
    bound infinite.
    """
    upper = model.sense == "max"
    tol = zero_tol * max(1.0, float(np.abs(model.c).max(initial=0.0)))
    y = np.where(np.abs(row_duals) <= tol, 0.0, row_duals)
    r = model.c - transpose_times(model.A, y)
    r = np.where(np.abs(r) <= tol, 0.0, r)
    return (
        model.offset
        + _side_sum(y, model.row_lo, model.row_hi, upper)
        + _side_sum(r, model.col_lo, model.col_hi, upper)
    )


def lp_certificate(model: CanonicalModel, x: np.ndarray, row_duals: np.ndarray) -> Certificate:
    """Primal objective at ``x`` and the dual bound of ``row_duals``."""
    if model.log_terms is not None or model.is_mip or model.hyperbolic is not None:
        raise ValueError("an LP certificate needs a pure LP (no integers, no log terms, no cones)")
    return Certificate(model.objective_value(x), lp_dual_bound(model, row_duals))
