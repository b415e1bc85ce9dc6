"""The columns of every Gavel program: job combinations times worker types.

A combination c is a single job or (space sharing) a pair of jobs with equal scale
factor; ``x[c, j]`` is the fraction of wall time c runs on s_c GPUs of type j. Every
program shares the base rows

    sum_c s_c x_cj <= W_j                (capacity of type j)
    sum_{c ∋ i} sum_j x_cj <= 1          (time budget of job i)
    x_cj >= 0,  x_cj = 0 where c cannot run on j     (x_cj <= 1 follows)

and reads job i's throughput as the linear map ``thr_i = (E vec(x))_i`` with
``E[i, c·n + j]`` = job i's rate inside c on type j. Everything is a scipy.sparse block:
the packed space has m + P columns per type, never m².
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from optim import AssignmentLayout, CanonicalModel, CscArrays, CsrArrays, Model, ModelError, Result, VarBlock, VarType
from optim.sparse import expand_pointers
from optim.sparse import scipy_sparse as sp
from optim.tally import add_build

from .classes import MergedProblem
from .problem import Allocation, AllocationProblem
from .rates import pair_runnable, runnable


def multiplicity(problem: AllocationProblem) -> np.ndarray:
    """Jobs behind each row of ``problem``: a merged problem's class sizes, else ones."""
    return problem.counts if isinstance(problem, MergedProblem) else np.ones(problem.num_jobs)


@dataclass(frozen=True)
class Combinations:
    """``incidence`` (m, C): job i belongs to c; ``rate_arrays`` (m, C·n): the map E
    above (``rates`` as a scipy matrix); ``scale`` (C,): GPUs per combination; ``runnable``
    (C, n). Rows m.. of x are ``problem.pairs`` in order (packed spaces only)."""

    problem: AllocationProblem
    incidence: CsrArrays
    rate_arrays: CsrArrays
    scale: np.ndarray
    runnable: np.ndarray

    @cached_property
    def rates(self) -> sp.csr_matrix:
        return self.rate_arrays.to_csr()

    @property
    def num_combinations(self) -> int:
        return int(self.scale.shape[0])

    def add_allocation(self, model: Model, name: str = "x") -> VarBlock:
        """The variables ``x`` (C, n) with the base rows. A runnable cell has no upper bound
        of its own: ``x <= 1`` is implied by the time budget, and leaving it out (as Gavel's
        programs do) keeps the model smaller and moves the interior point an interior-point
        solver returns to the one the published simulator's ECOS returned. Keys (for warm
        re-solves, :mod:`optim.delta`): job ids for the time budgets and for x's rows when
        they are the single jobs alone, worker types for the capacities."""
        C, n = self.num_combinations, self.problem.num_types
        job_ids = self.problem.job_ids
        x = model.add_variables(name, (C, n), lb=0.0, ub=np.where(self.runnable, np.inf, 0.0),
                                keys=job_ids if C == job_ids.shape[0] else None)
        gpus = self.scale * multiplicity(self.problem) if C == job_ids.shape[0] else self.scale.astype(float)
        capacity = CsrArrays(np.tile(gpus, n), _cells(n, np.arange(C)).reshape(C, n).T.ravel(),
                             np.arange(0, n * C + 1, C), (n, C * n))
        model.add_rows("capacity", {x: capacity}, hi=self.problem.capacities, keys=np.array(self.problem.worker_types))
        inc = self.incidence
        per_type = CsrArrays(np.repeat(inc.data, n), _cells(n, inc.indices), inc.indptr * n, (inc.shape[0], C * n))
        model.add_rows("time_budget", {x: per_type}, hi=1.0, keys=job_ids)
        return x

    def throughput_rows(self, row_scale: np.ndarray | None = None) -> CsrArrays:
        """``diag(row_scale) E``: job i's (scaled) throughput as a row over ``vec(x)``."""
        r = self.rate_arrays
        if row_scale is None:
            return r
        return r._replace(data=r.data * np.broadcast_to(row_scale, (r.shape[0],))[expand_pointers(r.indptr)])

    def throughput_map(self, row_scale: np.ndarray | None = None) -> sp.csr_matrix:
        """:meth:`throughput_rows` as a scipy matrix (for slicing and arithmetic)."""
        return self.rates if row_scale is None else self.throughput_rows(row_scale).to_csr()

    def allocation(self, x: np.ndarray, policy: str, **fields) -> Allocation:
        """An Allocation from combination shares ``x`` (C, n) (noise clipped into [0, runnable])."""
        return _split(self.problem, np.where(self.runnable, np.clip(x, 0.0, 1.0), 0.0), policy, fields)


