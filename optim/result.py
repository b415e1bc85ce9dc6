"""The outcome of a solve: status, values, duals, bound and timings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from .canonical import VarBlock
from .errors import LicenseLimitError, NoSolutionError, SolverFailedError


class Status(str, Enum):
    """Why the solve stopped, and so what the values mean.

    OPTIMAL: proven optimal within the solver's tolerances (for log terms handled by
    tangent cuts: within ``SolveOptions.log_gap``). FEASIBLE: a feasible point with a
    reported gap (MIP gap or cut gap not closed). TIME_LIMIT: stopped by the time limit;
    ``x`` holds the incumbent when there is one. The others carry no solution.
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    TIME_LIMIT = "time_limit"
    LICENSE_LIMIT = "license_limit"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


@dataclass
class Timings:
    """Seconds spent building the model, translating it for the backend, and solving."""

    build: float = 0.0
    translate: float = 0.0
    solve: float = 0.0

    @property
    def total(self) -> float:
        return self.build + self.translate + self.solve


@dataclass
class Result:
    """A backend's answer, in the model's own sense and units.

    ``objective`` includes the constant and any log terms. ``bound`` is the best proven
    bound (dual bound for LPs, MIP bound, cut-loop upper bound); ``gap`` is
    ``|bound - objective| / max(1, |objective|)``.

    Duals follow the sensitivity convention for the model as posed:
    ``c = A.T @ row_duals + reduced_costs``, so ``row_duals[i]`` is the rate of change of
    the optimal objective per unit of relaxation of row i's binding side.
    """

    status: Status
    backend: str
    objective: float | None = None
    bound: float | None = None
    x: np.ndarray | None = None
    row_duals: np.ndarray | None = None
    reduced_costs: np.ndarray | None = None
    message: str = ""
    solver_version: str = ""
    timings: Timings = field(default_factory=Timings)
    notes: list[str] = field(default_factory=list)
    iterations: int | None = None
    blocks: Mapping[str, VarBlock] = field(default_factory=dict)
    #: solved by a first-order method: rows hold to its tolerance, duals are approximate
    first_order: bool = False

    @property
    def has_solution(self) -> bool:
        return self.x is not None

    @property
    def gap(self) -> float | None:
        if self.objective is None or self.bound is None:
            return None
        return abs(self.bound - self.objective) / max(1.0, abs(self.objective))

    def value(self, name: str) -> np.ndarray:
        """Values of variable block ``name`` in its own shape."""
        if self.x is None:
            raise NoSolutionError(f"{self.backend}: no solution ({self.status}): {self.message}")
        block = self.blocks[name]
        return self.x[block.columns].reshape(block.shape)

    def raise_for_status(self) -> Result:
        """Raise for a license refusal or a solver error; otherwise return self."""
        if self.status is Status.LICENSE_LIMIT:
            raise LicenseLimitError(self.message)
        if self.status is Status.ERROR:
            raise SolverFailedError(f"{self.backend}: {self.message}")
        return self
