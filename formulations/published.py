"""Gavel's programs laid out as its cvxpy code hands them to ECOS, for ``--gavel-compat``.

Where the optimal face (or, for a feasibility program, the feasible set) is wide, an
interior-point solver returns a point inside it that depends on the program's exact data:
the order of columns and rows, and every coefficient to the last bit (the published
mechanism ranks jobs by allocation / share, so shares of order 1e-10 where a job gets
"nothing" decide who takes spare GPUs). A program built here, solved by ``ecos`` (whose conic
form of it is cvxpy's ECOS data, array for array), gives the published point exactly.

The layout (:func:`layout`): jobs by id, worker types by name; ``x`` column-major over them and
free (its sign is a row), after an epigraph column ``t`` where the objective is a minimum; rows,
all ``<=``, in cvxpy's order: the epigraph's ``-t - c_i . x_i <= 0``, then ``-x <= 0``,
``sum_i s_i x_ij <= W_j``, ``sum_j x_ij <= 1``, then any further rows ``a_i . x_i <= h_i``; no
zero coefficients (cvxpy drops them). The data is that of a fixed pattern, so it is assembled as
arrays, column by column, rather than through :class:`optim.Model`.
"""

from __future__ import annotations

import time

import numpy as np

from optim import CanonicalModel, CscArrays, HyperbolicCones, Result, VarBlock, VarType
from optim.sparse import scipy_sparse as sp
from optim.tally import add_build

from .problem import AllocationProblem
from .rates import runnable

#: the note of an allocation solved in the published layout
NOTE = ("the published program and layout (a column on every (job, type) cell), as Gavel's cvxpy code hands "
        "it to ECOS; shares where a job cannot run given back")


def published_order(problem: AllocationProblem) -> tuple[np.ndarray, np.ndarray]:
    """Job rows by job id and worker types by name."""
    names = problem.worker_types
    return (np.argsort(problem.job_ids, kind="stable"),
            np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64))


