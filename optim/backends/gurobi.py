"""Gurobi through the gurobipy matrix API (addMVar / addMConstr).

Hyperbolic constraints ``k <= u v``, ``u, v >= 0`` get auxiliary columns ``u = U x + u0``,
``v = V x + v0`` (lower bound 0) and ``w`` fixed at ``sqrt(k)``, and the quadratic rows
``w_i^2 <= u_i v_i``: the rotated second-order cone form Gurobi recognizes as convex.
"""

from __future__ import annotations

import numpy as np

from ..basis import BASIC, LOWER, UPPER, Basis
from ..canonical import CanonicalModel
from ..capabilities import Capability
from ..options import SolveOptions
from ..result import Result, Status, Timings
from ..sparse import transpose_times
from .base import Backend, LiveModel, split_rows, stopwatch

#: gurobipy's error code for "Model too large for size-limited license"
SIZE_LIMITED_LICENSE = 10010
PIP_LICENSE_LIMITS = "pip license: <= 2000 variables and rows (<= 200 variables if nonlinear)"

_ENV = None


def env():
    """One quiet Gurobi environment per process (starting one checks the license)."""
    global _ENV
    if _ENV is None:
        import gurobipy as gp

        env = gp.Env(empty=True)
        env.setParam("OutputFlag", 0)
        env.start()
        _ENV = env
    return _ENV


class GurobiBackend(Backend):
    spec = "gurobi"
    package = "gurobipy"
    license_limits = PIP_LICENSE_LIMITS

    def capabilities(self) -> frozenset[Capability]:
        return frozenset(
            {Capability.LP, Capability.MILP, Capability.LOG, Capability.SOC, Capability.DUALS,
             Capability.WARM_START, Capability.INCREMENTAL, Capability.VERTEX}
        )

    def version(self) -> str:
        import gurobipy as gp

        return ".".join(str(v) for v in gp.gurobi.version())

    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result:
        import gurobipy as gp

        timings = Timings()
        try:
            with stopwatch(timings, "translate"):
                m, x, rows, index = _translate(model, options)
            with stopwatch(timings, "solve"):
                m.optimize()
        except gp.GurobiError as exc:
            if exc.errno == SIZE_LIMITED_LICENSE:
                cones = f", {model.num_cones} cones with 3 variables each" if model.num_cones else ""
                return Result(
                    Status.LICENSE_LIMIT,
                    self.spec,
                    message=(
                        f"gurobi: the size-limited license refused this model "
                        f"({model.num_vars} variables, {model.num_rows} rows{cones}; "
                        f"{PIP_LICENSE_LIMITS}): {exc}"
                    ),
                    timings=timings,
                    solver_version=self.version(),
                )
            return Result(Status.ERROR, self.spec, message=f"Gurobi error {exc.errno}: {exc}", timings=timings)
        return _read_result(m, x, rows, index, model, timings, self.spec, self.version())

    def live(self, options: SolveOptions) -> LiveModel:
        from .gurobi_live import GurobiLive

        return GurobiLive(options, self.spec, self.version())


def _translate(model: CanonicalModel, options: SolveOptions):
    import gurobipy as gp
    from gurobipy import GRB

    m = gp.Model(model.name, env=env())
    vtype = np.where(model.integrality, GRB.INTEGER, GRB.CONTINUOUS)
    x = m.addMVar(model.num_vars, lb=model.col_lo, ub=model.col_hi, vtype=vtype)
    index, sense, rhs = split_rows(model)
    rows = m.addMConstr(model.A.scipy().tocsr()[index], x, sense, rhs) if index.size else None
    if model.hyperbolic is not None:
        cones = model.hyperbolic
        u = m.addMVar(cones.size, lb=0.0)
        v = m.addMVar(cones.size, lb=0.0)
        root = np.sqrt(cones.k)
        w = m.addMVar(cones.size, lb=root, ub=root)
        m.addConstr(cones.U @ x - u == -cones.u_offset)
        m.addConstr(cones.V @ x - v == -cones.v_offset)
        m.addConstr(w * w <= u * v)
        m.Params.QCPDual = 1
    objective = model.c @ x + model.offset
    if model.log_terms is not None:
        terms = model.log_terms
        k = terms.weights.shape[0]
        u = m.addMVar(k, lb=1e-12)
        t = m.addMVar(k, lb=-GRB.INFINITY)
        m.addConstr(terms.G @ x - u == -terms.offset)
        for i in range(k):
            m.addConstr(t[i] == gp.nlfunc.log(u[i]))
        objective = objective + terms.weights @ t
    m.setObjective(objective, GRB.MAXIMIZE if model.sense == "max" else GRB.MINIMIZE)
    apply_options(m, options)
    if options.start is not None and model.is_mip:
        x.Start = np.asarray(options.start, dtype=float)
    if options.basis is not None:  # basis attributes of columns and rows not yet in the model are dropped
        m.update()
        x.VBasis, constraint_basis = gurobi_basis(options.basis, model, index, sense)
        if rows is not None:
            rows.CBasis = constraint_basis
    return m, x, rows, index


