"""A live Gurobi LP changed in place by deltas (:mod:`optim.delta`) and re-solved warm.

The delta is applied literally: dropped columns and rows are removed, new ones added,
and costs, bounds, row sides and coefficients changed; Gurobi then decides whether the
last basis is worth keeping. Counted on a 500-job max-min LP: after an arrival it
re-optimizes from the basis (4 simplex iterations against 190 cold); after a departure
it solves afresh (190 iterations, as cold), and keeping the departed job's columns and
rows inert instead (fixed at 0, non-binding), as :mod:`.highs_live` does, took more
(355 iterations), so they are removed. Gurobi has no ranged rows: a row
with two finite, distinct sides is two one-sided constraints (as in
:func:`.base.split_rows`); a row whose sides change is replaced whole. The calls that
change single coefficients loop over the delta's entries, which is the size of the
change, not of the model.
"""

from __future__ import annotations

import numpy as np

from ..canonical import CanonicalModel
from ..delta import ModelDelta
from ..options import SolveOptions
from ..result import Result, Status, Timings
from ..sparse import transpose_times
from .base import LiveModel, one_sided, stopwatch
from .gurobi import PIP_LICENSE_LIMITS, SIZE_LIMITED_LICENSE, apply_options, env, read_status


def _objects(items: list) -> np.ndarray:
    """``items`` (gurobipy objects) as a 1-D object array."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class GurobiLive(LiveModel):
    """One gurobipy model held between solves; ``_vars[i]`` is the model's column i and
    ``_rows[i]`` the constraints (none, one or two) of its row i."""

    def __init__(self, options: SolveOptions, spec: str = "gurobi", version: str = ""):
        self.options = options
        self.spec = spec
        self.version = version
        self._gurobi = None
        self._vars = np.zeros(0, dtype=object)
        self._rows: list[tuple] = []

    def load(self, model: CanonicalModel) -> Result:
        import gurobipy as gp

        timings = Timings()
        self._gurobi = self.model = None
        try:
            with stopwatch(timings, "translate"):
                m = gp.Model(model.name, env=env())
                x = m.addMVar(model.num_vars, lb=model.col_lo, ub=model.col_hi, obj=model.c)
                m.ModelSense = -1 if model.sense == "max" else 1
                m.ObjCon = model.offset
                apply_options(m, self.options)
                m.update()
                self._gurobi, self._vars = m, _objects(x.tolist())
                self._rows = [()] * model.num_rows
                self._add_rows(model, np.arange(model.num_rows))
            return self._optimize(model, timings)
        except gp.GurobiError as exc:
            self._gurobi = None
            return self._refused(exc, model, timings)

    def update(self, delta: ModelDelta, model: CanonicalModel) -> Result:
        import gurobipy as gp

        if self.model is None:
            raise RuntimeError("GurobiLive.update needs a model loaded first")
        timings = Timings()
        try:
            with stopwatch(timings, "translate"):
                self._apply(delta, model)
            return self._optimize(model, timings)
        except gp.GurobiError as exc:
            self._gurobi = self.model = None
            return self._refused(exc, model, timings)

    def _optimize(self, model: CanonicalModel, timings: Timings) -> Result:
        m = self._gurobi
        with stopwatch(timings, "solve"):
            m.optimize()
        self.model = model
        result = Result(read_status(m), self.spec, message=f"Gurobi status {m.Status}", timings=timings,
                        solver_version=self.version)
        result.blocks = model.blocks
        if m.SolCount == 0:
            if result.status is Status.FEASIBLE:
                result.status = Status.ERROR
            return result
        result.x = np.asarray(m.getAttr("X", self._vars.tolist()), dtype=float) if model.num_vars else np.zeros(0)
        result.objective = model.objective_value(result.x)
        result.iterations = int(m.IterCount + m.BarIterCount)
        if result.status is Status.OPTIMAL:
            result.bound = result.objective
            owner = np.array([i for i, cons in enumerate(self._rows) for _ in cons], dtype=np.int64)
            constraints = [c for cons in self._rows for c in cons]
            duals = np.zeros(model.num_rows)
            if constraints:
                np.add.at(duals, owner, np.asarray(m.getAttr("Pi", constraints), dtype=float))
            result.row_duals = duals
            result.reduced_costs = model.c - transpose_times(model.A, duals)
        return result

    def _refused(self, exc, model: CanonicalModel, timings: Timings) -> Result:
        if exc.errno == SIZE_LIMITED_LICENSE:
            return Result(Status.LICENSE_LIMIT, self.spec, timings=timings, solver_version=self.version,
                          message=(f"gurobi: the size-limited license refused this model ({model.num_vars} "
                                   f"variables, {model.num_rows} rows; {PIP_LICENSE_LIMITS}): {exc}"))
        return Result(Status.ERROR, self.spec, message=f"Gurobi error {exc.errno}: {exc}", timings=timings)

    def _add_rows(self, model: CanonicalModel, rows: np.ndarray) -> None:
        """Add ``model``'s rows ``rows`` over the held columns (in ``model``'s order)."""
        import gurobipy as gp

        index, sense, rhs = one_sided(model.row_lo[rows], model.row_hi[rows])
        if index.size == 0:
            return
        block = model.A.scipy().tocsr()[rows[index]]
        added = self._gurobi.addMConstr(block, gp.MVar.fromlist(self._vars.tolist()), sense, rhs).tolist()
        grouped: dict[int, list] = {}
        for k, constraint in zip(rows[index].tolist(), added):
            grouped.setdefault(k, []).append(constraint)
        for k, constraints in grouped.items():
            self._rows[k] = tuple(constraints)

    def _apply(self, d: ModelDelta, new: CanonicalModel) -> None:
        """Turn the held model into ``new`` by ``d`` (module doc)."""
        m, old_rows = self._gurobi, self._rows
        replaced = d.new_rows[d.sides]
        gone = [c for i in np.concatenate([d.drop_rows, d.old_rows[d.sides]]).tolist() for c in old_rows[i]]
        m.remove(self._vars[d.drop_cols].tolist() + gone)
        variables = np.empty(new.num_vars, dtype=object)
        variables[d.new_cols] = self._vars[d.old_cols]
        if d.add_cols.size:
            added = m.addMVar(d.add_cols.size, lb=new.col_lo[d.add_cols], ub=new.col_hi[d.add_cols],
                              obj=new.c[d.add_cols])
            variables[d.add_cols] = _objects(added.tolist())
        self._vars = variables
        rows: list[tuple] = [()] * new.num_rows
        for k_old, k_new in zip(d.old_rows.tolist(), d.new_rows.tolist()):
            rows[k_new] = old_rows[k_old]
        for i in replaced.tolist():
            rows[i] = ()
        self._rows = rows
        kept = np.ones(new.num_rows, dtype=bool)
        kept[d.add_rows] = False
        kept[replaced] = False
        if d.add_cols.size:  # the new columns' entries in rows that stay
            block = new.A.scipy()[:, d.add_cols].tocoo()
            stay = kept[block.row]
            self._set_coefficients(block.row[stay], d.add_cols[block.col[stay]], block.data[stay])
        self._set_coefficients(d.new_rows[d.coef_rows], d.new_cols[d.coef_cols], d.coef_values, kept)
        if d.cost.size:
            at = d.new_cols[d.cost]
            m.setAttr("Obj", variables[at].tolist(), new.c[at].tolist())
        if d.bounds.size:
            at = d.new_cols[d.bounds]
            m.setAttr("LB", variables[at].tolist(), new.col_lo[at].tolist())
            m.setAttr("UB", variables[at].tolist(), new.col_hi[at].tolist())
        m.update()
        self._add_rows(new, np.sort(np.concatenate([d.add_rows, replaced])))
        if d.sense_changed:
            m.ModelSense = -1 if new.sense == "max" else 1
        if d.offset_changed:
            m.ObjCon = new.offset

    def _set_coefficients(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray,
                          kept: np.ndarray | None = None) -> None:
        """Coefficient (row, col) = value in every constraint of the row (rows not ``kept``
        are skipped: they are added whole)."""
        m, variables = self._gurobi, self._vars
        for r, c, v in zip(rows.tolist(), cols.tolist(), values.tolist()):
            if kept is not None and not kept[r]:
                continue
            for constraint in self._rows[r]:
                m.chgCoeff(constraint, variables[c], v)
