"""cvxpy with a selectable inner solver (``cvxpy:CLARABEL``, ``cvxpy:HIGHS``, ...).

Capabilities are read from cvxpy's own solver interface (MIP_CAPABLE, ExpCone and SOC
in SUPPORTED_CONSTRAINTS), so any installed cvxpy solver works without a table here.
Hyperbolic constraints ``k <= u v``, ``u, v >= 0`` become ``||(2 sqrt(k), u - v)|| <= u + v``.
"""

from __future__ import annotations

import time

import numpy as np

from ..canonical import CanonicalModel
from ..capabilities import Capability
from ..options import SolveOptions
from ..result import Result, Status, Timings
from ..sparse import transpose_times
from .base import Backend, split_rows, stopwatch
from .highs import highs_lp_method, quiet_banner

DEFAULT_INNER = "CLARABEL"
_PACKAGES = {"CLARABEL": "clarabel", "SCS": "scs", "ECOS": "ecos", "HIGHS": "highspy",
             "GUROBI": "gurobipy", "OSQP": "osqp", "SCIPY": "scipy", "MOSEK": "mosek"}
_TIME_LIMIT = {"CLARABEL": "time_limit", "SCS": "time_limit_secs", "HIGHS": "time_limit",
               "GUROBI": "TimeLimit"}
_MIP_GAP = {"HIGHS": "mip_rel_gap", "GUROBI": "MIPGap"}
_SEED = {"HIGHS": "random_seed", "GUROBI": "Seed"}
_NODE_LIMIT = {"HIGHS": "mip_max_nodes", "GUROBI": "NodeLimit"}


#: inner solvers that are first-order methods (approximate solutions and duals)
FIRST_ORDER = frozenset({"SCS", "OSQP", "PDLP", "CUOPT"})
#: branch-and-bound solvers not offered for MILP: ECOS_BB returns wrong "optimal" points
#: and calls feasible models infeasible (measured on Shockwave's market programs)
UNRELIABLE_MIP = frozenset({"ECOS_BB"})


def _solver_interface(inner: str):
    from cvxpy.reductions.solvers import defines

    return defines.SOLVER_MAP_CONIC.get(inner) or defines.SOLVER_MAP_QP.get(inner)


class CvxpyBackend(Backend):
    def __init__(self, inner: str = DEFAULT_INNER):
        self.inner = inner.upper()
        self.spec = f"cvxpy:{self.inner}"
        if self.inner == "GUROBI":
            from .gurobi import PIP_LICENSE_LIMITS

            self.license_limits = PIP_LICENSE_LIMITS
        self.first_order = self.inner in FIRST_ORDER

    def capabilities(self) -> frozenset[Capability]:
        caps = {Capability.LP, Capability.DUALS}
        solver = _solver_interface(self.inner)
        if solver is None:
            return frozenset(caps)
        if getattr(solver, "MIP_CAPABLE", False) and self.inner not in UNRELIABLE_MIP:
            caps.add(Capability.MILP)
        cones = {c.__name__ for c in getattr(solver, "SUPPORTED_CONSTRAINTS", [])}
        if "ExpCone" in cones:
            caps.add(Capability.LOG)
        if "SOC" in cones:
            caps.add(Capability.SOC)
        return frozenset(caps)

    def is_available(self) -> bool:
        try:
            import cvxpy as cp
        except ImportError:
            return False
        return self.inner in cp.installed_solvers()

    def missing_reason(self) -> str:
        try:
            import cvxpy as cp
        except ImportError:
            return "cvxpy is not installed (pip install cvxpy)"
        return f"{self.inner} is not installed for cvxpy (installed: {', '.join(cp.installed_solvers())})"

    def version(self) -> str:
        from importlib import metadata  # not at import: it costs every run ~10 ms

        import cvxpy as cp

        try:
            inner = metadata.version(_PACKAGES.get(self.inner, self.inner.lower()))
        except metadata.PackageNotFoundError:
            inner = "?"
        return f"cvxpy {cp.__version__}, {self.inner} {inner}"

    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result:
        import cvxpy as cp

        timings = Timings()
        with stopwatch(timings, "translate"):
            problem, x, groups = _translate(model)
        kwargs = _solver_kwargs(self.inner, options)
        if self.inner == "HIGHS":
            quiet_banner()
        method = highs_lp_method(options, model) if self.inner == "HIGHS" else None
        if method is not None:
            kwargs.setdefault("highs_options", {"solver": method})
        t0 = time.perf_counter()
        try:
            problem.solve(solver=self.inner, verbose=options.verbose, **kwargs)
        except cp.error.SolverError as exc:
            timings.solve = time.perf_counter() - t0
            return Result(Status.ERROR, self.spec, message=f"{self.inner} failed: {exc}",
                          timings=timings, solver_version=self.version())
        wall = time.perf_counter() - t0
        compile_s = problem.compilation_time or 0.0
        timings.translate += compile_s
        timings.solve = max(wall - compile_s, 0.0)
        return _read_result(problem, x, groups, model, timings, self)


