"""The policy contract: what a policy is written against, built-in or the user's own.

Three kinds of policy, one per thing a policy can plan:

- **time shares** (:class:`ProgramPolicy`, or :class:`Policy` for one that is not a single
  program): per snapshot (:class:`AllocationProblem`), the fraction of wall time each job runs on
  each worker type (:class:`Allocation`); the engine turns shares into per-round leases (Gavel's
  mechanism). Gavel's and the user's programs.
- **GPU counts per slot** (:class:`SlotPolicy`): at each decision, admission of the arrivals and
  the GPUs each job holds until the next decision, reading a :class:`JobsView`. ElasticFlow,
  Chronus, Pollux and their baselines.
- **whole rounds** (:class:`RoundPlanner`): the jobs to run in each round, from a
  :class:`RoundState`. Shockwave.

A policy class has a ``name`` and chooses its behaviour by attributes with defaults, never by its
name: ``program`` (:class:`ProgramClass`, the solvers that can run it), ``claims`` (the
fair-division properties ``schedopt check`` then always tests), ``uses_pairs`` (snapshots carry
co-located pairs), ``fixed_type_order`` (round mechanisms walk types fastest first rather than
in a seeded shuffle), ``multi_gpu_jobs`` (the policy takes jobs of more than one GPU).

Wherever schedopt takes a policy name (``simulate``, ``solve``, ``bench``, ``run``, ``sweep``,
``check``, :func:`simulator.simulate.simulate`) it also takes ``package.module:Class``,
``path/to/file.py:Class``, a name an installed package declares in the entry-point group
``schedopt.policies``, or a name entered with :func:`register`.

The snapshot's fields, with units:

========================  ==========================================================================
``worker_types``          names of the n GPU types, e.g. ``("v100", "p100", "k80")``
``capacities``            (n,) GPUs of each type
``job_ids``               (m,) the jobs' ids (unique)
``job_types``             (m,) each job's model name
``scale_factors``         (m,) GPUs a job's gang takes (it runs on that many GPUs of one type)
``weights``               (m,) priority weights (> 0)
``throughputs``           (m, n) steps/s of job i on ``scale_factors[i]`` GPUs of type j; 0: cannot run
``remaining_steps``       (m,) steps left, or None
``time_since_arrival``    (m,) seconds since the job arrived, or None
``slo_remaining``         (m,) seconds left to the job's SLO (inf: none), or None
``prices``                (n,) price per GPU-hour of each type, or None
``pairs``                 candidate co-locations (:class:`JobPairs`) for space-sharing policies, or None
========================  ==========================================================================
"""

from __future__ import annotations

import numpy as np

from allocators.base import PROPERTIES, Plans, Policy, ProgramClass, ProgramPolicy, SchedulingPolicy
from allocators.registry import load, register
from allocators.round_plans import RoundPlan, RoundPlanner, RoundState
from allocators.slot_plans import Charge, JobState, JobsView, SlotPolicy
from formulations import Allocation, AllocationProblem, JobPairs, combinations
from optim import CsrArrays, Model, Result, SolveOptions, Status, VarBlock


def add_shares(model: Model, problem: AllocationProblem, name: str = "x") -> VarBlock:
    """Add the shares ``x`` (m, n) of ``problem`` to ``model`` with the rows every time-share
    program has: per type ``sum_i s_i x_ij <= W_j`` (``"capacity"``), per job ``sum_j x_ij <= 1``
    (``"time_budget"``), ``x >= 0`` and ``x_ij = 0`` where job i cannot run on type j (no rate, or
    a gang larger than the type). Returns the variable block."""
    return combinations.singles(problem).add_allocation(model, name)


def throughput_rows(problem: AllocationProblem, scale: np.ndarray | float | None = None) -> CsrArrays:
    """The (m, m·n) sparse matrix whose row i is job i's throughput (steps/s) over ``vec(x)``,
    ``sum_j T_ij x_ij``, each row times ``scale[i]`` if given: ``{x: throughput_rows(problem)}``
    is a row term of :meth:`Model.add_rows`."""
    return combinations.singles(problem).throughput_rows(None if scale is None else np.broadcast_to(
        np.asarray(scale, dtype=float), (problem.num_jobs,)))


__all__ = [
    "PROPERTIES", "Allocation", "AllocationProblem", "Charge", "JobPairs", "JobState", "JobsView", "Model", "Plans",
    "Policy", "ProgramClass", "ProgramPolicy", "Result", "RoundPlan", "RoundPlanner", "RoundState",
    "SchedulingPolicy", "SlotPolicy", "SolveOptions", "Status", "add_shares", "load", "register", "throughput_rows",
]
