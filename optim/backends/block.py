"""``block``: schedopt's own methods for block-angular LPs: the Gavel family's programs, and any
LP of their shape (per-job blocks, a few coupling rows and linking columns, found from the
sparsity).

An LP of the assignment shape (:mod:`optim.assignment_lp`: one budget row per block, at most one
level row, capacity rows; total throughput, max-min fairness, makespan) is solved by the exact
price-directed method (:mod:`optim.price_directed`), at any size. Every other block-angular LP,
and one where that method gives up (its notes say so), is solved by the interior-point method
(:mod:`optim.block_lp`; ``block:ipm`` forces it): where equal blocks merge :data:`MERGE_GAIN`
times into at most :data:`~optim.block_lp.DENSE_MAX` columns, the merged LP with dense Newton
steps; otherwise every block is kept and the Newton steps eliminate them (:mod:`optim.block_schur`),
at a cost linear in the blocks. A model without that structure (equality rows, integers, cones,
one block), or one where the method stops short of its tolerance, is solved by Clarabel instead,
and the result says so in its notes and message."""

from __future__ import annotations

import numpy as np

from ..assignment_lp import AssignmentLP, assignment_structure, to_result, transposed_times
from ..block_lp import DENSE_MAX, aggregate, block_structure, solve_block
from ..block_schur import aligned
from ..canonical import CanonicalModel
from ..capabilities import Capability
from ..errors import CapabilityError
from ..options import SolveOptions
from ..price_directed import AssignmentSolution, NotSolved, solve_assignment
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
#: under ``auto``, the fewest blocks for the block methods (distinct or merged): below it every model
#: goes to Clarabel, the default before, so that no default-mode benchmark row moves (the traces of
#: ``benchmarks.gavel_fidelity`` and ``benchmarks.matrix`` have at most 195 jobs). The block methods
#: return other points of a wide optimal face: run at every size, the price-directed method's moved
#: 71 of the 384 default-mode rows of ``benchmarks.gavel_fidelity`` (average JCT -10 % to +32 %)
AUTO_MIN_BLOCKS = 256
#: under ``auto``, the fewest blocks for the interior-point path (a model without the assignment
#: shape): below, Clarabel is faster (max-min fairness at 256-4,096 distinct jobs)
AUTO_IPM_MIN_BLOCKS = 4096


class BlockBackend(Backend):
    """The block methods; ``auto``: what ``--solver auto`` runs for LP policies: the price-directed
    method on assignment-shaped models of at least :data:`AUTO_MIN_BLOCKS` blocks, the
    interior-point method on other block-angular models of at least :data:`AUTO_IPM_MIN_BLOCKS`;
    Clarabel on every other model (its own choice, so the
    result has no note of it, only the message); ``ipm``: the interior-point path only."""

    spec = "block"
    package = "numpy"

    def __init__(self, auto: bool = False, ipm: bool = False):
        self.auto, self.ipm = auto, ipm
        if auto:
            self.spec = "block:auto"
        elif ipm:
            self.spec = "block:ipm"

    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.LP, Capability.DUALS})

    def version(self) -> str:
        return VERSION

    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result:
        timings = Timings()
        with stopwatch(timings, "translate"):
            small = self.auto and model.num_vars < AUTO_MIN_BLOCKS
            shape = None if self.ipm or small else assignment_structure(model)
        fallback = None
        if shape is not None and (not self.auto or shape.shape[0] >= AUTO_MIN_BLOCKS):
            try:
                with stopwatch(timings, "solve"):
                    sol = solve_assignment(shape)
                return self._assignment_result(model, shape, sol, timings)
            except NotSolved as exc:
                fallback = str(exc)
        result = self._block_method(model, options, timings)
        if fallback is not None:
            by = "the interior-point method" if result.backend.startswith("block") else result.backend
            result.notes.insert(0, f"{fallback}; solved by {by} instead")
        return result

    def _assignment_result(self, model: CanonicalModel, shape: AssignmentLP, sol: AssignmentSolution,
                           timings: Timings) -> Result:
        """The price-directed method's answer as the model's :class:`Result`."""
        m = shape.shape[0]
        over = f"{m} blocks" if sol.classes is None else f"{sol.classes} classes of {m} blocks"
        how = (f"{sol.rounds} round(s), {sol.programs} reduced LP(s), working set up to {sol.largest}, over {over}"
               if sol.programs else f"no capacity binds, over {over}")
        result = Result(Status.OPTIMAL, self.spec, message=f"price-directed: {how}", timings=timings,
                        solver_version=VERSION, iterations=sol.rounds, blocks=model.blocks, notes=list(sol.notes))
        result.x, result.row_duals = to_result(shape, model, sol.x, sol.z, sol.y, sol.mu, sol.lam)
        result.objective = model.objective_value(result.x)
        result.bound = shape.sign * shape.level_cost * sol.bound + model.offset
        result.reduced_costs = model.c - transposed_times(shape, model, result.row_duals)
        return result

    def _block_method(self, model: CanonicalModel, options: SolveOptions, timings: Timings) -> Result:
        """The interior-point path (module docstring)."""
        try:
            with stopwatch(timings, "translate"):
                if self.auto and model.num_vars < AUTO_IPM_MIN_BLOCKS:
                    raise CapabilityError(f"block:auto: {model.num_vars} columns (the block method from "
                                          f"{AUTO_IPM_MIN_BLOCKS:,} blocks)")
                lp = block_structure(model)
                if lp.col_x.shape[0] < (AUTO_IPM_MIN_BLOCKS if self.auto else 2):
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
