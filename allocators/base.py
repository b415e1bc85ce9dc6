"""The contract between the simulator (or a user) and a scheduling policy."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from types import ModuleType

import numpy as np

from formulations import Allocation, AllocationProblem
from optim import (
    Capability,
    Model,
    Result,
    SolveOptions,
    backends_with,
    get_backend,
    parse_spec,
    solve,
)
from optim.column_generation import solve_by_column_generation
from optim.errors import CapabilityError


class ProgramClass(str, Enum):
    """What kind of program a policy solves."""

    LP = "LP"
    MILP = "MILP"
    CONVEX = "convex"
    HEURISTIC = "heuristic"

    def __str__(self) -> str:
        return self.value

    @property
    def needs(self) -> frozenset[Capability]:
        """Capabilities a backend must have. Convex policies need only LP: each has an exact
        LP route (bisection or tangent cuts) besides its conic or log form."""
        return {
            ProgramClass.LP: frozenset({Capability.LP}),
            ProgramClass.MILP: frozenset({Capability.LP, Capability.MILP}),
            ProgramClass.CONVEX: frozenset({Capability.LP}),
            ProgramClass.HEURISTIC: frozenset(),
        }[self]


class Policy(ABC):
    """``allocate(problem) -> Allocation``; any state lives on the policy object.
    ``uses_pairs``: the policy space-shares, so snapshots should carry co-located pairs."""

    name: str
    program: ProgramClass
    uses_pairs: bool = False
    #: the constructor takes ``gavel_compat`` (reproduce a defect of the published policy)
    supports_gavel_compat: bool = False

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        self.solver = solver
        self.options = options or SolveOptions()
        if self.program.needs:
            self._check_backend()

    def _check_backend(self) -> None:
        backend = get_backend(self.solver)
        missing = self.program.needs - backend.capabilities()
        if missing:
            names = ", ".join(sorted(str(c) for c in missing))
            others = ", ".join(backends_with(self.program.needs)) or "none installed"
            raise CapabilityError(
                f"policy {self.name!r} needs {names} and solver {parse_spec(self.solver).spec} lacks it; "
                f"solvers with it: {others}"
            )

    def _solve(self, model: Model, problem: AllocationProblem | None = None) -> Result:
        """Solve ``model``; a space-sharing LP (block "x" with rows beyond ``problem``'s jobs)
        prices its pair columns in by column generation, starting from the single jobs."""
        x = model.blocks.get("x")
        if problem is None or x is None or x.shape[0] <= problem.num_jobs or model.canonical().is_mip:
            return solve(model, self.solver, self.options)
        singles = np.zeros(x.shape, dtype=bool)
        singles[: problem.num_jobs] = True
        return solve_by_column_generation(model, self.solver, self.options, block="x", initial=singles)

    @property
    def heterogeneity_aware(self) -> bool:
        """The policy tells worker types apart (Gavel's ``_perf`` and ``_packed`` variants,
        AlloX); round mechanisms walk types in a fixed fastest-first order for these and in
        a shuffled order for the agnostic ones."""
        return "perf" in self.name or "packed" in self.name or self.name == "allox"

    @abstractmethod
    def allocate(self, problem: AllocationProblem) -> Allocation: ...


class FormulationPolicy(Policy):
    """A policy that is one program: ``formulation.build(problem, variant)``, solved, decoded."""

    formulation: ModuleType
    variant: str

    def allocate(self, problem: AllocationProblem) -> Allocation:
        model = self.formulation.build(problem, self.variant)
        return self.formulation.decode(problem, model, self._solve(model, problem), self.name)
