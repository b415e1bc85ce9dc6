"""``block``: schedopt's own interior-point method for block-angular LPs (:mod:`optim.block_lp`):
the Gavel family's programs, and any LP of their shape (per-job blocks, a few coupling rows and
linking columns, found from the sparsity).

Where equal blocks merge :data:`MERGE_GAIN` times into at most :data:`~optim.block_lp.DENSE_MAX`
columns, the merged LP is solved with dense Newton steps; otherwise every block is kept and the
Newton steps eliminate them (:mod:`optim.block_schur`), at a cost linear in the blocks. A model
without that structure (equality rows, integers, cones, one block), or one where the method stops
short of its tolerance, is solved by Clarabel instead, and the result says so in its notes and
message."""

from __future__ import annotations

import numpy as np

from ..block_lp import DENSE_MAX, aggregate, block_structure, solve_block
from ..block_schur import aligned
from ..canonical import CanonicalModel
from ..capabilities import Capability
from ..errors import CapabilityError
from ..options import SolveOptions
from ..result import Result, Status, Timings
from ..sparse import transpose_times
from .base import Backend, stopwatch
from .clarabel import ClarabelBackend

VERSION = "1"
#: the dense Newton steps on merged blocks beat the eliminating ones only on a model merging shrinks
#: this much
MERGE_GAIN = 2
#: the method's default relative tolerance (residuals and gap)
TOL = 1e-8
#: the fewest distinct blocks the eliminating steps take on: below, Clarabel's sparse factorization
#: is faster (max-min fairness of 1,024 distinct jobs: 82-94 ms against 84-87 ms; of 256: 62-74 against
#: 12-14 ms; benchmarks/README.md, "Versus the published Gavel code")
ELIMINATE_MIN_BLOCKS = 1024
#: under ``auto``, the fewest blocks for the block method (distinct or merged): below it every model
#: goes to Clarabel, the default before, so that no simulation of the published traces (at most a
#: few hundred jobs at a time) moves; at 4,096 distinct jobs and more the block method is faster
AUTO_MIN_BLOCKS = 4096


class BlockBackend(Backend):
    """The block method; ``auto``: what ``--solver auto`` runs for LP policies: the block method on
    block-angular models of at least :data:`AUTO_MIN_BLOCKS` blocks, Clarabel on every other model
    (its own choice, so the result has no note of it, only the message)."""

    spec = "block"
    package = "numpy"

    def __init__(self, auto: bool = False):
        self.auto = auto
        if auto:
            self.spec = "block:auto"

    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.LP, Capability.DUALS})

    def version(self) -> str:
        return VERSION

    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result:
        timings = Timings()
        try:
            with stopwatch(timings, "translate"):
                if self.auto and model.num_vars < AUTO_MIN_BLOCKS:
                    raise CapabilityError(f"block:auto: {model.num_vars} columns (the block method from "
                                          f"{AUTO_MIN_BLOCKS:,} blocks)")
                lp = block_structure(model)
                if lp.col_x.shape[0] < (AUTO_MIN_BLOCKS if self.auto else 2):
                    raise CapabilityError(f"block: {lp.col_x.shape[0]} blocks" if self.auto else
                                          "block: the model is not block-angular (one block)")
                merged = aggregate(lp) if _may_merge(lp) else None
                size = merged.col_x.size + merged.col_y.size if merged is not None else model.num_vars
                if merged is not None and size <= DENSE_MAX and MERGE_GAIN * size <= model.num_vars:
                    lp = merged
                else:
                    if lp.col_x.shape[0] < ELIMINATE_MIN_BLOCKS:
                        raise CapabilityError(f"block: {lp.col_x.shape[0]} distinct blocks (Clarabel is faster below "
                                              f"{ELIMINATE_MIN_BLOCKS:,})")
                    lp = aligned(lp)
            with stopwatch(timings, "solve"):
                sol = solve_block(lp, tol=options.optimality_tol or TOL)
        except CapabilityError as exc:
            return _by_clarabel(model, options, str(exc), note=not self.auto)
        if not sol.converged:
            return _by_clarabel(model, options, f"block: stopped after {sol.iterations} iterations (residuals "
                                f"{sol.primal_residual:.1e} / {sol.dual_residual:.1e})", note=True)
        what = "classes" if lp.classes is not None else "blocks"
        result = Result(Status.OPTIMAL, self.spec, message=f"block: converged in {sol.iterations} iterations over "
                        f"{lp.col_x.shape[0]} {what}", timings=timings, solver_version=VERSION,
                        iterations=sol.iterations, blocks=model.blocks)
        result.x = np.asarray(sol.x, dtype=float)
        result.objective = model.objective_value(result.x)
        result.bound = sol.bound + model.offset
        result.row_duals = sol.row_duals
        result.reduced_costs = model.c - transpose_times(model.A, sol.row_duals)
        return result


def _by_clarabel(model: CanonicalModel, options: SolveOptions, reason: str, note: bool) -> Result:
    """Clarabel's result for ``model``, its message saying why; a note too where it stands in for
    the block method (not where ``auto`` chose it by the model's shape)."""
    result = ClarabelBackend().solve(model, options)
    if note:
        result.notes.append(f"{reason}; solved by clarabel")
    result.message = f"{result.message} ({reason}; solved by clarabel)"
    return result


def _may_merge(lp) -> bool:
    """Whether merging may shrink ``lp`` :data:`MERGE_GAIN` times: equal blocks have equal random
    projections of their costs and rows, so fewer distinct projections than that bound the classes
    from below (a cheap test before :func:`~optim.block_lp.aggregate`'s sort of whole blocks)."""
    B = lp.col_x.shape[0]
    rng = np.random.default_rng(0)
    data = np.concatenate([np.nan_to_num(lp.cx), np.nan_to_num(lp.Ab.reshape(B, -1)),
                           np.nan_to_num(lp.bhi, posinf=1e300, neginf=-1e300)], axis=1)
    projection = data @ rng.standard_normal(data.shape[1])
    return MERGE_GAIN * np.unique(projection).size <= B
