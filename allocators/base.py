"""The contract between the engine (or a user) and a scheduling policy.

Every policy is a :class:`SchedulingPolicy`: a name, the system that published it, the class of
program it solves per decision, and what it plans for the next interval (:class:`Plans`):

- ``Plans.SHARES``: time fractions per (job, worker type), which the engine's Gavel mechanism
  turns into per-round leases (:class:`Policy`, ``allocate(problem) -> Allocation``);
- ``Plans.GPUS``: integer GPUs per job, placed and leased as they are: a whole round's jobs
  (:class:`allocators.round_plans.RoundPlanner`) or each slot's GPU counts with admission
  decisions (:class:`allocators.slot_plans.SlotPolicy`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace
from enum import Enum
from functools import cached_property
from types import ModuleType

import numpy as np

from formulations import Allocation, AllocationProblem, ProblemError, combinations
from formulations.classes import MergedProblem, expand, merge_equal_jobs
from formulations.pair_generation import solve_packed, widen
from optim import (
    Backend,
    Basis,
    Capability,
    Model,
    Result,
    Session,
    SolveOptions,
    backends_with,
    get_backend,
    parse_spec,
    solve,
)
from optim.column_generation import solve_by_column_generation
from optim.cvxpy_bridge import CvxpyProgram, compile_cvxpy, is_cvxpy_problem, solve_native
from optim.errors import CapabilityError, NoSolutionError


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


#: the fair-division properties ``schedopt check`` tests (:mod:`schedopt.testing`)
PROPERTIES = ("sharing_incentive", "pareto_efficiency", "envy_freeness", "strategy_proofness")


class Plans(str, Enum):
    """What a policy hands the engine for the next interval."""

    SHARES = "shares"
    GPUS = "GPUs"

    def __str__(self) -> str:
        return self.value


class SchedulingPolicy(ABC):
    """What every policy has: its name, who published it (``schedopt policies`` groups by it), the
    program it solves, what it plans, its solver and options; state lives on the object."""

    name: str
    system: str
    program: ProgramClass
    plans: Plans
    #: what ``--solver auto`` runs for this policy where its program class does not say
    #: (:func:`simulator.simulate.default_solver`); None: by the program class
    auto_solver: str | None = None
    #: the fair-division properties the policy claims (:data:`PROPERTIES`); ``schedopt check``
    #: tests them on every run, the others only when asked (``--properties``)
    claims: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        program = cls.__dict__.get("program")
        if isinstance(program, str) and not isinstance(program, ProgramClass):
            cls.program = ProgramClass(program)
        claims = cls.__dict__.get("claims")
        if claims is not None:
            unknown = set(claims) - set(PROPERTIES)
            if unknown:
                raise ValueError(f"policy class {cls.__name__}: unknown claims {sorted(unknown)}; "
                                 f"known: {', '.join(PROPERTIES)}")
            cls.claims = frozenset(claims)

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        self.solver = solver
        self.options = options or SolveOptions()

    def notes(self) -> list[str]:
        """Lines for the run's summary: fallbacks taken, solver statistics."""
        return []


