"""The contract between the simulator (or a user) and a scheduling policy."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum

from formulations import Allocation, AllocationProblem
from optim import Capability, SolveOptions, backends_with, get_backend, parse_spec
from optim.errors import CapabilityError


class ProgramClass(str, Enum):
    """What kind of program a policy solves (decides which backends can run it)."""

    LP = "LP"
    MILP = "MILP"
    CONVEX = "convex"
    HEURISTIC = "heuristic"

    def __str__(self) -> str:
        return self.value

    @property
    def needs(self) -> frozenset[Capability]:
        return {
            ProgramClass.LP: frozenset({Capability.LP}),
            ProgramClass.MILP: frozenset({Capability.LP, Capability.MILP}),
            ProgramClass.CONVEX: frozenset({Capability.LP, Capability.LOG}),
            ProgramClass.HEURISTIC: frozenset(),
        }[self]


class Policy(ABC):
    """``allocate(problem) -> Allocation``; any state lives on the policy object."""

    name: str
    program: ProgramClass

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        self.solver = solver
        self.options = options or SolveOptions()
        if self.program is not ProgramClass.HEURISTIC:
            self._check_backend()

    def _check_backend(self) -> None:
        backend = get_backend(self.solver)
        missing = self.program.needs - backend.capabilities() - {Capability.LOG}
        if missing:
            names = ", ".join(sorted(str(c) for c in missing))
            others = ", ".join(backends_with(self.program.needs)) or "none installed"
            raise CapabilityError(
                f"policy {self.name!r} needs {names} and solver {parse_spec(self.solver).spec} lacks it; "
                f"solvers with it: {others}"
            )

    @abstractmethod
    def allocate(self, problem: AllocationProblem) -> Allocation: ...
