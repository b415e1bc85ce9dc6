"""The input and output of every allocation program.

An :class:`AllocationProblem` is a snapshot: worker types with GPU counts, active jobs
with scale factors and weights, and the throughput matrix ``T[i, j]`` (steps/s of job i
on ``scale_factors[i]`` GPUs of type j; 0 = cannot run). Optional per-job quantities
(steps remaining ``R_i``, seconds since arrival ``t_i``, seconds left to an SLO), per-type
prices and candidate co-located pairs feed the policies that need them; the snapshot
knows nothing of traces or of how time advances. An :class:`Allocation` is the matrix
``x[i, j]`` = fraction of wall time job i runs alone on type j, plus ``pair_x[p, j]`` for
co-located pairs, and how it was obtained.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from optim import CanonicalModel, Result


class ProblemError(ValueError):
    """The allocation problem is malformed; the message names the job and field."""


@dataclass(frozen=True)
class JobPairs:
    """Candidate co-locations (space sharing): jobs ``first[p]`` and ``second[p]`` (row
    indices, equal scale factors) share one gang of GPUs; ``rates[p, j] = (rate of first,
    rate of second)`` in steps/s on type j, both 0 where they cannot share it."""

    first: np.ndarray
    second: np.ndarray
    rates: np.ndarray

    def __post_init__(self) -> None:
        for name in ("first", "second"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64).reshape(-1))
        object.__setattr__(self, "rates", np.asarray(self.rates, dtype=float))

    def __len__(self) -> int:
        return int(self.first.shape[0])

    @classmethod
    def empty(cls, num_types: int) -> JobPairs:
        return cls(np.zeros(0), np.zeros(0), np.zeros((0, num_types, 2)))


OPTIONAL_ARRAYS = ("remaining_steps", "time_since_arrival", "slo_remaining", "prices")


@dataclass(frozen=True)
class AllocationProblem:
    worker_types: tuple[str, ...]
    capacities: np.ndarray
    job_ids: np.ndarray
    job_types: tuple[str, ...]
    scale_factors: np.ndarray
    weights: np.ndarray
    throughputs: np.ndarray
    remaining_steps: np.ndarray | None = None
    time_since_arrival: np.ndarray | None = None
    slo_remaining: np.ndarray | None = None
    prices: np.ndarray | None = None
    pairs: JobPairs | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "worker_types", tuple(self.worker_types))
        object.__setattr__(self, "job_types", tuple(self.job_types))
        for name, dtype in (("capacities", float), ("job_ids", np.int64), ("scale_factors", np.int64),
                            ("weights", float), ("throughputs", float)):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=dtype))
        for name in OPTIONAL_ARRAYS:
            if getattr(self, name) is not None:
                object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float))
        self._validate()
        self._validate_optional()

    def require(self, name: str, policy: str) -> np.ndarray:
        """The optional field ``name``, or a ProblemError saying that ``policy`` needs it."""
        value = getattr(self, name)
        if value is None:
            raise ProblemError(f"policy {policy!r} needs {name.replace('_', ' ')} for every job; the problem has none")
        return value

    def elapsed(self) -> np.ndarray:
        """Seconds since each job arrived (0 where not given)."""
        return np.zeros(self.num_jobs) if self.time_since_arrival is None else self.time_since_arrival

    def job_pairs(self) -> JobPairs:
        """The candidate pairs (none if not given)."""
        return JobPairs.empty(self.num_types) if self.pairs is None else self.pairs

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
        j = _first_bad((self.capacities > 0) & np.isfinite(self.capacities))
        if j is not None:
            raise ProblemError(f"worker type {self.worker_types[j]!r}: capacity must be > 0, got {self.capacities[j]}")
        for name in ("scale_factors", "weights"):
            if getattr(self, name).shape != (m,):
                raise ProblemError(f"{name}: expected {m} values, got shape {getattr(self, name).shape}")
        if len(self.job_types) != m:
            raise ProblemError(f"job_types: expected {m} values, got {len(self.job_types)}")
        ids = self.job_ids
        if not (ids[1:] > ids[:-1]).all() and len(np.unique(ids)) != m:  # increasing ids (the usual case) are unique
            raise ProblemError("job ids are not unique")
        if self.throughputs.shape != (m, n):
            raise ProblemError(f"throughputs: expected shape ({m}, {n}), got {self.throughputs.shape}")
        i = _first_bad(self.scale_factors >= 1)
        if i is not None:
            raise ProblemError(f"{self.describe_job(i)}: scale factor must be >= 1")
        i = _first_bad((self.weights > 0) & np.isfinite(self.weights))
        if i is not None:
            raise ProblemError(f"{self.describe_job(i)}: weight must be > 0, got {self.weights[i]}")
        T = self.throughputs
        cell = _first_bad(np.isfinite(T) & (T >= 0))
        if cell is not None:
            i, j = divmod(cell, n)
            raise ProblemError(
                f"{self.describe_job(i)}: throughput on {self.worker_types[j]} is {T[i, j]} "
                "(must be finite and >= 0)"
            )
        positive = T > 0
        i = _first_bad(positive.any(axis=1))
        if i is not None:
            raise ProblemError(f"{self.describe_job(i)}: zero throughput on every worker type")
        i = _first_bad((positive & (self.scale_factors[:, None] <= self.capacities[None, :])).any(axis=1))
        if i is not None:
            raise ProblemError(f"{self.describe_job(i)}: needs more GPUs than any worker type it can run on has")

    def _validate_optional(self) -> None:
        m, n = self.num_jobs, self.num_types
        checks = {
            "remaining_steps": (m, lambda v: (v > 0) & np.isfinite(v), "must be finite and > 0"),
            "time_since_arrival": (m, lambda v: (v >= 0) & np.isfinite(v), "must be finite and >= 0"),
            "slo_remaining": (m, lambda v: v > 0, "must be > 0 (inf = no SLO)"),
        }
        for name, (size, ok, rule) in checks.items():
            value = getattr(self, name)
            if value is None:
                continue
            if value.shape != (size,):
                raise ProblemError(f"{name}: expected {size} values, got shape {value.shape}")
            i = _first_bad(ok(value))
            if i is not None:
                raise ProblemError(f"{self.describe_job(i)}: {name} {rule}, got {value[i]}")
        if self.prices is not None:
            if self.prices.shape != (n,):
                raise ProblemError(f"prices: expected {n} values, got shape {self.prices.shape}")
            bad = np.flatnonzero(~(self.prices > 0) | ~np.isfinite(self.prices))
            if bad.size:
                raise ProblemError(f"worker type {self.worker_types[bad[0]]!r}: price must be > 0, "
                                   f"got {self.prices[bad[0]]}")
        if self.pairs is not None:
            self._validate_pairs(self.pairs)

    def _validate_pairs(self, pairs: JobPairs) -> None:
        m, n, P = self.num_jobs, self.num_types, len(pairs)
        if pairs.second.shape != (P,) or pairs.rates.shape != (P, n, 2):
            raise ProblemError(f"pairs: expected {P} second jobs and rates of shape ({P}, {n}, 2), "
                               f"got {pairs.second.shape} and {pairs.rates.shape}")
        if P == 0:
            return
        if min(pairs.first.min(), pairs.second.min()) < 0 or max(pairs.first.max(), pairs.second.max()) >= m:
            raise ProblemError(f"pairs: job indices must lie in 0..{m - 1}")
        same = np.flatnonzero(pairs.first == pairs.second)
        if same.size:
            raise ProblemError(f"pairs: {self.describe_job(pairs.first[same[0]])} is paired with itself")
        lo, hi = np.minimum(pairs.first, pairs.second), np.maximum(pairs.first, pairs.second)
        codes = np.sort(lo * m + hi)
        if np.any(codes[1:] == codes[:-1]):
            raise ProblemError("pairs: a pair of jobs is listed twice")
        unequal = np.flatnonzero(self.scale_factors[pairs.first] != self.scale_factors[pairs.second])
        if unequal.size:
            p = unequal[0]
            raise ProblemError(f"pairs: {self.describe_job(pairs.first[p])} and "
                               f"{self.describe_job(pairs.second[p])} have unequal scale factors")
        bad = np.argwhere(~np.isfinite(pairs.rates) | (pairs.rates < 0))
        if bad.size:
            p, j, _ = bad[0]
            raise ProblemError(f"pairs: {self.describe_job(pairs.first[p])} with "
                               f"{self.describe_job(pairs.second[p])} on {self.worker_types[j]}: "
                               "co-located rates must be finite and >= 0")


@dataclass
class Allocation:
    """``x[i, j]``: fraction of wall time job i runs alone on worker type j (on s_i GPUs);
    ``pair_x[p, j]``: fraction of time the pair ``problem.pairs[p]`` shares s GPUs of type j
    (``None`` when the policy does not space-share). ``program`` is the last LP solved,
    kept for optimality certificates."""

    problem: AllocationProblem
    x: np.ndarray
    policy: str
    objective: float | None = None
    result: Result | None = None
    notes: list[str] = field(default_factory=list)
    pair_x: np.ndarray | None = None
    program: CanonicalModel | None = None

    def _pair_sum(self, per_pair: np.ndarray, which: str) -> np.ndarray:
        pairs = self.problem.job_pairs()
        return np.bincount(getattr(pairs, which), weights=per_pair, minlength=self.problem.num_jobs)

    def effective_throughput(self) -> np.ndarray:
        """Steps/s each job makes: ``sum_j T_ij x_ij`` plus its co-located rates in pairs."""
        out = (self.problem.throughputs * self.x).sum(axis=1)
        if self.pair_x is not None:
            rates = self.problem.job_pairs().rates
            out += self._pair_sum((rates[:, :, 0] * self.pair_x).sum(axis=1), "first")
            out += self._pair_sum((rates[:, :, 1] * self.pair_x).sum(axis=1), "second")
        return out

    def time_fractions(self) -> np.ndarray:
        """Fraction of wall time each job runs, alone or in a pair."""
        out = self.x.sum(axis=1)
        if self.pair_x is not None:
            per_pair = self.pair_x.sum(axis=1)
            out = out + self._pair_sum(per_pair, "first") + self._pair_sum(per_pair, "second")
        return out

    def gpus_used(self) -> np.ndarray:
        """GPUs of each type in use on average: ``sum_i s_i x_ij`` plus ``s_p`` per pair."""
        used = self.problem.scale_factors @ self.x
        if self.pair_x is not None:
            used = used + self.problem.scale_factors[self.problem.job_pairs().first] @ self.pair_x
        return used


def _first_bad(ok: np.ndarray) -> int | None:
    """The flat index of the first False in ``ok``; None when all hold (one pass)."""
    return None if ok.all() else int(np.flatnonzero(~ok.reshape(-1))[0])
