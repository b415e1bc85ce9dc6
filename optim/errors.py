"""Exceptions raised by the optimization layer.

Every error carries a one-line message meant for the end user: it names the backend
and, where it helps, what to do instead.
"""


class OptimError(Exception):
    """Base class of every error raised by :mod:`optim`."""


class ModelError(OptimError, ValueError):
    """The model is malformed (shapes, bounds, a non-concave log term, ...)."""


class UnknownBackendError(OptimError, ValueError):
    """A solver spec names no known backend or inner solver."""


class BackendUnavailableError(OptimError):
    """The backend's Python package (or its inner solver) is not installed."""


class CapabilityError(OptimError):
    """The backend lacks a capability the model needs (MILP, log cone, ...)."""


class LicenseLimitError(OptimError):
    """The solver's license refuses the model (e.g. the size-limited pip gurobipy)."""


class SolverFailedError(OptimError):
    """The solver stopped with an error; the solver's own text is in the message."""


class NoSolutionError(OptimError, ValueError):
    """A value was asked of a result without a solution (infeasible, time limit without
    a point, ...); the message names the backend and the status."""