def layout(problem: AllocationProblem, name: str, order: tuple[np.ndarray, np.ndarray], *,
           epigraph: np.ndarray | None = None,
           objective: np.ndarray | None = None, after: np.ndarray | None = None,
           after_hi: np.ndarray | None = None,
           reciprocal: tuple[np.ndarray, tuple[np.ndarray, np.ndarray]] | None = None
           ) -> CanonicalModel:
    """The program in the published layout, (m, n) arrays in the published ``order`` (jobs by id,
    types by name, :func:`published_order`): ``epigraph`` c (maximize ``min_i c_i . x_i`` as cvxpy
    does: minimize ``t`` over rows ``-t - c_i . x_i <= 0``), else maximize ``objective . x`` (0: a
    feasibility program); ``after`` (rows ``after_i . x_i <= after_hi_i`` after the base rows).
    ``reciprocal = (T, (a, b))``: minimize ``max_i a_i / (T_i . x_i) - b_i`` as cvxpy does for
    ``maximum`` of ``inv_pos`` terms: columns ``t, x, u``, rows ``-t + a_i u_i <= b_i`` first, and
    after every row one rotated cone ``(T_i . x_i) u_i >= 1`` per job, ``(T_i . x_i + u_i,
    T_i . x_i - u_i, 2)``."""
    start = time.perf_counter()
    jobs, types = order
    m, n = jobs.size, types.size
    cells = m * n
    k = np.arange(cells)
    job, kind = k % m, k // m
    if reciprocal is not None:
        epigraph = np.zeros((m, n))
    lead = 0 if epigraph is None else 1
    first = lead * m  # rows before the base rows
    base = first + cells + n + m
    rows = np.empty((cells, 5), dtype=np.int64)  # per column: epigraph, sign, capacity, time, after row
    rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], rows[:, 4] = job, first + k, first + cells + kind, \
        first + cells + n + job, base + job
    values = np.empty((cells, 5))
    values[:, 0] = 0.0 if epigraph is None else -epigraph.reshape(-1, order="F")
    values[:, 1], values[:, 2], values[:, 3] = -1.0, problem.scale_factors[jobs].astype(float)[job], 1.0
    values[:, 4] = 0.0 if after is None else after.reshape(-1, order="F")
    keep = values != 0.0
    indptr = np.zeros(lead + cells + 1, dtype=np.int32)
    indptr[1] = lead * m
    np.cumsum(3 + keep[:, 0] + keep[:, 4], out=indptr[lead + 1:])  # scale factors are >= 1
    indptr[lead + 1:] += lead * m
    indices = np.concatenate([np.arange(lead * m), rows[keep]]).astype(np.int32)
    data = np.concatenate([np.full(lead * m, -1.0), values[keep]])
    num_rows = base + (0 if after is None else m)
    hi = [np.zeros(first + cells), problem.capacities[types].astype(float), np.ones(m)]
    if after is not None:
        hi.append(np.asarray(after_hi, dtype=float))
    tail, cones = 0, None
    if reciprocal is not None:  # one column u_i per job after x, in its epigraph row
        rates, (a, b) = reciprocal
        tail = m
        keep = a != 0.0
        indptr = np.concatenate([indptr, indptr[-1] + np.cumsum(keep)]).astype(np.int32)
        indices = np.concatenate([indices, np.arange(m, dtype=np.int32)[keep]])
        data = np.concatenate([data, a[keep]])
        hi[0] = np.concatenate([b, hi[0][m:]])
        cones = _reciprocal_cones(rates, lead + cells, m)
    columns = lead + cells + tail
    c = np.zeros(columns)
    if epigraph is not None:
        c[0] = 1.0
    elif objective is not None:
        c[:] = objective.reshape(-1, order="F")
    blocks = {"x": VarBlock("x", lead, (cells,), VarType.CONTINUOUS)}
    if lead:
        blocks = {"t": VarBlock("t", 0, (1,), VarType.CONTINUOUS), **blocks}
    if tail:
        blocks["u"] = VarBlock("u", lead + cells, (tail,), VarType.CONTINUOUS)
    row_blocks = {"nonnegative": slice(first, first + cells), "capacity": slice(first + cells, first + cells + n),
                  "time": slice(first + cells + n, base)}
    if lead:
        row_blocks = {"epigraph": slice(0, m), **row_blocks}
    if after is not None:
        row_blocks["after"] = slice(base, num_rows)
    model = CanonicalModel(
        name=f"{name} (published layout)", sense="min" if lead else "max", c=c, offset=0.0,
        A=CscArrays(data, indices, indptr, (num_rows, columns)), row_lo=np.full(num_rows, -np.inf),
        row_hi=np.concatenate(hi), col_lo=np.full(columns, -np.inf), col_hi=np.full(columns, np.inf),
        integrality=np.zeros(columns, dtype=bool), log_terms=None, blocks=blocks, row_blocks=row_blocks,
        build_seconds=time.perf_counter() - start, hyperbolic=cones)
    add_build(model.build_seconds)
    return model


def _reciprocal_cones(rates: np.ndarray, first_tail: int, m: int) -> HyperbolicCones:
    """``(T_i . x_i) u_i >= 1`` over column-major ``x`` (from column 1) and ``u`` (from ``first_tail``)."""
    n = rates.shape[1]
    columns = first_tail + m
    cells = 1 + np.arange(m)[:, None] + m * np.arange(n)[None, :]
    keep = rates != 0.0
    U = sp.csr_matrix((rates[keep], (np.repeat(np.arange(m), n).reshape(m, n)[keep], cells[keep])), shape=(m, columns))
    V = sp.csr_matrix((np.ones(m), (np.arange(m), first_tail + np.arange(m))), shape=(m, columns))
    return HyperbolicCones(U, np.zeros(m), V, np.zeros(m), np.ones(m))


def published_allocation(problem: AllocationProblem, result: Result) -> np.ndarray:
    """(m, n) in the problem's order from a published-layout solution, clipped to [0, 1] as the
    published code does; 0 where a job cannot run (time the published mechanism never uses)."""
    jobs, types = published_order(problem)
    x = np.empty(problem.throughputs.shape)
    x[jobs] = result.value("x").reshape(jobs.size, types.size, order="F")[:, np.argsort(types)]
    return np.where(runnable(problem), x.clip(0.0, 1.0), 0.0)