def decode(problem: AllocationProblem, model: Model, result: Result, policy: str,
           objective: float | None = None) -> Allocation:
    """The allocation in the solved ``model`` (block "x" over singles, then pairs if packed).

    Solver noise is clipped into the column bounds, and capacity / time-budget excesses
    within a solver's tolerance (first-order solvers leave ~1e-5) are removed by scaling
    down: each type's column by ``min(1, W_j / used_j)``, then each combination by the
    smallest ``min(1, 1 / time_i)`` of its jobs. Scaling down keeps every other row
    satisfied; a repair larger than 1e-9 is reported in the notes.
    """
    block = model.blocks["x"]
    canon = model.canonical()
    x = result.value("x").clip(canon.col_lo[block.columns].reshape(block.shape),
                               canon.col_hi[block.columns].reshape(block.shape))
    return allocation_of(problem, x, policy, result, objective=objective, program=canon)


def allocation_of(problem: AllocationProblem, x: np.ndarray, policy: str, result: Result,
                  objective: float | None = None, program: CanonicalModel | None = None) -> Allocation:
    """The allocation of shares ``x`` (single jobs, then pairs if packed) that ``result`` gave,
    capacity / time-budget excesses within the solver's tolerance scaled away (:func:`decode`)."""
    notes = list(result.notes)
    repaired = _scale_into_budgets(problem, x)
    if repaired is not x and np.abs(repaired - x).max(initial=0.0) > 1e-9:
        notes.append(f"scaled shares down by up to {np.abs(repaired - x).max():.2e} to meet capacity and "
                     f"time budgets exactly ({result.backend} tolerance)")
    fields = {"objective": objective, "result": result, "notes": notes, "program": program}
    return _split(problem, repaired, policy, fields)


def _scale_into_budgets(problem: AllocationProblem, x: np.ndarray) -> np.ndarray:
    """``x`` scaled into the capacities, then the time budgets (``x`` itself where it is within both)."""
    m = problem.num_jobs
    gpus = problem.scale_factors * multiplicity(problem)
    if x.shape[0] == m:  # single jobs: each row is one job's time budget
        used = gpus @ x
        if (used > problem.capacities).any():
            x = x * np.minimum(1.0, problem.capacities / np.maximum(used, 1e-300))
        time = x.sum(axis=1)
        return x * np.minimum(1.0, 1.0 / np.maximum(time, 1e-300))[:, None] if (time > 1.0).any() else x
    pairs = problem.job_pairs()
    first = np.concatenate([np.arange(m), pairs.first])
    second = np.concatenate([np.arange(m), pairs.second])
    x = x * np.minimum(1.0, problem.capacities / np.maximum(gpus[first] @ x, 1e-300))
    per_combination = x.sum(axis=1)
    time = np.bincount(first, weights=per_combination, minlength=m)
    time += np.bincount(pairs.second, weights=per_combination[m:], minlength=m)
    factor = np.minimum(1.0, 1.0 / np.maximum(time, 1e-300))
    return x * np.minimum(factor[first], factor[second])[:, None]


def _split(problem: AllocationProblem, x: np.ndarray, policy: str, fields: dict) -> Allocation:
    """Rows 0..m-1 are single jobs, the rest ``problem.pairs`` (``pair_x`` None if none)."""
    m = problem.num_jobs
    return Allocation(problem, x[:m], policy, pair_x=x[m:] if x.shape[0] > m else None, **fields)


