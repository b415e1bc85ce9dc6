"""Solver-neutral solve options."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Literal

Method = Literal["auto", "simplex", "ipm", "primal"]


@dataclass(frozen=True)
class SolveOptions:
    """Options every backend maps onto its own parameters.

    ``raw`` is passed through verbatim to the solver (names are the solver's own).
    ``method`` (LPs): the solver's choice, simplex, interior point, or ``primal``: primal simplex
    without presolve (HiGHS, Gurobi), the fastest on a small LP whose zero point is feasible
    (its all-slack basis is a feasible start); backends without simplex ignore it.
    ``seed``: the solver's random seed (HiGHS ``random_seed``, Gurobi ``Seed``), which
    picks among equally good pivots and branchings and so among optima that are not
    unique; solvers without one (Clarabel, the other conic solvers) are deterministic.
    ``scaling``: False turns off the rescaling of rows and columns before the solve (HiGHS'
    simplex ``simplex_scale_strategy=0``, Gurobi ``ScaleFlag=0``, Clarabel ``equilibrate_enable``;
    the others have no such switch and ignore it), None keeps the solver's default. Answers agree
    within the tolerances either way; on a small, well-scaled LP the scaling costs more than it saves.
    ``start``: a feasible point (one value per column) for MIP solvers to start from.
    ``basis``: an :class:`~optim.basis.Basis` for an LP's simplex method to start from (backends
    with ``Capability.VERTEX``); best with ``method="primal"`` and a primal feasible basis.
    ``log_gap`` and ``max_cut_rounds`` steer the tangent-cut outer approximation used
    for log terms on backends without a log cone: the loop stops once
    (upper bound - best objective) / max(1, |best objective|) <= ``log_gap``.
    ``node_limit``: the most branch-and-bound nodes a MIP solver explores (HiGHS ``mip_max_nodes``,
    Gurobi ``NodeLimit``): unlike a time limit it does not depend on the machine's load, so runs
    under it are reproducible; where it binds the status is FEASIBLE.
    ``strict_time_limit``: keep to ``time_limit`` even where that costs the solver a heuristic
    known to overrun it (HiGHS 1.16: its sub-MIP heuristics, RINS, RENS and root reduced cost,
    can run for minutes past the limit in the sub-MIP's presolve, ERGO-Code/HiGHS#3237; they are
    switched off).
    """

    threads: int | None = None
    time_limit: float | None = None
    mip_gap: float | None = None
    method: Method = "auto"
    feasibility_tol: float | None = None
    optimality_tol: float | None = None
    verbose: bool = False
    log_gap: float = 1e-6
    max_cut_rounds: int = 200
    raw: dict[str, Any] = field(default_factory=dict)
    start: Any = None
    basis: Any = None
    seed: int | None = None
    scaling: bool | None = None
    node_limit: int | None = None
    strict_time_limit: bool = False

    def with_basis(self, basis) -> SolveOptions:
        """These options with ``basis`` (a copy that skips the checks: every other field passed them)."""
        copy = object.__new__(SolveOptions)
        copy.__dict__.update(self.__dict__, basis=basis)
        return copy

    def __post_init__(self) -> None:
        if self.method not in ("auto", "simplex", "ipm", "primal"):
            raise ValueError(f"method must be auto, simplex, ipm or primal, not {self.method!r}")
        for name in ("time_limit", "mip_gap", "feasibility_tol", "optimality_tol"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive, got {value!r}")
        if self.node_limit is not None and self.node_limit < 0:
            raise ValueError(f"node_limit must be >= 0, got {self.node_limit!r}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads!r}")
        if self.scaling is not None and not isinstance(self.scaling, bool):
            raise ValueError(f"scaling must be True, False or None, not {self.scaling!r}")
        if self.seed is not None:
            try:
                seed = operator.index(self.seed)
            except TypeError:
                seed = -1
            if not 0 <= seed < 2**31:
                raise ValueError(f"seed must be an integer in [0, 2**31), got {self.seed!r}")
            object.__setattr__(self, "seed", int(seed))
