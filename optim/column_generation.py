"""Column generation for LPs with many candidate columns, few of them useful.

The restricted master is the LP over all columns outside ``block`` plus an active subset
of ``block``'s columns (the rest held at their lower bound 0). With row duals ``y``
(sensitivity convention ``c = A.T y + r``) a held column j improves a max problem iff
``r_j = c_j - A_j.T y > 0`` (``< 0`` for min). Pricing is one sparse product over all
candidates; the most improving ones join the master until none improves by more than
``tol``. Then the master's solution, padded with zeros, is optimal for the full LP, and
its duals certify it there (``lp_certificate`` on the full model).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .backends import Backend, get_backend
from .capabilities import Capability
from .errors import ModelError
from .model import CanonicalModel, Model
from .options import SolveOptions
from .result import Result, Status, Timings
from .solve import solve

#: a held column must improve the objective by more than this per unit to be priced in
PRICING_TOL = 1e-7


def _restrict(model: CanonicalModel, keep: np.ndarray) -> CanonicalModel:
    return dataclasses.replace(
        model, c=model.c[keep], A=model.A[:, keep], col_lo=model.col_lo[keep], col_hi=model.col_hi[keep],
        integrality=model.integrality[keep], blocks={},
    )


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
    start; the master over them must be feasible. ``batch``: columns added per round
    (default: twice the number of rows, at least 500). Falls back to one full solve (said
    in the notes) when the backend returns no duals or a master is not optimal.
    """
    canon = model.canonical() if isinstance(model, Model) else model
    options = options or SolveOptions()
    be = get_backend(backend) if isinstance(backend, str) else backend
    if canon.is_mip or canon.log_terms is not None or canon.hyperbolic is not None:
        raise ModelError(f"{canon.name}: column generation needs a pure LP")
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
    sign = 1.0 if canon.sense == "max" else -1.0
    batch = batch or max(500, 2 * canon.num_rows)
    total = Timings(build=canon.build_seconds)
    for rounds in range(1, max_rounds + 1):
        keep = np.flatnonzero(~held & ~fixed_at_zero)
        master = solve(_restrict(canon, keep), be, options)
        total.translate += master.timings.translate
        total.solve += master.timings.solve
        if master.status is not Status.OPTIMAL or master.row_duals is None:
            result = solve(canon, be, options)
            result.notes.append(f"column generation stopped in round {rounds} (master {master.status}); "
                                "solved the full LP")
            return result
        reduced = sign * (canon.c - canon.A.T @ master.row_duals)
        candidates = np.flatnonzero(held & (reduced > PRICING_TOL))
        if candidates.size == 0:
            break
        if candidates.size > batch:
            candidates = candidates[np.argpartition(-reduced[candidates], batch)[:batch]]
        held[candidates] = False
    else:
        raise ModelError(f"{canon.name}: column generation did not converge in {max_rounds} rounds")
    x = np.zeros(canon.num_vars)
    x[keep] = master.x
    active = int((~held & ~fixed_at_zero)[cols].sum())
    return dataclasses.replace(
        master, x=x, reduced_costs=canon.c - canon.A.T @ master.row_duals, timings=total, blocks=canon.blocks,
        notes=[*master.notes, (f"column generation: {rounds} master LPs, {active} of {cols.stop - cols.start} "
                               f"columns of block {block!r} priced in")],
    )

