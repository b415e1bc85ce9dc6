"""Backend-neutral optimization: one vectorized model, many solvers.

>>> from optim import Model, solve
>>> m = Model("tiny")
>>> x = m.add_variables("x", 2, ub=1.0)
>>> _ = m.add_rows("budget", {x: [[1.0, 2.0]]}, hi=2.0)
>>> m.set_objective({x: [1.0, 1.0]}, sense="max")
>>> round(solve(m, "highs").objective, 6)
1.5
"""

from .backends import Backend, all_backends, available_backends, get_backend, parse_spec
from .basis import Basis
from .canonical import AssignmentLayout, CanonicalModel, HyperbolicCones, LogTerms, VarBlock, VarType
from .capabilities import Capability
from .certificate import Certificate, lp_certificate, lp_dual_bound
from .errors import (
    BackendUnavailableError,
    CapabilityError,
    LicenseLimitError,
    ModelError,
    NoSolutionError,
    OptimError,
    SolverFailedError,
    UnknownBackendError,
)
from .model import Model
from .options import SolveOptions
from .result import Result, Status, Timings
from .session import Session
from .solve import backends_with, solve
from .sparse import CscArrays, CsrArrays
from .tally import tally

__all__ = [
    "AssignmentLayout", "Backend", "BackendUnavailableError", "Basis", "CanonicalModel", "Capability",
    "CapabilityError", "Certificate",
    "CscArrays", "CsrArrays", "HyperbolicCones", "LicenseLimitError", "LogTerms", "Model", "ModelError",
    "NoSolutionError", "OptimError", "Result", "Session", "SolveOptions", "SolverFailedError", "Status", "Timings",
    "UnknownBackendError", "VarBlock", "VarType", "all_backends", "available_backends", "backends_with",
    "get_backend", "lp_certificate", "lp_dual_bound", "parse_spec", "solve", "tally",
]
