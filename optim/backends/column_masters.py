"""Restricted master LPs that grow by columns (the solver side of column generation).

A master starts as an LP and receives batches of new columns, each held at 0 until
solved; :meth:`ColumnMaster.solve` re-optimizes over every column so far. The generic
master re-solves the grown LP from scratch with the backend; the HiGHS master keeps one
live model: new columns enter nonbasic at 0, so the last basis stays primal feasible and
primal simplex continues from it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..canonical import CanonicalModel
from ..options import SolveOptions
from ..result import Result, Status, Timings
from ..sparse import scipy_sparse as sp
from .base import Backend, stopwatch
from .highs import PRIMAL_SIMPLEX, load_highs, read_result, run_highs


@dataclasses.dataclass(frozen=True)
class NewColumns:
    """Continuous columns for a master: ``A`` (rows × k, CSC), costs ``c`` and upper
    bounds ``hi`` (lower bounds are 0)."""

    A: sp.csc_matrix
    c: np.ndarray
    hi: np.ndarray

    def __len__(self) -> int:
        return int(self.c.shape[0])


class ColumnMaster:
    """A master LP re-solved from scratch by ``backend`` after each batch of columns."""

    def __init__(self, model: CanonicalModel, backend: Backend, options: SolveOptions):
        self.model = model
        self.backend = backend
        self.options = options

    def add(self, columns: NewColumns) -> None:
        m = self.model
        self.model = dataclasses.replace(
            m, c=np.concatenate([m.c, columns.c]), A=m.A.hstack(columns.A),
            col_lo=np.concatenate([m.col_lo, np.zeros(len(columns))]), col_hi=np.concatenate([m.col_hi, columns.hi]),
            integrality=np.concatenate([m.integrality, np.zeros(len(columns), dtype=bool)]),
        )

    def solve(self) -> Result:
        return self.backend.solve(self.model, self.options)


class HighsColumnMaster(ColumnMaster):
    """One live HiGHS model; re-solves by primal simplex from the previous basis."""

    def __init__(self, model: CanonicalModel, backend: Backend, options: SolveOptions):
        super().__init__(model, backend, options)
        timings = Timings()
        with stopwatch(timings, "translate"):
            self._highs = load_highs(model, options)
            if self._highs is not None:
                self._highs.setOptionValue("solver", "simplex")
        self._translate = timings.translate

    def add(self, columns: NewColumns) -> None:
        timings = Timings()
        with stopwatch(timings, "translate"):
            super().add(columns)
            A = columns.A
            self._highs.addCols(len(columns), columns.c, np.zeros(len(columns)), columns.hi, A.nnz,
                                A.indptr.astype(np.int32, copy=False), A.indices.astype(np.int32, copy=False), A.data)
            self._highs.setOptionValue("simplex_strategy", PRIMAL_SIMPLEX)
        self._translate += timings.translate

    def solve(self) -> Result:
        timings = Timings(translate=self._translate)
        self._translate = 0.0
        if self._highs is None:
            return Result(Status.ERROR, self.backend.spec, message="HiGHS rejected the master LP", timings=timings)
        with stopwatch(timings, "solve"):
            run_highs(self._highs)
        return read_result(self._highs, self.model, timings, self.backend.spec)
