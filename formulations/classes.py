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
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .problem import OPTIONAL_ARRAYS, Allocation, AllocationProblem

#: the note an allocation solved as a merged program carries
MERGED_NOTE = "jobs with equal data solved as one class each (formulations.classes)"


@dataclass(frozen=True)
class MergedProblem(AllocationProblem):
    """One representative job per class; ``counts[c]`` equal jobs stand behind row c and
    ``members[i]`` is the class of job i of ``original``."""

    counts: np.ndarray | None = None
    members: np.ndarray | None = None
    original: AllocationProblem | None = None


def merge_equal_jobs(problem: AllocationProblem, fields: tuple[str, ...] = ()) -> MergedProblem | None:
    """The merged problem of a program that reads the optional per-job ``fields`` besides
    throughputs, scale factors and weights; None when no two jobs are equal or the problem
    has co-located pairs (a pair row names its jobs)."""
    if problem.pairs is not None or problem.num_jobs < 2:
        return None
    columns = [problem.throughputs, problem.scale_factors[:, None].astype(float), problem.weights[:, None]]
    columns += [getattr(problem, name)[:, None] for name in fields if getattr(problem, name) is not None]
    data = np.ascontiguousarray(np.hstack(columns))
    rows = data.view(np.dtype((np.void, data.dtype.itemsize * data.shape[1]))).ravel()
    _, first, members, counts = np.unique(rows, return_index=True, return_inverse=True, return_counts=True)
    if first.size == problem.num_jobs:
        return None
    order = np.argsort(first)  # classes in order of their first job: the merged problem keeps the job order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    keep = first[order]
    values = {f.name: getattr(problem, f.name) for f in dataclasses.fields(AllocationProblem)}
    for name in ("job_ids", "scale_factors", "weights", "throughputs", *OPTIONAL_ARRAYS):
        if name != "prices" and values[name] is not None:
            values[name] = values[name][keep]
    values["job_types"] = tuple(problem.job_types[i] for i in keep)
    return MergedProblem(**values, counts=counts[order].astype(float), members=rank[members.ravel()],
                         original=problem)


def expand(allocation: Allocation) -> Allocation:
    """An allocation of a :class:`MergedProblem` as one of its original problem: every job
    gets its class's shares (the objective, result and program stay the merged program's)."""
    merged = allocation.problem
    return dataclasses.replace(allocation, problem=merged.original, x=allocation.x[merged.members],
                               notes=[*allocation.notes, MERGED_NOTE])