class Policy(SchedulingPolicy):
    """``allocate(problem) -> Allocation``: time shares of each type per job.
    ``uses_pairs``: the policy space-shares, so snapshots should carry co-located pairs."""

    system = "Gavel"
    plans = Plans.SHARES
    uses_pairs: bool = False
    #: the constructor takes ``gavel_compat`` (reproduce a defect of the published policy)
    supports_gavel_compat: bool = False
    #: re-solve each LP warm from this policy's last one of the same name (:class:`optim.Session`)
    #: on backends with ``Capability.INCREMENTAL``; the same optimum as a cold solve
    warm_resolve: bool = False
    #: the program is concave and symmetric in jobs equal in throughputs, scale factor, weight and
    #: these optional fields: on a vertex backend it is solved merged (:mod:`formulations.classes`)
    merge_on: tuple[str, ...] | None = None
    #: round mechanisms walk worker types in a fixed fastest-first order for this policy, in a
    #: shuffled (seeded) order otherwise; Gavel fixes it for its ``_perf`` and packing policies
    #: (``Gandiva_Packing`` among them) and AlloX
    fixed_type_order: bool = False
    #: the policy takes jobs of more than one GPU (``schedopt check`` draws only single-GPU jobs
    #: for one that does not)
    multi_gpu_jobs: bool = True

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        super().__init__(solver, options)
        self._sessions: dict[str, Session] = {}
        if self.program.needs:
            self._check_backend()
        #: solve merged (``merge_on``) on a backend whose LP answers are vertices: an interior-point
        #: one would return the centre of the merged program's optimal face, which is not the full
        #: program's (equal optimum, another allocation)
        self.merges = self.merge_on is not None and Capability.VERTEX in self.backend.capabilities()
        self._merged_options = self._merged_solve_options() if self.merges else self.options

    @cached_property
    def backend(self) -> Backend:
        """The adapter of ``self.solver`` (looked up once: a lookup checks that it is installed)."""
        return get_backend(self.solver)

    def _check_backend(self) -> None:
        missing = self.program.needs - self.backend.capabilities()
        if missing:
            names = ", ".join(sorted(str(c) for c in missing))
            others = ", ".join(backends_with(self.program.needs)) or "none installed"
            raise CapabilityError(
                f"policy {self.name!r} needs {names} and solver {parse_spec(self.solver).spec} lacks it; "
                f"solvers with it: {others}"
            )

    def _solve(self, model: Model, problem: AllocationProblem | None = None) -> Result:
        """Solve ``model``; a space-sharing LP (block "x" of combinations x types, with rows beyond
        ``problem``'s jobs) prices its pair columns in by column generation, starting from the
        single jobs."""
        x = model.blocks.get("x")
        if (problem is None or x is None or len(x.shape) != 2 or x.shape[0] <= problem.num_jobs
                or model.canonical().is_mip):
            return self._solve_whole(model)
        singles = np.zeros(x.shape, dtype=bool)
        singles[: problem.num_jobs] = True
        return solve_by_column_generation(model, self.solver, self.options, block="x", initial=singles)

    def _solve_program(self, problem: AllocationProblem, build: Callable[[AllocationProblem], Model]
                       ) -> tuple[AllocationProblem, Model, Result, np.ndarray | None]:
        """``build(problem)`` solved, as ``(problem', model, result, generated)``: for a
        space-sharing policy the LP's pair columns are generated (:mod:`formulations.pair_generation`)
        and ``problem'`` has only the ``generated`` pairs; for a policy with ``merge_on``
        ``problem'`` is the merged problem when some jobs are equal; otherwise ``problem`` itself
        and ``generated`` None. Decode over ``problem'``, then :meth:`_finish`."""
        if not self.uses_pairs or problem.pairs is None:
            merged = self._merged(problem) if self.merges else None
            if merged is not None:
                model = build(merged)
                return merged, model, self._solve_merged(model, self._start_basis(merged, model)), None
            model = build(problem)
            basis = self._start_basis(problem, model) if self.merges else None
            if basis is not None:  # no two jobs equal: the whole program, from the policy's crash basis
                return problem, model, self._solve_merged(model, basis), None
            return problem, model, self._solve(model, problem), None
        restricted, model, result, info = solve_packed(problem, build, self.solver, self.options)
        return restricted, model, result, info.generated

    def _solve_merged(self, model: Model, basis: Basis | None = None) -> Result:
        """A program over classes (:mod:`formulations.classes`): small, and its zero point is
        feasible, so cold, by primal simplex without presolve (unless a method was asked), from
        ``basis`` where a simplex method runs; without scaling unless asked for (its coefficients
        are GPU counts, ones and normalized rates: on Gavel's 256-job max-min instances scaling
        took a fifth of HiGHS' run, and primal simplex pivoted 6 times without it, 8.5 with it)."""
        options = self._merged_options
        if basis is not None and options.method in ("primal", "simplex"):
            options = options.with_basis(basis)
        return solve(model.canonical(), self.backend, options)

    def _merged_solve_options(self) -> SolveOptions:
        """The options of :meth:`_solve_merged`, resolved once, at construction."""
        method = "primal" if self.options.method == "auto" else self.options.method
        scaling = False if self.options.scaling is None else self.options.scaling
        return replace(self.options, method=method, scaling=scaling)

    def _start_basis(self, problem: AllocationProblem, model: Model) -> Basis | None:
        """A starting basis for the simplex method on ``model``, built for ``problem`` (none here)."""
        return None

    def _merged(self, problem: AllocationProblem) -> MergedProblem | None:
        """The merged program's problem (:mod:`formulations.classes`): equal jobs as one."""
        return merge_equal_jobs(problem, self.merge_on)

    @staticmethod
    def _finish(allocation: Allocation, problem: AllocationProblem, generated: np.ndarray | None) -> Allocation:
        """An allocation decoded over :meth:`_solve_program`'s ``problem'`` as one of ``problem``."""
        if isinstance(allocation.problem, MergedProblem):
            return expand(allocation)
        return widen(allocation, problem, generated)

    def _solve_whole(self, model: Model) -> Result:
        """``model`` solved cold, or warm (``warm_resolve``, an LP, a backend that can)."""
        canon = model.canonical()
        if not (self.warm_resolve and Capability.INCREMENTAL in self.backend.capabilities()
                and canon.required_capabilities() == {Capability.LP}):
            return solve(canon, self.backend, self.options)
        session = self._sessions.get(canon.name)
        if session is None:
            session = self._sessions[canon.name] = Session(self.solver, self.options)
        return session.solve(canon)

    @abstractmethod
    def allocate(self, problem: AllocationProblem) -> Allocation: ...


