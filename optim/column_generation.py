"""Column generation for LPs with many candidate columns, few of them useful.

The restricted master is the LP over the columns known so far, every candidate held at
its lower bound 0. With row duals ``y`` (sensitivity convention ``c = A.T y + r``) a held
column j improves a max problem iff ``r_j = c_j - A_j.T y > 0`` (``< 0`` for min). A
*pricer* maps ``y`` to improving columns; they join the master (a live model on HiGHS,
see :mod:`optim.backends.column_masters`) until the pricer finds none improving by more
than ``PRICING_TOL``. Then the master's solution, padded with zeros, is optimal for the
LP over all candidates, and ``y`` certifies it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

from .backends import Backend, get_backend
from .backends.column_masters import ColumnMaster, HighsColumnMaster, NewColumns
from .backends.highs import HighsBackend
from .canonical import CanonicalModel
from .capabilities import Capability
from .errors import ModelError
from .model import Model
from .options import SolveOptions
from .result import Result, Status, Timings
from .solve import solve
from .sparse import CscArrays, transpose_times
from .tally import add_solve

#: a held column must improve the objective by more than this per unit to be priced in
PRICING_TOL = 1e-7

#: the loop's clock (seconds)
_clock = time.perf_counter

#: ``pricer(row_duals) -> improving columns``, None when there is none
Pricer = Callable[[np.ndarray], NewColumns | None]


@dataclasses.dataclass
class Generation:
    """The last master's result (its ``x`` over the master's columns, then every added
    column in the order added; ``timings`` summed over all masters), the number of master
    LPs, and ``stopped``: why the loop ended early (None when it converged);
    ``timed_out``: it ended at ``options.time_limit`` (the last master's point, if it has
    one, is feasible for the full LP, not proven optimal)."""

    result: Result
    rounds: int
    stopped: str | None = None
    timed_out: bool = False


def generate_columns(master: CanonicalModel, pricer: Pricer, backend: Backend, options: SolveOptions,
                     max_rounds: int = 200) -> Generation:
    """Solve the master, price, add, repeat until ``pricer`` finds nothing (see module doc).

    Needs a backend with LP duals; a master that is not optimal ends the loop with the
    reason in ``stopped`` (the caller decides what to fall back to), and so does
    ``options.time_limit``, checked on the whole loop after each master.
    """
    if master.is_mip or master.log_terms is not None or master.hyperbolic is not None:
        raise ModelError(f"{master.name}: column generation needs a pure LP")
    if Capability.DUALS not in backend.capabilities():
        raise ModelError(f"{master.name}: column generation needs row duals; {backend.spec} returns none")
    lp = (HighsColumnMaster if isinstance(backend, HighsBackend) else ColumnMaster)(master, backend, options)
    total = Timings(build=master.build_seconds)
    started = _clock()
    for rounds in range(1, max_rounds + 1):
        result = lp.solve()
        result.first_order = backend.first_order
        add_solve(result.timings)
        total.translate += result.timings.translate
        total.solve += result.timings.solve
        result.timings = total
        if result.status is Status.TIME_LIMIT:
            return Generation(result, rounds, f"master {rounds} reached the time limit", timed_out=True)
        if result.status is not Status.OPTIMAL or result.row_duals is None:
            return Generation(result, rounds, f"master {rounds} is {result.status}")
        if options.time_limit is not None and _clock() - started > options.time_limit:
            return Generation(result, rounds, f"time limit of {options.time_limit:g} s reached after "
                              f"{rounds} master LPs", timed_out=True)
        columns = pricer(result.row_duals)
        if columns is None:
            return Generation(result, rounds)
        lp.add(columns)
    return Generation(result, max_rounds, f"no convergence in {max_rounds} rounds")


def solve_by_column_generation(
    model: Model | CanonicalModel,
    backend: str | Backend = "highs",
    options: SolveOptions | None = None,
    *,
    block: str,
    initial: np.ndarray,
    batch: int | None = None,
    max_rounds: int = 200,
) -> Result:
    """Solve the LP ``model`` pricing the columns of ``block`` in on demand.

    ``initial``: boolean mask over ``block`` (flattened) of the columns active from the
    start; the master over them must be feasible. ``batch``: columns added per round, the
    most improving first (default: twice the number of rows, at least 500). Falls back to
    one full solve (said in the notes) when the backend returns no duals or a master is not
    optimal.
    """
    canon = model.canonical() if isinstance(model, Model) else model
    options = options or SolveOptions()
    be = get_backend(backend) if isinstance(backend, str) else backend
    cols = canon.blocks[block].columns
    initial = np.asarray(initial, dtype=bool).reshape(-1)
    if initial.shape != (cols.stop - cols.start,):
        raise ModelError(f"{canon.name}: initial mask has {initial.size} entries, block {block!r} has "
                         f"{cols.stop - cols.start}")
    if np.any(canon.col_lo[cols] != 0):
        raise ModelError(f"{canon.name}: column generation needs lower bounds 0 on block {block!r}")
    if Capability.DUALS not in be.capabilities():
        result = solve(canon, be, options)
        result.notes.append(f"column generation skipped: {be.spec} returns no duals; solved the full LP")
        return result
    held = np.zeros(canon.num_vars, dtype=bool)
    held[cols] = ~initial & (canon.col_hi[cols] > 0)
    fixed_at_zero = np.zeros(canon.num_vars, dtype=bool)
    fixed_at_zero[cols] = canon.col_hi[cols] <= 0
    order = [np.flatnonzero(~held & ~fixed_at_zero)]
    sign = 1.0 if canon.sense == "max" else -1.0
    batch = batch or max(500, 2 * canon.num_rows)

    def price(y: np.ndarray) -> NewColumns | None:
        reduced = sign * (canon.c - transpose_times(canon.A, y))
        candidates = np.flatnonzero(held & (reduced > PRICING_TOL))
        if candidates.size == 0:
            return None
        if candidates.size > batch:
            candidates = candidates[np.argpartition(-reduced[candidates], batch)[:batch]]
        held[candidates] = False
        order.append(candidates)
        return NewColumns(canon.A.scipy()[:, candidates], canon.c[candidates], canon.col_hi[candidates])

    gen = generate_columns(_restrict(canon, order[0]), price, be, options, max_rounds)
    if gen.stopped is not None and not gen.timed_out:
        gen.result.raise_for_status()  # a license refusal or solver error: the full LP would meet it too
        result = solve(canon, be, options)
        result.notes.append(f"column generation stopped ({gen.stopped}); solved the full LP")
        return result
    master = gen.result
    if not master.has_solution:
        master.notes.append(f"column generation stopped ({gen.stopped}) without a point")
        return dataclasses.replace(master, blocks=canon.blocks)
    x = np.zeros(canon.num_vars)
    x[np.concatenate(order)] = master.x
    active = int((~held & ~fixed_at_zero)[cols].sum())
    note = (f"column generation: {gen.rounds} master LPs, {active} of {cols.stop - cols.start} columns of block "
            f"{block!r} priced in")
    if gen.timed_out:
        return dataclasses.replace(master, status=Status.TIME_LIMIT, x=x, bound=None, blocks=canon.blocks,
                                   row_duals=None, reduced_costs=None, objective=canon.objective_value(x),
                                   notes=[*master.notes, f"{note}; {gen.stopped}: feasible, not proven optimal"])
    return dataclasses.replace(
        master, x=x, reduced_costs=canon.c - transpose_times(canon.A, master.row_duals), blocks=canon.blocks,
        objective=canon.objective_value(x), notes=[*master.notes, note],
    )


def _restrict(model: CanonicalModel, keep: np.ndarray) -> CanonicalModel:
    return dataclasses.replace(
        model, c=model.c[keep], A=CscArrays.of(model.A.scipy()[:, keep]), col_lo=model.col_lo[keep],
        col_hi=model.col_hi[keep], integrality=model.integrality[keep], blocks={},
    )
