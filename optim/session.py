"""Warm re-solves: a sequence of LPs solved on one live solver model.

:class:`Session` solves its first LP cold and keeps it in the solver. Each later LP is
matched to the held one by its keys (:func:`optim.delta.model_delta`), the difference is
applied in place and the LP re-solved by simplex from the held basis: the same optimum
as a cold solve, to the solver's tolerances. The session falls back to a cold solve, and
says so in the result's notes, when the model is not a pure LP, when more than
``max_change`` of it changed (columns and rows dropped or added and coefficients changed,
plus rows and columns the live model still holds inert, relative to the model's columns
plus rows) or when the solver refuses the update. A warm result's ``timings.translate``
includes computing the delta. The backends with ``Capability.INCREMENTAL`` are HiGHS
(:mod:`optim.backends.highs_live`: departures kept inert, arrivals in pooled slots, so the
factorization survives) and Gurobi (:mod:`optim.backends.gurobi_live`: the delta applied
literally, ranged rows as constraint pairs).
"""

from __future__ import annotations

import time

from .backends import Backend, get_backend
from .canonical import CanonicalModel
from .capabilities import Capability
from .delta import model_delta
from .errors import CapabilityError
from .model import Model
from .options import SolveOptions
from .result import Result, Status
from .solve import finished, solve

#: default share of a model (changes / (columns + rows)) above which a session solves cold
MAX_CHANGE = 0.25


class Session:
    """Solve LPs one after another, each warm from the last (module docstring).

    ``warm`` tells whether the last :meth:`solve` was a warm re-solve. A pickled session
    (e.g. sent to another process) carries no live model: its next solve is cold.
    """

    def __init__(self, backend: str | Backend = "highs", options: SolveOptions | None = None, *,
                 max_change: float = MAX_CHANGE):
        self.backend = get_backend(backend) if isinstance(backend, str) else backend
        if Capability.INCREMENTAL not in self.backend.capabilities():
            raise CapabilityError(f"{self.backend.spec} has no incremental re-solve (no live model to warm-start)")
        if not max_change >= 0:
            raise ValueError(f"max_change must be >= 0, got {max_change!r}")
        self.options = options or SolveOptions()
        if self.options.basis is not None:
            raise ValueError("a session starts each re-solve from its last basis; solve() takes a starting basis")
        self.max_change = max_change
        self.warm = False
        self._live = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_live": None, "warm": False}

    def solve(self, model: Model | CanonicalModel, *, check: bool = True) -> Result:
        """Solve ``model`` warm from the held one where possible; as :func:`optim.solve`
        otherwise (``check`` raises for a license refusal or a solver error)."""
        canon = model.canonical() if isinstance(model, Model) else model
        self.warm = False
        if canon.num_vars == 0:
            return solve(canon, self.backend, self.options, check=check)
        if canon.required_capabilities() != {Capability.LP}:
            self._live = None
            result = solve(canon, self.backend, self.options, check=check)
            result.notes.append("warm re-solves are for LPs only: solved cold")
            return result
        note = None
        if self._live is not None and self._live.model is not None:
            start = time.perf_counter()
            delta = model_delta(self._live.model, canon)
            share = (delta.num_changes + self._live.num_inert) / max(1, canon.num_vars + canon.num_rows)
            if share <= self.max_change:
                result = self._live.update(delta, canon)
                result.timings.translate = time.perf_counter() - start - result.timings.solve
                if result.status is not Status.ERROR:
                    self.warm = True
                    return finished(result, canon, self.backend, check)
                note = f"warm re-solve failed ({result.message}): solved cold"
            else:
                note = (f"warm re-solve skipped (changes and inert rows and columns over {self.max_change:.0%} "
                        "of the model): solved cold")
        if self._live is None:
            self._live = self.backend.live(self.options)
        result = self._live.load(canon)
        if note is not None:
            result.notes.append(note)
        return finished(result, canon, self.backend, check)
