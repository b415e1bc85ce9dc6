"""Programs written in cvxpy, run on every backend.

A program stated as a ``cvxpy.Problem`` (as Gavel's published policies are) is compiled by cvxpy's
own reductions; :func:`compile_cvxpy` takes the result for HiGHS, which is the standard form

    minimize  c.z + offset   s.t.  A[:e] z = b[:e],   A[e:] z <= b[e:],   lb <= z <= ub,
    z_k integer for k in the compiler's integer and boolean indices,

over the stacked vector ``z`` of every cvxpy variable (a maximization arrives negated). Where that
form exists (linear objective and constraints, integer variables allowed) it becomes one
:class:`Model` in the problem's own sense (blocks ``"cvxpy"`` and ``"cvxpy_integer"``), so any LP /
MILP backend solves it, and :meth:`CvxpyProgram.unpack` runs the reductions backwards to set each
cvxpy variable's ``value`` from a solution, exactly as ``Problem.solve`` would.

A program with cones (``log``, norms, quadratic terms) has no such form: :func:`solve_native` hands
it to a cvxpy solver (``cvxpy:SOLVER`` specs) and returns the same :class:`Result` contract, its
``x`` the stacked variable values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .canonical import VarBlock, VarType
from .errors import ModelError
from .model import Model
from .options import SolveOptions
from .result import Result, Status, Timings

#: the block every translated program's variables live in
BLOCK = "cvxpy"
#: the integer entries of a mixed-integer program
INTEGER_BLOCK = "cvxpy_integer"


def is_cvxpy_problem(obj: Any) -> bool:
    """Whether ``obj`` is a ``cvxpy.Problem`` (without importing cvxpy where it is not loaded)."""
    cls = type(obj)
    return cls.__name__ == "Problem" and cls.__module__.startswith("cvxpy")


@dataclass
class CvxpyProgram:
    """A cvxpy problem and its standard form as a :class:`Model` in the problem's own sense
    (see the module docstring; ``model`` None: it has none, and :func:`solve_native` solves it):
    block ``"cvxpy"`` holds the continuous entries of the stacked vector, ``"cvxpy_integer"``
    the integer ones (``columns``: their positions in it)."""

    problem: Any
    model: Model | None
    chain: Any
    inverse: Any
    columns: tuple[np.ndarray, np.ndarray]
    #: the compiler minimizes the negated objective of a maximization
    flipped: bool

    def unpack(self, result: Result) -> None:
        """Set every cvxpy variable's ``value`` (and the problem's ``value``) from ``result``."""
        from cvxpy import settings
        from cvxpy.reductions.solution import Solution
        from cvxpy.reductions.solvers.conic_solvers.conic_solver import ConicSolver

        if not result.has_solution:
            raise ModelError(f"{self.model.name}: no solution to unpack ({result.status}): {result.message}")
        continuous, integer = self.columns
        z = np.empty(continuous.size + integer.size)
        z[continuous] = result.value(BLOCK)
        if integer.size:
            z[integer] = result.value(INTEGER_BLOCK)
        value = -result.objective if self.flipped else result.objective
        solution = Solution(settings.OPTIMAL, value, {self.inverse[-1][ConicSolver.VAR_ID]: z}, {}, {})
        for reduction, data in reversed(list(zip(self.chain.reductions[:-1], self.inverse[:-1]))):
            solution = reduction.invert(solution, data)
        self.problem.unpack(solution)


def compile_cvxpy(problem: Any, name: str = "cvxpy") -> CvxpyProgram:
    """``problem``'s standard form as a :class:`CvxpyProgram`; where it has cones or a quadratic
    objective, a program without ``model`` (solve it with :func:`solve_native`). A problem that
    breaks cvxpy's rules (DCP) is a :class:`ModelError` naming ``name``."""
    import cvxpy as cp
    from cvxpy.error import DCPError, SolverError

    if not problem.is_dcp():
        raise ModelError(f"{name}: the cvxpy problem does not follow cvxpy's DCP rules (problem.is_dcp() is False)")
    t0 = time.perf_counter()
    try:
        data, chain, inverse = problem.get_problem_data(cp.HIGHS)
    except (SolverError, DCPError):
        return _native(problem)
    dims = data["dims"]
    if (data.get("P") is not None and data["P"].nnz) or dims.soc or dims.exp or dims.psd or getattr(dims, "p3d", None):
        return _native(problem)
    c, A, b = np.asarray(data["c"], dtype=float), data["A"].tocsc(), np.asarray(data["b"], dtype=float)
    n, e = c.size, dims.zero
    lb = np.full(n, -np.inf) if data.get("lower_bounds") is None else np.asarray(data["lower_bounds"], dtype=float)
    ub = np.full(n, np.inf) if data.get("upper_bounds") is None else np.asarray(data["upper_bounds"], dtype=float)
    integer = np.unique(np.asarray([*data.get("int_vars_idx", ()), *data.get("bool_vars_idx", ())], dtype=np.int64))
    continuous = np.setdiff1d(np.arange(n), integer)
    flipped = isinstance(problem.objective, cp.Maximize)
    sign = -1.0 if flipped else 1.0
    model = Model(name)
    parts = [(model.add_variables(BLOCK, continuous.size, lb=lb[continuous], ub=ub[continuous]), continuous)]
    if integer.size:
        parts.append((model.add_variables(INTEGER_BLOCK, integer.size, lb=lb[integer], ub=ub[integer],
                                          vtype=VarType.INTEGER), integer))
    if e:
        model.add_rows("equalities", {z: A[:e][:, cols] for z, cols in parts}, lo=b[:e], hi=b[:e])
    if A.shape[0] > e:
        model.add_rows("inequalities", {z: A[e:][:, cols] for z, cols in parts}, hi=b[e:])
    offset = float(inverse[-1].get("offset", 0.0) or 0.0)
    model.set_objective({z: sign * c[cols] for z, cols in parts}, sense="max" if flipped else "min",
                        constant=sign * offset)
    model._t0 = t0
    return CvxpyProgram(problem, model, chain, inverse, (continuous, integer), flipped)


