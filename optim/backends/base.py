"""The contract every backend adapter implements."""

from __future__ import annotations

import functools
import importlib.util
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager

import numpy as np

from ..canonical import CanonicalModel
from ..capabilities import Capability
from ..delta import ModelDelta
from ..errors import CapabilityError
from ..options import SolveOptions
from ..result import Result


@functools.cache
def installed(package: str) -> bool:
    """``package`` can be imported (looked up once a process: a look-up costs 25 us, and
    ``get_backend`` runs one on every solve given a backend's name)."""
    return importlib.util.find_spec(package) is not None


class Backend(ABC):
    """A thin adapter from :class:`CanonicalModel` to one solver.

    ``solve`` only receives models whose required capabilities the backend has; it
    fills ``Result.timings.translate`` and ``.solve`` and never raises for a solver
    failure: failures come back as a status with the solver's text in ``message``.
    """

    #: the spec users type: "highs", "cvxpy:CLARABEL", "pyomo:highs"
    spec: str
    #: size limits of the license in force, in words, or "" when none are known
    license_limits: str = ""
    #: a first-order method: solutions meet the rows only to ~1e-5 and its duals
    #: certify nothing (SCS, OSQP)
    first_order: bool = False

    @abstractmethod
    def capabilities(self) -> frozenset[Capability]: ...

    #: the Python package the adapter imports (for availability checks)
    package: str = ""

    def is_available(self) -> bool:
        return installed(self.package)

    @abstractmethod
    def version(self) -> str: ...

    @abstractmethod
    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result: ...

    def live(self, options: SolveOptions) -> LiveModel:
        """A solver model kept between solves (backends with ``Capability.INCREMENTAL``)."""
        raise CapabilityError(f"{self.spec} keeps no live model: it has no incremental re-solve")

    def missing_reason(self) -> str:
        """Why the backend is unavailable (only meaningful when it is)."""
        return f"{self.package} is not installed (pip install {self.package})"

    def __repr__(self) -> str:
        return f"<backend {self.spec}>"


class LiveModel(ABC):
    """One LP held in a solver between solves: loaded whole, then changed by deltas.

    Both methods return the result in the given model's own column and row order and
    fill ``timings.translate`` (loading / applying the delta) and ``timings.solve``.
    """

    #: the model held (None before a load, or after the solver refused one or an update)
    model: CanonicalModel | None = None

    @property
    def num_inert(self) -> int:
        """Rows and columns held that the model no longer has (kept inert, not deleted)."""
        return 0

    @abstractmethod
    def load(self, model: CanonicalModel) -> Result:
        """Replace whatever is held by ``model`` and solve it cold."""

    @abstractmethod
    def update(self, delta: ModelDelta, model: CanonicalModel) -> Result:
        """Turn the held model into ``model`` by ``delta`` (from the held model to ``model``)
        and re-solve from the held basis."""


@contextmanager
def stopwatch(timings, attr: str):
    """Add the wall time of the block to ``timings.<attr>``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        setattr(timings, attr, getattr(timings, attr) + time.perf_counter() - t0)


def split_rows(model: CanonicalModel):
    """One-sided rows for backends without ranged rows.

    Returns ``(index, sense, rhs)``: original row index, "=", "<" or ">" and right-hand
    side of each one-sided row. A ranged row with two finite, distinct sides yields two.
    """
    return one_sided(model.row_lo, model.row_hi)


def one_sided(lo: np.ndarray, hi: np.ndarray):
    """:func:`split_rows` of rows with sides ``lo <= a x <= hi`` (free rows yield none)."""
    eq = lo == hi
    le = ~eq & np.isfinite(hi)
    ge = ~eq & np.isfinite(lo)
    idx_eq, idx_le, idx_ge = np.flatnonzero(eq), np.flatnonzero(le), np.flatnonzero(ge)
    index = np.concatenate([idx_eq, idx_le, idx_ge])
    sense = np.array(["="] * idx_eq.size + ["<"] * idx_le.size + [">"] * idx_ge.size, dtype="<U1")
    rhs = np.concatenate([lo[idx_eq], hi[idx_le], lo[idx_ge]])
    return index, sense, rhs