def gurobi_basis(basis: Basis, model: CanonicalModel, index: np.ndarray, sense: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``basis`` as Gurobi's ``VBasis`` (0 basic, -1 at lower, -2 at upper, -3 a free column at 0)
    and ``CBasis`` of the one-sided rows ``index`` / ``sense`` (:func:`split_rows`): -1 where the row
    sits at that row's side, else 0."""
    columns = np.select([basis.columns == BASIC, basis.columns == UPPER], [0, -2], -1)
    columns[(basis.columns == LOWER) & ~np.isfinite(model.col_lo)] = -3
    status = basis.rows[index]
    at_side = np.where(sense == "<", status == UPPER, np.where(sense == ">", status == LOWER, status != BASIC))
    return columns, np.where(at_side, -1, 0)


def apply_options(m, options: SolveOptions) -> None:
    """``options`` as the parameters of Gurobi model ``m`` (all but a MIP start)."""
    p = m.Params
    if options.threads is not None:
        p.Threads = options.threads
    if options.time_limit is not None:
        p.TimeLimit = options.time_limit
    if options.mip_gap is not None:
        p.MIPGap = options.mip_gap
    if options.node_limit is not None:
        p.NodeLimit = options.node_limit
    if options.seed is not None:
        p.Seed = options.seed
    if options.scaling is False:
        p.ScaleFlag = 0
    if options.method != "auto":
        p.Method = {"simplex": 1, "ipm": 2, "primal": 0}[options.method]
    if options.method == "primal":
        p.Presolve = 0
    if options.feasibility_tol is not None:
        p.FeasibilityTol = options.feasibility_tol
    if options.optimality_tol is not None:
        p.OptimalityTol = options.optimality_tol
    p.OutputFlag = int(options.verbose)
    for key, value in options.raw.items():
        m.setParam(key, value)


def read_status(m) -> Status:
    """The :class:`Status` of Gurobi model ``m``'s last optimize."""
    from gurobipy import GRB

    return {
        GRB.OPTIMAL: Status.OPTIMAL,
        GRB.INFEASIBLE: Status.INFEASIBLE,
        GRB.INF_OR_UNBD: Status.INFEASIBLE_OR_UNBOUNDED,
        GRB.UNBOUNDED: Status.UNBOUNDED,
        GRB.TIME_LIMIT: Status.TIME_LIMIT,
        GRB.SUBOPTIMAL: Status.FEASIBLE,
        GRB.ITERATION_LIMIT: Status.FEASIBLE,
        GRB.NODE_LIMIT: Status.FEASIBLE,
        GRB.SOLUTION_LIMIT: Status.FEASIBLE,
        GRB.INTERRUPTED: Status.FEASIBLE,
    }.get(m.Status, Status.ERROR)


def _read_result(m, x, rows, index, model: CanonicalModel, timings: Timings, spec: str, version: str) -> Result:
    import gurobipy as gp

    status = read_status(m)
    result = Result(
        status, spec, message=f"Gurobi status {m.Status}", timings=timings, solver_version=version
    )
    result.blocks = model.blocks
    if m.SolCount == 0:
        if status is Status.FEASIBLE:
            result.status = Status.ERROR
        return result
    values = np.asarray(x.X, dtype=float)
    result.x = values
    result.objective = model.objective_value(values)
    if model.is_mip or model.log_terms is not None:
        result.bound = float(m.ObjBound)
        result.iterations = int(m.NodeCount)
    else:
        result.iterations = int(m.IterCount + m.BarIterCount)
        if status is Status.OPTIMAL:
            result.bound = result.objective
            duals = np.zeros(model.num_rows)
            try:
                if rows is not None:
                    np.add.at(duals, index, np.asarray(rows.Pi, dtype=float))
            except gp.GurobiError as exc:  # QCP duals need an accurate barrier solution
                result.notes.append(f"no row duals: Gurobi computed no QCP duals ({exc})")
                return result
            result.row_duals = duals
            result.reduced_costs = model.c - transpose_times(model.A, duals)
    return result