def _native(problem: Any) -> CvxpyProgram:
    """A program with no linear standard form: cvxpy solves it (``model`` None)."""
    none = np.zeros(0, dtype=np.int64)
    return CvxpyProgram(problem, None, None, None, (none, none), False)


def solve_native(problem: Any, spec: str, options: SolveOptions | None = None, name: str = "cvxpy") -> Result:
    """``problem`` solved by cvxpy with the inner solver of ``spec`` (``cvxpy:SOLVER``; ``cvxpy``
    alone: cvxpy's choice), as a :class:`Result` whose ``x`` stacks the variables' values (one
    block per variable, named as the variable)."""
    options = options or SolveOptions()
    inner = spec.partition(":")[2].upper() or None
    t0 = time.perf_counter()
    kwargs = {}
    if options.time_limit is not None and inner == "CLARABEL":
        kwargs["time_limit"] = options.time_limit
    try:
        problem.solve(solver=inner, **kwargs)
    except Exception as exc:  # cvxpy reports every solver failure as its own SolverError
        from cvxpy.error import SolverError

        if not isinstance(exc, SolverError):
            raise
        return Result(Status.ERROR, spec, message=f"{name}: {exc}")
    seconds = time.perf_counter() - t0
    status = _STATUS.get(problem.status, Status.ERROR)
    blocks, values, start = {}, [], 0
    for var in problem.variables():
        shape = tuple(var.shape)
        blocks[var.name()] = VarBlock(var.name(), start, shape, VarType.CONTINUOUS)
        start += int(np.prod(shape, dtype=np.int64))
        values.append(np.zeros(int(np.prod(shape, dtype=np.int64))) if var.value is None
                      else np.asarray(var.value, dtype=float).reshape(-1, order="C"))
    has = status in (Status.OPTIMAL, Status.FEASIBLE)
    value = float(problem.value) if has else None
    return Result(status, spec, objective=value, bound=value if status is Status.OPTIMAL else None,
                  x=np.concatenate(values) if has and values else None,
                  message=f"{name}: cvxpy status {problem.status}",
                  timings=Timings(solve=seconds), blocks=blocks)


_STATUS = {
    "optimal": Status.OPTIMAL,
    "optimal_inaccurate": Status.FEASIBLE,
    "infeasible": Status.INFEASIBLE,
    "infeasible_inaccurate": Status.INFEASIBLE,
    "unbounded": Status.UNBOUNDED,
    "unbounded_inaccurate": Status.UNBOUNDED,
    "user_limit": Status.TIME_LIMIT,
}
