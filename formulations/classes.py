"""Equal jobs merged: a program symmetric in its jobs solved over one job per class.

Jobs i and i' are *equal* when every per-job array the program reads is equal: throughput
row, scale factor, weight, and the optional per-job fields it names (remaining steps, SLO,
...). Take a program whose feasible set and objective are invariant under any permutation
of equal jobs and whose objective is concave (the max-min level, a throughput sum), and
an optimal x. The average of x over all permutations within each class is feasible
(the set is convex) and no worse (concavity and invariance), and it gives equal jobs equal
shares. So an optimum exists in the subspace ``x_i = x_c`` for every job i of class c,
and the program restricted to it is the *merged program*: one job per class with
multiplicity ``n_c``, capacity rows ``sum_c n_c s_c x_cj <= W_j``, each job's own rows
unchanged, and a sum objective's terms times ``n_c``. Its optimum is the full program's
and its solution, each class's share copied to its jobs, is an optimal allocation. The
merged program of m jobs of k kinds has k jobs, whatever m is.

The optimum is the same, but not which optimal allocation an interior-point method returns:
it converges to the centre of the optimal face, and the merged program's face has another
centre than the full one's (each class counts once in the barrier instead of n_c times). So
policies solve merged only on backends whose LP answers are vertices (``Capability.VERTEX``:
HiGHS, Gurobi); Clarabel, the ``block`` method and ECOS-like solvers see every job.

*Jobs equal but for their demand* (:func:`merge_by_demand`). In a level program (maximize u
s.t. ``T_i . x_i >= d_i u``, the base rows; the makespan LP, d_i = R_i / S) jobs with equal
rates and scale factor differ only in d_i. Job i's set ``P(d) = {x >= 0 on its runnable
types, sum x <= 1, T . x >= d}`` cuts the edges of the simplex {0, e_1, ..., e_n} that join a
vertex of rate below d to one of rate at least d, so while d stays in one interval between
consecutive rates of the row, P(d) keeps its combinatorial type and each vertex is an
affine function of d. Polytopes of one type add vertex by vertex: a point of
``sum_i P(d_i)`` is ``sum_v l_v sum_i v(d_i)``, so there is an allocation of the class with
every ``x_i = sum_v l_v v(d_i)`` affine in d_i, i.e. interpolated between the class's
smallest and largest demand: ``x_i = (1 - t_i) x_lo + t_i x_hi``. The merged program over
those two anchors (capacity weights ``n - sum t_i`` and ``sum t_i``) is therefore exact for
every u that keeps each class in one interval, and for every u it is a restriction
(``(d, x) -> T . x >= d`` is jointly convex, so interpolated points are feasible). At a fixed
level (rows ``T_i . x_i >= d_i``, the throughput policies' SLOs) one merged program is exact.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from optim.sparse import distinct_rows

from .problem import OPTIONAL_ARRAYS, Allocation, AllocationProblem

#: the note an allocation solved as a merged program carries
MERGED_NOTE = "jobs with equal data solved as one class each (formulations.classes)"
#: the note an allocation solved over demand classes carries
DEMAND_NOTE = ("jobs equal but for their demand solved as two anchors per class and demand interval "
               "(formulations.classes)")


@dataclass(frozen=True)
class MergedProblem(AllocationProblem):
    """One representative job per class; ``counts[c]`` jobs stand behind row c (a capacity
    weight, fractional for demand classes), row c is job ``source[c]`` of ``original`` and
    ``members[i]`` is the row of job i; for demand classes job i's shares are ``(1 - blend[i])
    x[members[i]] + blend[i] x[upper[i]]``."""

    counts: np.ndarray | None = None
    members: np.ndarray | None = None
    original: AllocationProblem | None = None
    source: np.ndarray | None = None
    upper: np.ndarray | None = None
    blend: np.ndarray | None = None


_MERGED_DEFAULTS = {f.name: f.default for f in dataclasses.fields(MergedProblem)}
_PROBLEM_FIELDS = tuple(f.name for f in dataclasses.fields(AllocationProblem))


def merge_equal_jobs(problem: AllocationProblem, fields: tuple[str, ...] = ()) -> MergedProblem | None:
    """The merged problem of a program that reads the optional per-job ``fields`` besides
    throughputs, scale factors and weights; None when no two jobs are equal or the problem
    has co-located pairs (a pair row names its jobs)."""
    if problem.pairs is not None or problem.num_jobs < 2:
        return None
    columns = [problem.throughputs, problem.scale_factors[:, None], problem.weights[:, None]]  # as floats
    columns += [getattr(problem, name)[:, None] for name in fields if getattr(problem, name) is not None]
    first, members, counts = distinct_rows(np.concatenate(columns, axis=1))  # classes in order of their first job
    if first.size == problem.num_jobs:
        return None
    return _rows_of(problem, first, counts.astype(float), members=members)


def equal_rows(rates: np.ndarray, gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, kind)``: the first job of each kind of equal ``rates`` row and scale factor, and
    each job's kind."""
    first, kind, _ = distinct_rows(np.hstack([rates, gpus[:, None].astype(float)]))
    return first, kind