class ProgramPolicy(Policy):
    """A time-share policy that is one program per snapshot: the contract users write against.

    ``build(problem)`` states the program over the snapshot's arrays, either as an
    :class:`optim.Model` with a variable block ``"x"`` of shape ``(problem.num_jobs,
    problem.num_types)``, or as a ``cvxpy.Problem`` with a variable named ``"x"`` of that shape;
    ``x[i, j]`` is the fraction of wall time job i runs on ``scale_factors[i]`` GPUs of type j.
    A cvxpy program whose objective and constraints are linear is translated to a Model
    (:mod:`optim.cvxpy_bridge`), so every LP / MILP backend solves it; one with cones (``log``,
    norms) is solved by cvxpy with the policy's solver (``cvxpy:SOLVER``, or the cvxpy solver of
    the same name). ``decode(problem, model, result)`` turns the solved program into an
    :class:`Allocation`; the default reads ``x``, clips solver noise into its bounds and scales
    excesses within the solver's tolerance back into the capacities and time budgets.

    Behaviour is chosen by attributes (defaults in brackets): ``program`` [LP], ``system``
    ["user"], ``uses_pairs`` [False: the snapshot carries no co-located pairs],
    ``fixed_type_order`` [False], ``claims`` [none] and ``warm_resolve`` [False]."""

    system = "user"
    program = ProgramClass.LP

    @abstractmethod
    def build(self, problem: AllocationProblem) -> Model:
        """The program for ``problem``: a :class:`Model` or a ``cvxpy.Problem`` (see the class doc)."""

    def decode(self, problem: AllocationProblem, model: Model | CvxpyProgram, result: Result) -> Allocation:
        """The allocation of the solved program: ``x`` read back, its objective the program's."""
        if isinstance(model, CvxpyProgram):
            x = model.problem.var_dict.get("x")
            if x is None or tuple(x.shape) != (problem.num_jobs, problem.num_types) or x.value is None:
                raise ProblemError(f"policy {self.name!r}: its cvxpy program needs a variable named 'x' of shape "
                                   f"({problem.num_jobs}, {problem.num_types}) with a value after the solve")
            shares = np.clip(np.asarray(x.value, dtype=float), 0.0, 1.0)
            return combinations.allocation_of(problem, shares, self.name, result, objective=result.objective)
        return combinations.decode(problem, model, result, self.name, objective=result.objective)

    def allocate(self, problem: AllocationProblem) -> Allocation:
        solved, model, result, generated = self._solve_program(problem, self._program)
        if not result.has_solution:
            raise NoSolutionError(f"policy {self.name!r}: no solution on {result.backend} ({result.status})"
                                  f"{': ' + result.message if result.message else ''}")
        return self._finish(self.decode(solved, model, result), problem, generated)

    def _program(self, problem: AllocationProblem) -> Model | CvxpyProgram:
        """``build(problem)``, a cvxpy problem compiled to its standard form where it has one."""
        built = self.build(problem)
        if not is_cvxpy_problem(built):
            return built
        if self.uses_pairs:
            raise ProblemError(f"policy {self.name!r}: a space-sharing policy's pair columns are priced in by "
                               f"column generation over a Model's block 'x'; build must return a Model")
        return compile_cvxpy(built, self.name)

    def _solve(self, model: Model | CvxpyProgram, problem: AllocationProblem | None = None) -> Result:
        if not isinstance(model, CvxpyProgram):
            return super()._solve(model, problem)
        if model.model is None:
            return solve_native(model.problem, self._cvxpy_solver(), self.options, self.name)
        result = solve(model.model, self.backend, self.options)
        if result.has_solution:
            model.unpack(result)
        return result

    def _cvxpy_solver(self) -> str:
        """The cvxpy solver for a program with cones: the policy's own where it is one of cvxpy's."""
        import cvxpy as cp

        spec = parse_spec(self.solver).spec
        if spec.startswith("cvxpy"):
            return spec
        family = spec.partition(":")[0].upper()
        if family in cp.installed_solvers():
            return f"cvxpy:{family}"
        raise CapabilityError(f"policy {self.name!r}: its cvxpy program has cones (log, norms), which only cvxpy's "
                              f"solvers take; solver {spec} is not one: use --solver cvxpy:CLARABEL (installed: "
                              f"{', '.join(cp.installed_solvers())})")


class FormulationPolicy(ProgramPolicy):
    """A built-in policy that is one program: ``formulation.build(problem, variant)``, solved,
    ``formulation.decode``-d."""

    system = "Gavel"
    formulation: ModuleType
    variant: str
    warm_resolve = True

    def build(self, problem: AllocationProblem) -> Model:
        return self.formulation.build(problem, self.variant)

    def decode(self, problem: AllocationProblem, model: Model, result: Result) -> Allocation:
        return self.formulation.decode(problem, model, result, self.name)
