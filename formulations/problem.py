"""The input and output of every allocation program.

An :class:`AllocationProblem` is a snapshot: worker types with GPU counts, active jobs
with scale factors and weights, and the throughput matrix ``T[i, j]`` (steps/s of job i
on ``scale_factors[i]`` GPUs of type j; 0 = cannot run). It knows nothing of time or
traces. An :class:`Allocation` is the matrix ``x[i, j]`` = fraction of wall time job i
runs on type j, plus how it was obtained.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from optim import Result


class ProblemError(ValueError):
    """The allocation problem is malformed; the message names the job and field."""


@dataclass(frozen=True)
class AllocationProblem:
    worker_types: tuple[str, ...]
    capacities: np.ndarray
    job_ids: np.ndarray
    job_types: tuple[str, ...]
    scale_factors: np.ndarray
    weights: np.ndarray
    throughputs: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "worker_types", tuple(self.worker_types))
        object.__setattr__(self, "job_types", tuple(self.job_types))
        for name, dtype in (("capacities", float), ("job_ids", np.int64), ("scale_factors", np.int64),
                            ("weights", float), ("throughputs", float)):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=dtype))
        self._validate()

    @property
    def num_jobs(self) -> int:
        return int(self.job_ids.shape[0])

    @property
    def num_types(self) -> int:
        return len(self.worker_types)

    def describe_job(self, i: int) -> str:
        return f"job {self.job_ids[i]} ({self.job_types[i]}, scale {self.scale_factors[i]})"

    def _validate(self) -> None:
        n, m = len(self.worker_types), self.job_ids.shape[0]
        if n == 0:
            raise ProblemError("the cluster has no worker types")
        if len(set(self.worker_types)) != n:
            raise ProblemError(f"duplicate worker types in {self.worker_types}")
        if self.capacities.shape != (n,):
            raise ProblemError(f"capacities: expected {n} values, got shape {self.capacities.shape}")
        bad = np.flatnonzero(~(self.capacities > 0) | ~np.isfinite(self.capacities))
        if bad.size:
            j = bad[0]
            raise ProblemError(f"worker type {self.worker_types[j]!r}: capacity must be > 0, got {self.capacities[j]}")
        for name in ("scale_factors", "weights"):
            if getattr(self, name).shape != (m,):
                raise ProblemError(f"{name}: expected {m} values, got shape {getattr(self, name).shape}")
        if len(self.job_types) != m:
            raise ProblemError(f"job_types: expected {m} values, got {len(self.job_types)}")
        if len(np.unique(self.job_ids)) != m:
            raise ProblemError("job ids are not unique")
        if self.throughputs.shape != (m, n):
            raise ProblemError(f"throughputs: expected shape ({m}, {n}), got {self.throughputs.shape}")
        bad = np.flatnonzero(self.scale_factors < 1)
        if bad.size:
            raise ProblemError(f"{self.describe_job(bad[0])}: scale factor must be >= 1")
        bad = np.flatnonzero(~(self.weights > 0) | ~np.isfinite(self.weights))
        if bad.size:
            raise ProblemError(f"{self.describe_job(bad[0])}: weight must be > 0, got {self.weights[bad[0]]}")
        T = self.throughputs
        bad_cells = np.argwhere(~np.isfinite(T) | (T < 0))
        if bad_cells.size:
            i, j = bad_cells[0]
            raise ProblemError(
                f"{self.describe_job(i)}: throughput on {self.worker_types[j]} is {T[i, j]} "
                "(must be finite and >= 0)"
            )
        stuck = np.flatnonzero(T.max(axis=1, initial=0.0) <= 0)
        if stuck.size:
            raise ProblemError(f"{self.describe_job(stuck[0])}: zero throughput on every worker type")
        too_big = np.flatnonzero(self.scale_factors > self.capacities.max())
        if too_big.size:
            raise ProblemError(
                f"{self.describe_job(too_big[0])}: needs more GPUs than any worker type has"
            )


@dataclass
class Allocation:
    """``x[i, j]``: fraction of wall time job i runs on worker type j (on s_i GPUs)."""

    problem: AllocationProblem
    x: np.ndarray
    policy: str
    objective: float | None = None
    result: Result | None = None
    notes: list[str] = field(default_factory=list)

    def effective_throughput(self) -> np.ndarray:
        """Steps/s each job makes under the allocation: ``sum_j T_ij x_ij``."""
        return (self.problem.throughputs * self.x).sum(axis=1)

    def gpus_used(self) -> np.ndarray:
        """GPUs of each type in use on average: ``sum_i s_i x_ij``."""
        return self.problem.scale_factors @ self.x