def demand_classes(kind: np.ndarray, rates: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Class label of each job for :func:`merge_by_demand`: its ``kind`` (:func:`equal_rows`) and
    the half-open interval ``[r_l, r_l+1)`` of its rates (0 where it cannot run) holding ``demand``."""
    level = np.count_nonzero((rates > 0) & (rates <= demand[:, None]), axis=1)
    return kind * (rates.shape[1] + 1) + level


def merge_by_demand(problem: AllocationProblem, labels: np.ndarray, demand: np.ndarray) -> MergedProblem | None:
    """The level program over two anchors per class of ``labels`` (:func:`demand_classes`): the
    jobs of least and greatest ``demand``, weighted ``n - sum t_i`` and ``sum t_i``, ``t_i =
    (d_i - d_lo) / (d_hi - d_lo)`` (one anchor where the class's demands are equal); None when
    that is no smaller than the problem or it has co-located pairs."""
    if problem.pairs is not None or problem.num_jobs < 2:
        return None
    jobs = np.arange(problem.num_jobs)
    by_class = np.lexsort((jobs, demand, labels))  # per class: by demand, then position
    sorted_labels = labels[by_class]
    starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
    ends = np.r_[starts[1:], by_class.size] - 1
    lo, hi = by_class[starts], by_class[ends]
    spread = demand[hi] - demand[lo]
    two = spread > 0
    if lo.size + np.count_nonzero(two) >= problem.num_jobs:
        return None
    cls = np.empty(problem.num_jobs, dtype=np.int64)
    cls[by_class] = np.repeat(np.arange(lo.size), ends - starts + 1)
    blend = np.where(two[cls], (demand - demand[lo[cls]]) / np.where(two, spread, 1.0)[cls], 0.0)
    share = np.bincount(cls, weights=blend, minlength=lo.size)
    anchors = np.concatenate([lo, hi[two]])
    weights = np.concatenate([np.bincount(cls, minlength=lo.size) - share, share[two]])
    order = np.argsort(anchors, kind="stable")  # anchors in job order
    row = np.empty_like(order)
    row[order] = np.arange(order.size)
    upper_of = np.full(lo.size, -1, dtype=np.int64)
    upper_of[two] = row[lo.size:]
    upper = np.where(two[cls], upper_of[cls], row[cls])
    return _rows_of(problem, anchors[order], weights[order], members=row[cls], upper=upper, blend=blend)


def _rows_of(problem: AllocationProblem, keep: np.ndarray, counts: np.ndarray, **fields) -> MergedProblem:
    """Jobs ``keep`` of ``problem`` as a :class:`MergedProblem` with ``fields``. It skips the
    constructor's checks: rows of a valid problem are valid, and the checks cost a tenth of a
    small merged solve."""
    values = dict(_MERGED_DEFAULTS)
    values.update({name: getattr(problem, name) for name in _PROBLEM_FIELDS})
    for name in ("job_ids", "scale_factors", "weights", "throughputs", *OPTIONAL_ARRAYS):
        if name != "prices" and values[name] is not None:
            values[name] = values[name][keep]
    values["job_types"] = tuple(map(problem.job_types.__getitem__, keep.tolist()))
    values.update(counts=counts, original=problem, source=keep, **fields)
    merged = object.__new__(MergedProblem)
    merged.__dict__.update(values)
    return merged


def expand(allocation: Allocation) -> Allocation:
    """An allocation of a :class:`MergedProblem` as one of its original problem: every job
    gets its class's shares, interpolated for demand classes (the objective, result and
    program stay the merged program's)."""
    merged = allocation.problem
    x = allocation.x[merged.members]
    note = MERGED_NOTE
    if merged.upper is not None:
        t = merged.blend[:, None]
        x = (1.0 - t) * x + t * allocation.x[merged.upper]
        note = DEMAND_NOTE
    return dataclasses.replace(allocation, problem=merged.original, x=x, notes=[*allocation.notes, note])


def level_bound(rates: np.ndarray, gpus: np.ndarray, demand: np.ndarray, capacities: np.ndarray,
                prices: np.ndarray, kinds: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """An upper bound on the full level program ``max u  s.t.  T_i . x_i >= d_i u``, base rows, from
    capacity prices ``p >= 0`` (weak duality; equal to u* at optimal prices):

        g(p) = p . W + min { sum_i h_i(l_i) : sum_i l_i d_i >= 1, l >= 0 },
        h_i(l) = max(0, max_j (l T_ij - s_i p_j))

    (``l_i``, ``mu_i = h_i(l_i)``: the duals of job i's level row and time budget). Each h_i is
    the upper envelope of the lines ``l T_ij - s_i p_j`` and 0, the same for every job of a kind
    (``kinds``: :func:`equal_rows`). Line j holds the envelope on ``[lo_j, hi_j]``: past its
    crossings with 0 and with every line of smaller slope, before those with larger slopes.
    Covering the demand takes every job's free stretch ``l <= min_j s_i p_j / T_ij``, then
    envelope pieces in order of slope per unit of demand (a fractional knapsack)."""
    prices = np.maximum(prices, 0.0)
    base = float(prices @ capacities)
    first, kind = equal_rows(rates, gpus) if kinds is None else kinds
    T = rates[first]
    a = np.where(T > 0, gpus[first, None] * prices[None, :], 0.0)
    run = T > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        zero = np.where(run, a / T, np.inf)
        dT = T[:, :, None] - T[:, None, :]  # [c, j, l] = T_j - T_l
        cross = (a[:, :, None] - a[:, None, :]) / dT
    other = run[:, None, :] & ~np.eye(T.shape[1], dtype=bool)[None]
    lo = np.maximum(zero, np.where(other & (dT > 0), cross, -np.inf).max(axis=2))
    hi = np.where(other & (dT < 0), cross, np.inf).min(axis=2)
    index = np.arange(T.shape[1])
    tied = (other & (dT == 0) & ((a[:, None, :] < a[:, :, None])
                                 | ((a[:, None, :] == a[:, :, None]) & (index[None, None, :] < index[None, :, None]))))
    piece = run & (lo < hi) & ~tied.any(axis=2)
    covered = float((demand * zero.min(axis=1)[kind]).sum())
    if covered >= 1.0:
        return base
    job, j = np.nonzero(piece[kind] & (demand > 0)[:, None])
    c = kind[job]
    reach = demand[job] * (hi[c, j] - lo[c, j])
    unit = T[c, j] / demand[job]
    order = np.argsort(unit, kind="stable")
    reach, unit = reach[order], unit[order]
    before = np.concatenate([[0.0], np.cumsum(reach)[:-1]])
    take = np.clip(1.0 - covered - before, 0.0, reach)
    return base + float((take * unit).sum())
