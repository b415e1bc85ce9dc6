"""Pyomo (``pyomo:highs`` via appsi_highs, ``pyomo:gurobi`` via gurobi_direct).

Rows are built one by one with ``LinearExpression`` from the CSR matrix: pyomo 6.10's
matrix constraints are broken, and this is the fastest row-wise path it offers.
"""

from __future__ import annotations

import numpy as np

from ..canonical import CanonicalModel
from ..capabilities import Capability
from ..options import SolveOptions
from ..result import Result, Status, Timings
from ..sparse import transpose_times
from .base import Backend, stopwatch
from .highs import highs_lp_method, quiet_banner

DEFAULT_INNER = "highs"
_SOLVERS = {"highs": "appsi_highs", "gurobi": "gurobi_direct"}
_PACKAGES = {"highs": "highspy", "gurobi": "gurobipy"}
_OPTION_NAMES = {
    "highs": {"time_limit": "time_limit", "mip_gap": "mip_rel_gap", "threads": "threads", "seed": "random_seed",
              "node_limit": "mip_max_nodes"},
    "gurobi": {"time_limit": "TimeLimit", "mip_gap": "MIPGap", "threads": "Threads", "seed": "Seed",
               "node_limit": "NodeLimit"},
}

#: ``SolveOptions(scaling=False)`` per inner solver
_SCALING_OFF = {"highs": {"simplex_scale_strategy": 0}, "gurobi": {"ScaleFlag": 0}}


class PyomoBackend(Backend):
    def __init__(self, inner: str = DEFAULT_INNER):
        self.inner = inner.lower()
        self.spec = f"pyomo:{self.inner}"
        if self.inner == "gurobi":
            from .gurobi import PIP_LICENSE_LIMITS

            self.license_limits = PIP_LICENSE_LIMITS

    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.LP, Capability.MILP, Capability.DUALS})

    def is_available(self) -> bool:
        try:
            import pyomo.environ as pyo
        except ImportError:
            return False
        if self.inner not in _SOLVERS:
            return False
        return bool(pyo.SolverFactory(_SOLVERS[self.inner]).available(exception_flag=False))

    def missing_reason(self) -> str:
        try:
            import pyomo.environ  # noqa: F401
        except ImportError:
            return "pyomo is not installed (pip install pyomo)"
        package = _PACKAGES.get(self.inner)
        if package is None:
            return f"pyomo inner solver {self.inner!r} is not supported (use one of {sorted(_SOLVERS)})"
        return f"pyomo:{self.inner} needs {package} (pip install {package})"

    def version(self) -> str:
        from importlib import metadata

        import pyomo.version

        package = _PACKAGES[self.inner]
        return f"pyomo {pyomo.version.version}, {package} {metadata.version(package)}"

    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result:
        import pyomo.environ as pyo

        timings = Timings()
        with stopwatch(timings, "translate"):
            m = _translate(model)
            if self.inner == "highs":
                quiet_banner()
            opt = pyo.SolverFactory(_SOLVERS[self.inner])
            names = _OPTION_NAMES[self.inner]
            for field in ("time_limit", "mip_gap", "threads", "seed", "node_limit"):
                value = getattr(options, field)
                if value is not None:
                    opt.options[names[field]] = value
            method = highs_lp_method(options, model) if self.inner == "highs" else None
            if method is not None:
                opt.options["solver"] = method
            if options.scaling is False:
                opt.options.update(_SCALING_OFF[self.inner])
            for key, value in options.raw.items():
                opt.options[key] = value
        with stopwatch(timings, "solve"):
            try:
                res = opt.solve(m, tee=options.verbose, load_solutions=False)
            except Exception as exc:  # noqa: BLE001 (pyomo wraps every solver failure differently)
                return _failure(exc, model, timings, self)
        return _read_result(m, res, model, timings, self)