#: a single-job program of at least this many cells is assembled by the compiled pass
#: (:mod:`formulations.singles_kernels`; 1,000,000 jobs x 10 types: 0.1 s against 0.5 s)
COMPILED_MIN_CELLS = 250_000


def singles(problem: AllocationProblem, throughputs: np.ndarray | None = None) -> Combinations:
    """One combination per job, with ``throughputs`` (default: the problem's) as rates; a
    variant's throughputs must be positive exactly where the problem's are."""
    T = problem.throughputs if throughputs is None else throughputs
    m, n = T.shape
    keep = T > 0
    rates = CsrArrays(T[keep], np.flatnonzero(keep), np.concatenate([[0], np.cumsum(keep.sum(axis=1))]), (m, m * n))
    identity = CsrArrays(np.ones(m), np.arange(m), np.arange(m + 1), (m, m))
    return Combinations(problem, identity, rates, problem.scale_factors.copy(), runnable(problem))


def singles_program(problem: AllocationProblem, name: str, *, level: np.ndarray | None = None,
                    objective: np.ndarray | None = None, finish: bool = False) -> CanonicalModel:
    """The program over single jobs that :class:`Model` would assemble from ``singles(problem)
    .add_allocation`` and then either the max-min rows ``z <= level_i . x_i`` (``level`` (m, n), 0
    where the job cannot run; :func:`~formulations.max_min_fairness.add_max_min`) with objective
    max z, or the objective max ``objective . x`` ((m, n)), array for array, keys included. Its
    pattern is fixed, so it is assembled column by column: cell (i, j) has job i's GPUs in
    capacity row j, 1 in time budget i and ``-level_ij`` in fairness row i where nonzero; z has
    1 in every fairness row. ``finish``: the makespan's rows instead
    (:func:`~formulations.min_total_duration.build`): ``level_i . x_i - u >= 0`` (rows "finish",
    ``+level_ij``, u's -1), ``u >= 0``."""
    start = time.perf_counter()
    m, n = problem.throughputs.shape
    cells = m * n
    epigraph = level is not None
    gpus = (problem.scale_factors * multiplicity(problem)).astype(float)
    if cells >= COMPILED_MIN_CELLS:
        from .singles_kernels import cell_columns  # numba, for large programs only (its module doc)

        data, indices, indptr = cell_columns(gpus, n, np.ascontiguousarray(level, dtype=float) if epigraph else
                                             np.zeros((0, 0)), 1.0 if finish else -1.0, -1.0 if finish else 1.0)
    else:
        data, indices, indptr = _cell_columns(gpus, n, level, finish)
    columns = cells + epigraph
    num_rows = n + m * (1 + epigraph)
    c = np.zeros(columns)
    if epigraph:
        c[-1] = 1.0
    else:
        c[:] = objective.reshape(-1)
    x = VarBlock("x", 0, (m, n), VarType.CONTINUOUS)
    blocks, row_blocks = {"x": x}, {"capacity": slice(0, n), "time_budget": slice(n, n + m)}
    row_keys = {"capacity": np.array(problem.worker_types), "time_budget": problem.job_ids}
    col_lo, col_hi = np.zeros(columns), np.full(columns, np.inf)
    col_hi[:cells][~runnable(problem).reshape(-1)] = 0.0
    row_lo = np.full(num_rows, -np.inf)
    row_hi = np.concatenate([problem.capacities.astype(float), np.ones(m), np.zeros(m * epigraph)])
    if epigraph:
        level_name, rows_name = ("u", "finish") if finish else ("z", "fairness")
        blocks[level_name] = VarBlock(level_name, cells, (1,), VarType.CONTINUOUS)
        row_blocks[rows_name] = slice(n + m, num_rows)
        row_keys[rows_name] = problem.job_ids
        col_lo[-1] = 0.0 if finish else -np.inf
        if finish:
            row_lo[n + m:], row_hi[n + m:] = 0.0, np.inf
    if not (np.isfinite(data).all() and np.isfinite(c).all()):
        raise ModelError(f"{name}: non-finite coefficient")
    A = CscArrays(data, indices, indptr, (num_rows, columns))
    model = CanonicalModel(
        name=name, sense="max", c=c, offset=0.0, A=A, row_lo=row_lo, row_hi=row_hi, col_lo=col_lo, col_hi=col_hi,
        integrality=np.zeros(columns, dtype=bool), log_terms=None, blocks=blocks, row_blocks=row_blocks,
        build_seconds=time.perf_counter() - start, col_keys={"x": problem.job_ids}, row_keys=row_keys,
        layout=AssignmentLayout(A, np.broadcast_to(gpus[:, None], (m, n)), level if epigraph else None))
    add_build(model.build_seconds)
    return model


