"""Gavel's programs laid out as its cvxpy code hands them to ECOS, for ``--gavel-compat``.

Where the optimal face (or, for a feasibility program, the feasible set) is wide, an
interior-point solver returns a point inside it that depends on the program's exact data:
the order of columns and rows, and every coefficient to the last bit (the published
mechanism ranks jobs by allocation / share, so shares of order 1e-10 where a job gets
"nothing" decide who takes spare GPUs). A model built here, solved by ``ecos`` (whose conic
form of it is cvxpy's ECOS data, array for array), gives the published point exactly.

The layout: jobs by id, worker types by name; ``x`` column-major over them, free (its sign is
a row); after any columns a policy puts first, the rows, all ``<=``, in the published order
``-x <= 0``, ``sum_i s_i x_ij <= W_j``, ``sum_j x_ij <= 1``. cvxpy drops zero coefficients,
and so does :meth:`optim.Model.canonical`.
"""

from __future__ import annotations

import numpy as np

from optim import CsrArrays, Model, Result, VarBlock

from .problem import AllocationProblem
from .rates import runnable

#: the note of an allocation solved in the published layout
NOTE = ("the published program and layout (a column on every (job, type) cell), as Gavel's cvxpy code hands "
        "it to ECOS; shares where a job cannot run given back")


def published_order(problem: AllocationProblem) -> tuple[np.ndarray, np.ndarray]:
    """Job rows by job id and worker types by name."""
    return np.argsort(problem.job_ids, kind="stable"), np.argsort(problem.worker_types, kind="stable")


def add_allocation(model: Model, problem: AllocationProblem) -> VarBlock:
    """``x``: free, column-major over jobs by id and types by name."""
    return model.add_variables("x", problem.num_jobs * problem.num_types, lb=-np.inf)


def add_base_rows(model: Model, x: VarBlock, problem: AllocationProblem) -> None:
    """The published base rows over ``x``, in the published order (after the objective's rows
    where the objective has some, as cvxpy puts an epigraph's rows first)."""
    jobs, types = published_order(problem)
    m, n = jobs.size, types.size
    cells = np.arange(m * n)
    model.add_rows("nonnegative", {x: CsrArrays(np.full(m * n, -1.0), cells, np.arange(m * n + 1), (m * n, m * n))},
                   hi=0.0)
    scale = np.tile(problem.scale_factors[jobs].astype(float), n)
    model.add_rows("capacity", {x: CsrArrays(scale, cells, np.arange(0, m * n + 1, m), (n, m * n))},
                   hi=problem.capacities[types].astype(float))
    model.add_rows("time", {x: per_job(np.ones((m, n)))}, hi=1.0)


def per_job(values: np.ndarray) -> CsrArrays:
    """(m, m n): row i holds ``values[i, j]`` at job i's cells of a column-major ``x``."""
    m, n = values.shape
    return CsrArrays(values.reshape(-1), (np.arange(m)[:, None] + m * np.arange(n)[None, :]).reshape(-1),
                     np.arange(0, m * n + 1, n), (m, m * n))


def published_allocation(problem: AllocationProblem, result: Result) -> np.ndarray:
    """(m, n) in the problem's order from a published-layout solution, clipped to [0, 1] as the
    published code does; 0 where a job cannot run (time the published mechanism never uses)."""
    jobs, types = published_order(problem)
    x = np.zeros(problem.throughputs.shape)
    x[np.ix_(jobs, types)] = result.value("x").reshape(jobs.size, types.size, order="F")
    return np.where(runnable(problem), x.clip(0.0, 1.0), 0.0)