def _translate(model: CanonicalModel):
    import cvxpy as cp

    n = model.num_vars
    int_idx = np.flatnonzero(model.integrality)
    # integer indices as numpy index arrays: cvxpy >= 1.6 breaks on lists of tuples (cvxpy#2668)
    integer = True if int_idx.size == n and n else (int_idx,) if int_idx.size else False
    bounded = np.isfinite(model.col_lo).any() or np.isfinite(model.col_hi).any()
    bounds = [model.col_lo, model.col_hi] if bounded else None
    x = cp.Variable(n, integer=integer, bounds=bounds) if n else cp.Variable(0)
    A = model.A.scipy().tocsr()
    index, sense, rhs = split_rows(model)
    groups = {}
    constraints = []
    for key in ("=", "<", ">"):
        sel = sense == key
        if not sel.any():
            continue
        rows = index[sel]
        expr = A[rows] @ x
        con = {"=": expr == rhs[sel], "<": expr <= rhs[sel], ">": expr >= rhs[sel]}[key]
        constraints.append(con)
        groups[key] = (rows, con)
    if model.hyperbolic is not None:
        cones = model.hyperbolic
        u = cones.U @ x + cones.u_offset
        v = cones.V @ x + cones.v_offset
        constraints.append(cp.SOC(u + v, cp.vstack([2.0 * np.sqrt(cones.k), u - v]), axis=0))
    objective = model.c @ x + model.offset
    if model.log_terms is not None:
        terms = model.log_terms
        objective = objective + cp.sum(cp.multiply(terms.weights, cp.log(terms.G @ x + terms.offset)))
    goal = cp.Maximize(objective) if model.sense == "max" else cp.Minimize(objective)
    return cp.Problem(goal, constraints), x, groups


def _solver_kwargs(inner: str, options: SolveOptions) -> dict:
    kwargs = {}
    if options.time_limit is not None and inner in _TIME_LIMIT:
        kwargs[_TIME_LIMIT[inner]] = options.time_limit
    if options.mip_gap is not None and inner in _MIP_GAP:
        kwargs[_MIP_GAP[inner]] = options.mip_gap
    if options.seed is not None and inner in _SEED:
        kwargs[_SEED[inner]] = options.seed
    if options.node_limit is not None and inner in _NODE_LIMIT:
        kwargs[_NODE_LIMIT[inner]] = options.node_limit
    if options.threads is not None and inner == "GUROBI":
        kwargs["Threads"] = options.threads
    kwargs.update(options.raw)
    return kwargs


def _read_result(problem, x, groups, model: CanonicalModel, timings: Timings, backend: CvxpyBackend) -> Result:
    import cvxpy as cp
    import cvxpy.settings as cvxpy_settings

    status = {
        cp.OPTIMAL: Status.OPTIMAL,
        cp.OPTIMAL_INACCURATE: Status.FEASIBLE,
        cp.INFEASIBLE: Status.INFEASIBLE,
        cp.INFEASIBLE_INACCURATE: Status.INFEASIBLE,
        cp.UNBOUNDED: Status.UNBOUNDED,
        cp.UNBOUNDED_INACCURATE: Status.UNBOUNDED,
        cvxpy_settings.INFEASIBLE_OR_UNBOUNDED: Status.INFEASIBLE_OR_UNBOUNDED,
        cp.USER_LIMIT: Status.TIME_LIMIT,
    }.get(problem.status, Status.ERROR)
    result = Result(status, backend.spec, message=f"cvxpy status {problem.status}",
                    timings=timings, solver_version=backend.version())
    result.blocks = model.blocks
    if problem.status == cp.OPTIMAL_INACCURATE:
        result.notes.append(f"{backend.inner} reported an inaccurate optimum")
    if x.value is None and model.num_vars:
        return result
    values = np.asarray(x.value if model.num_vars else np.zeros(0), dtype=float).reshape(-1)
    result.x = values
    result.objective = model.objective_value(values)
    stats = problem.solver_stats
    result.iterations = getattr(stats, "num_iters", None)
    if model.is_mip:
        return result
    if status is Status.OPTIMAL:
        result.bound = result.objective
    duals = np.zeros(model.num_rows)
    # cvxpy's multipliers are >= 0 for inequalities; turn them into sensitivities.
    sign = 1.0 if model.sense == "max" else -1.0
    for key, (rows, con) in groups.items():
        if con.dual_value is None:
            return result
        lam = np.asarray(con.dual_value, dtype=float).reshape(-1)
        duals[rows] += {"=": sign, "<": sign, ">": -sign}[key] * lam
    result.row_duals = duals
    result.reduced_costs = model.c - transpose_times(model.A, duals)
    return result
