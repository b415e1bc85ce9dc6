"""Backend registry: turn a solver spec ("highs", "cvxpy:SCS", "pyomo:gurobi") into an adapter."""

from __future__ import annotations

from ..errors import BackendUnavailableError, UnknownBackendError
from .base import Backend
from .block import BlockBackend
from .clarabel import ClarabelBackend
from .cvxpy import CvxpyBackend
from .ecos import EcosBackend
from .gurobi import GurobiBackend
from .highs import HighsBackend
from .pyomo import _SOLVERS as PYOMO_SOLVERS
from .pyomo import PyomoBackend

#: cvxpy inner solvers listed by `schedopt solvers` even when not installed
CVXPY_SOLVERS = ("CLARABEL", "SCS", "ECOS", "HIGHS", "GUROBI", "SCIPY", "OSQP", "MOSEK")


def _cvxpy_solver_names() -> list[str]:
    names = list(CVXPY_SOLVERS)
    try:
        import cvxpy as cp

        names += [s for s in cp.installed_solvers() if s not in names]
    except ImportError:
        pass
    return names


def parse_spec(spec: str) -> Backend:
    """The adapter for ``spec`` (available or not); unknown names raise."""
    text = spec.strip()
    family, _, inner = text.partition(":")
    family = family.lower()
    if family == "highs" and not inner:
        return HighsBackend()
    if family == "gurobi" and not inner:
        return GurobiBackend()
    if family == "clarabel" and not inner:
        return ClarabelBackend()
    if family == "block" and inner.lower() in ("", "auto", "ipm"):
        return BlockBackend(auto=inner.lower() == "auto", ipm=inner.lower() == "ipm")
    if family == "ecos" and not inner:
        return EcosBackend()
    if family == "cvxpy":
        inner = (inner or "CLARABEL").upper()
        if inner not in _cvxpy_solver_names():
            raise UnknownBackendError(
                f"unknown cvxpy solver {inner!r} in {spec!r}; known: {', '.join(_cvxpy_solver_names())}"
            )
        return CvxpyBackend(inner)
    if family == "pyomo":
        inner = (inner or "highs").lower()
        if inner not in PYOMO_SOLVERS:
            raise UnknownBackendError(
                f"unknown pyomo solver {inner!r} in {spec!r}; known: {', '.join(sorted(PYOMO_SOLVERS))}"
            )
        return PyomoBackend(inner)
    raise UnknownBackendError(
        f"unknown solver {spec!r}; use highs, clarabel, ecos, block, gurobi, cvxpy[:SOLVER] or pyomo[:highs|gurobi]"
    )


def get_backend(spec: str) -> Backend:
    """The adapter for ``spec``; raises when it is unknown or not installed."""
    backend = parse_spec(spec)
    if not backend.is_available():
        raise BackendUnavailableError(f"solver {backend.spec}: {backend.missing_reason()}")
    return backend


def all_backends() -> list[Backend]:
    """Every adapter schedopt knows, installed or not (for listings)."""
    backends: list[Backend] = [HighsBackend(), ClarabelBackend(), EcosBackend(), BlockBackend(), GurobiBackend()]
    backends += [CvxpyBackend(name) for name in _cvxpy_solver_names()]
    backends += [PyomoBackend(name) for name in PYOMO_SOLVERS]
    return backends


def available_backends() -> list[Backend]:
    return [b for b in all_backends() if b.is_available()]


__all__ = ["Backend", "all_backends", "available_backends", "get_backend", "parse_spec"]