def _cell_columns(gpus: np.ndarray, n: int, level: np.ndarray | None, finish: bool):
    """:func:`~formulations.singles_kernels.cell_columns` as array operations (small programs:
    no compiler import)."""
    m = gpus.size
    cells = m * n
    epigraph = level is not None
    width = 2 + epigraph  # per cell: its capacity, time-budget (and fairness) entries
    entries = np.empty((m, n, width))
    entries[:, :, 0] = gpus[:, None]
    entries[:, :, 1] = 1.0
    rows = np.empty((m, n, width), dtype=np.int32)
    rows[:, :, 0] = np.arange(n, dtype=np.int32)
    rows[:, :, 1] = np.arange(n, n + m, dtype=np.int32)[:, None]
    entries, rows = entries.reshape(cells, width), rows.reshape(cells, width)
    per_cell = np.full(cells, 2, dtype=np.int32)
    if epigraph:
        entries[:, 2] = level.reshape(-1) if finish else -level.reshape(-1)
        rows[:, 2] = rows[:, 1] + m
        keep = np.ones((cells, 3), dtype=bool)
        keep[:, 2] = entries[:, 2] != 0.0
        per_cell += keep[:, 2]
        data = np.concatenate([entries[keep], np.full(m, -1.0 if finish else 1.0)])
        indices = np.concatenate([rows[keep], n + m + np.arange(m, dtype=np.int32)])
        per_cell = np.append(per_cell, m)
    else:
        data, indices = entries.reshape(-1), rows.reshape(-1)
    indptr = np.zeros(cells + epigraph + 1, dtype=np.int32)
    per_cell.cumsum(out=indptr[1:])
    return data, indices, indptr


def packed(problem: AllocationProblem) -> Combinations:
    """Singles plus every pair in ``problem.pairs`` that can share some type (space sharing)."""
    m, n = problem.num_jobs, problem.num_types
    pairs = problem.job_pairs()
    P, C = len(pairs), m + len(pairs)
    T = problem.throughputs
    pair_cols = np.arange(m, C)
    incidence = CsrArrays.of(sp.csr_matrix(
        (np.ones(m + 2 * P), (np.concatenate([np.arange(m), pairs.first, pairs.second]),
                              np.concatenate([np.arange(m), pair_cols, pair_cols]))), shape=(m, C)))
    rows = np.concatenate([np.repeat(np.arange(m), n), np.repeat(pairs.first, n), np.repeat(pairs.second, n)])
    cols = np.concatenate([_cells(n, np.arange(m)), _cells(n, pair_cols), _cells(n, pair_cols)])
    vals = np.concatenate([T.reshape(-1), pairs.rates[:, :, 0].reshape(-1), pairs.rates[:, :, 1].reshape(-1)])
    keep = vals > 0
    rates = CsrArrays.of(sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(m, C * n)))
    scale = np.concatenate([problem.scale_factors, problem.scale_factors[pairs.first]])
    return Combinations(problem, incidence, rates, scale, np.vstack([runnable(problem), pair_runnable(problem)]))


def _cells(n: int, combos: np.ndarray) -> np.ndarray:
    """Flat indices of the cells (c, 0..n-1) of the combinations ``combos``."""
    return (combos[:, None] * n + np.arange(n)).reshape(-1)

