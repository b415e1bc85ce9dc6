"""ECOS called directly (no cvxpy): the interior-point solver the published Gavel simulator used.

The model goes to ECOS as :mod:`optim.backends.conic`'s conic form: its zero-cone rows as
ECOS' equalities ``A x = b``, the rest as ``G x + s = h`` with ``s`` in the nonnegative and
second-order cones. Where optima are not unique, ECOS stops at its own point inside the optimal
face (not Clarabel's, not a vertex): the one the published simulator scheduled from, which is
why ``--gavel-compat`` solves the Gavel programs with it.

``ecos.solve`` only checks that its matrices are scipy matrices before calling the compiled
``_ecos.csolve`` with their arrays; this adapter calls ``csolve`` with the arrays itself, so a
solve does not import scipy (0.17 s). ECOS has no time limit: ``max_iters`` (``raw``) bounds a
run, and a requested time limit is reported in the result's notes.
"""

from __future__ import annotations

import functools

import numpy as np

from ..canonical import CanonicalModel
from ..options import SolveOptions
from ..result import Result, Status
from .conic import ConicBackend, ConicForm, Solved

#: ECOS' exit flags (ecos.h): optimal, certificates, and the same to reduced accuracy
_STATUS = {
    0: Status.OPTIMAL,
    1: Status.INFEASIBLE,
    2: Status.UNBOUNDED,
    10: Status.FEASIBLE,
    11: Status.INFEASIBLE,
    12: Status.UNBOUNDED,
}


class EcosBackend(ConicBackend):
    spec = "ecos"
    package = "ecos"

    def version(self) -> str:
        return _version()

    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result:
        result = super().solve(model, options)
        if options.time_limit is not None:
            result.notes.append(f"ecos has no time limit: the {options.time_limit:g} s asked for was not applied "
                                "(raw max_iters bounds a run)")
        return result

    def _setup(self, model: CanonicalModel, form: ConicForm, sign: float, options: SolveOptions):
        import _ecos

        kwargs = {"verbose": bool(options.verbose)}
        if options.feasibility_tol is not None:
            kwargs["feastol"] = float(options.feasibility_tol)
        if options.optimality_tol is not None:
            kwargs["abstol"] = kwargs["reltol"] = float(options.optimality_tol)
        kwargs.update(options.raw)
        n, A, zero = model.num_vars, form.A, form.zero
        dims = {"l": form.nonneg, "q": [3] * form.soc, "e": 0}
        if zero:
            eq = A.indices < zero
            G, E = _rows(A, ~eq, zero, n), _rows(A, eq, 0, n)
            args = ((A.shape[0] - zero, n, zero), sign * model.c, *G, form.b[zero:], dims, *E, form.b[:zero])
        else:
            args = ((A.shape[0], n, 0), sign * model.c, A.data, A.indices.astype(np.int64, copy=False),
                    A.indptr.astype(np.int64, copy=False), form.b, dims)

        def run() -> Solved:
            sol = _ecos.csolve(*args, **kwargs)
            info = sol["info"]
            flag = int(info["exitFlag"])
            return (_STATUS.get(flag, Status.ERROR), f"ecos: {info['infostring']} (exit flag {flag})", sol["x"],
                    np.concatenate([sol["y"], sol["z"]]), info["iter"])

        return run


def _rows(A, keep: np.ndarray, shift: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CSC arrays (data, row indices less ``shift``, pointers) of the entries ``keep`` of ``A``:
    a block of consecutive rows, so each column keeps its rows sorted."""
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(A.columns()[keep], minlength=n), out=indptr[1:])
    return A.data[keep], A.indices[keep].astype(np.int64) - shift, indptr


@functools.cache
def _version() -> str:
    """The compiled solver's version (the ``ecos`` package's ``__init__`` would import scipy)."""
    import _ecos

    return _ecos.version()
