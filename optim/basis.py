"""A starting basis for an LP's simplex method, solver-neutral (MathOpt's ``initial_basis``).

Every column and every row of a canonical model is basic or nonbasic at one of its bounds:
``LOWER``, ``BASIC`` or ``UPPER`` (a row's bounds are its sides ``row_lo``, ``row_hi``; a free
column nonbasic at ``LOWER`` sits at 0). A basis has as many basic entries as the model has
rows. ``SolveOptions.basis`` hands one to a vertex backend (``Capability.VERTEX``: HiGHS,
Gurobi), whose simplex method starts there instead of at the all-slack basis: a good guess
leaves it a few pivots. It moves no optimum, but where the optimum is not unique it can move
the vertex returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .canonical import CanonicalModel
from .errors import ModelError

LOWER, BASIC, UPPER = 0, 1, 2


@dataclass(frozen=True, eq=False)
class Basis:
    """``columns`` (num_vars,) and ``rows`` (num_rows,): each entry's status, as int8 (compared by
    identity: options holding one stay comparable)."""

    columns: np.ndarray
    rows: np.ndarray

    def check(self, model: CanonicalModel) -> None:
        """Raise :class:`ModelError` unless this is a basis of ``model``'s shape."""
        if self.columns.shape != (model.num_vars,) or self.rows.shape != (model.num_rows,):
            raise ModelError(f"a basis of {self.columns.size} columns and {self.rows.size} rows for "
                             f"{model.name!r}, which has {model.num_vars} and {model.num_rows}")
        basic = int(np.count_nonzero(self.columns == BASIC) + np.count_nonzero(self.rows == BASIC))
        if basic != model.num_rows:
            raise ModelError(f"a basis of {model.name!r} needs {model.num_rows} basic entries, not {basic}")