def _translate(model: CanonicalModel):
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression

    n = model.num_vars
    m = pyo.ConcreteModel(name=model.name)
    m.x = pyo.Var(range(n))
    xs = [m.x[j] for j in range(n)]
    lo = np.where(np.isfinite(model.col_lo), model.col_lo, np.nan).tolist()
    hi = np.where(np.isfinite(model.col_hi), model.col_hi, np.nan).tolist()
    integer = model.integrality.tolist()
    for j, var in enumerate(xs):
        var.setlb(None if lo[j] != lo[j] else lo[j])
        var.setub(None if hi[j] != hi[j] else hi[j])
        if integer[j]:
            var.domain = pyo.Integers
    A = model.A.scipy().tocsr()
    indptr, indices, data = A.indptr.tolist(), A.indices.tolist(), A.data.tolist()
    row_lo = [None if not np.isfinite(v) else float(v) for v in model.row_lo]
    row_hi = [None if not np.isfinite(v) else float(v) for v in model.row_hi]

    def row(_, i):
        a, b = indptr[i], indptr[i + 1]
        expr = LinearExpression(
            constant=0.0, linear_coefs=data[a:b], linear_vars=[xs[j] for j in indices[a:b]]
        )
        if row_lo[i] is None and row_hi[i] is None:
            return pyo.Constraint.Skip
        if row_lo[i] == row_hi[i]:
            return expr == row_lo[i]
        return (row_lo[i], expr, row_hi[i])

    m.rows = pyo.Constraint(range(model.num_rows), rule=row)
    nz = np.flatnonzero(model.c)
    objective = LinearExpression(
        constant=float(model.offset),
        linear_coefs=model.c[nz].tolist(),
        linear_vars=[xs[j] for j in nz],
    )
    m.obj = pyo.Objective(expr=objective, sense=pyo.maximize if model.sense == "max" else pyo.minimize)
    if not model.is_mip:
        m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    return m


def _failure(exc: Exception, model: CanonicalModel, timings: Timings, backend: PyomoBackend) -> Result:
    text = str(exc)
    if backend.inner == "gurobi" and ("10010" in text or "size-limited" in text):
        from .gurobi import PIP_LICENSE_LIMITS

        return Result(
            Status.LICENSE_LIMIT, backend.spec, timings=timings,
            message=(f"pyomo:gurobi: the size-limited license refused this model ({model.num_vars} "
                     f"variables, {model.num_rows} rows; {PIP_LICENSE_LIMITS}): {text}"),
        )
    return Result(Status.ERROR, backend.spec, message=f"{type(exc).__name__}: {text}", timings=timings)


def _read_result(m, res, model: CanonicalModel, timings: Timings, backend: PyomoBackend) -> Result:
    from pyomo.opt import SolutionStatus
    from pyomo.opt import TerminationCondition as TC

    tc = res.solver.termination_condition
    status = {
        TC.optimal: Status.OPTIMAL,
        TC.infeasible: Status.INFEASIBLE,
        TC.unbounded: Status.UNBOUNDED,
        TC.infeasibleOrUnbounded: Status.INFEASIBLE_OR_UNBOUNDED,
        TC.maxTimeLimit: Status.TIME_LIMIT,
        TC.maxIterations: Status.FEASIBLE,
    }.get(tc, Status.ERROR)
    result = Result(status, backend.spec, message=f"pyomo termination {tc}", timings=timings,
                    solver_version=backend.version())
    result.blocks = model.blocks
    has_solution = len(res.solution) > 0 and res.solution(0).status in (
        SolutionStatus.optimal, SolutionStatus.feasible, SolutionStatus.bestSoFar, SolutionStatus.other,
        SolutionStatus.stoppedByLimit,
    )
    if not has_solution:
        return result
    m.solutions.load_from(res)
    n = model.num_vars
    values = np.array([m.x[j].value if m.x[j].value is not None else 0.0 for j in range(n)], dtype=float)
    result.x = values
    result.objective = model.objective_value(values)
    if model.is_mip:
        bound = res.problem(0).upper_bound if model.sense == "max" else res.problem(0).lower_bound
        result.bound = float(bound) if bound is not None and np.isfinite(float(bound)) else None
        return result
    if status is Status.OPTIMAL:
        result.bound = result.objective
    if hasattr(m, "dual") and len(m.dual):
        duals = np.zeros(model.num_rows)
        for i, con in m.rows.items():
            duals[i] = m.dual.get(con, 0.0)
        result.row_duals = duals
        result.reduced_costs = model.c - transpose_times(model.A, duals)
    return result
