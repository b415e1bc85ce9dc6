"""Who runs an interval's leases: the contract between the engine and an executor.

At the end of every interval (a round or a slot) the engine hands its executor the interval's
:class:`Leases` (one entry per running job, as parallel arrays) and credits the
:class:`LeaseResults` it gets back: the steps each job actually did, and which leases failed and
why. A failed lease credits no steps; a job whose leases failed :data:`MAX_FAILED_LEASES` times in
all ends as failed (:class:`FailedLeases` keeps the count for both clocks). An interval lasts what
the engine planned, whatever the executor reports; a lease may take up to the rest of its interval
(``Leases.budget``), and where the executor reports the seconds its leases took
(``LeaseResults.seconds``), a job that its lease completed ends when that lease's work did.

:class:`SimulatedExecutor` (the engine's default) does every planned step and never fails.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

#: failed leases after which a job ends as failed
MAX_FAILED_LEASES = 5


@dataclass(frozen=True)
class Leases:
    """One round's leases, dispatched at simulated time ``start``: per job (in the engine's
    order) the trace job id, the worker type index, its GPUs (scale factor), the steps the
    engine planned and the lease's seconds (the job's row's planned work time, checkpoint /
    restore overhead excluded); ``budget``: the seconds each lease may take at most, the rest
    of its interval (None: its planned seconds), so a job whose plan ends inside the interval
    may finish it there however long its steps really take."""

    start: float
    jobs: np.ndarray
    types: np.ndarray
    gpus: np.ndarray
    steps: np.ndarray
    seconds: np.ndarray
    budget: np.ndarray | None = None

    def budgets(self) -> np.ndarray:
        """The seconds each lease may take (``budget``, else the planned ``seconds``)."""
        return self.seconds if self.budget is None else self.budget


@dataclass(frozen=True)
class LeaseResults:
    """Per lease (aligned with :class:`Leases`): steps done (int64, 0 where failed) and
    whether the lease failed; ``reasons`` maps the job id of every failed lease to why;
    ``seconds``: the simulated seconds each lease's work took (None: as planned)."""

    steps: np.ndarray
    failed: np.ndarray
    reasons: Mapping[int, str] = field(default_factory=dict)
    seconds: np.ndarray | None = None

    def check(self, leases: Leases) -> None:
        """Raise ValueError unless these results fit ``leases``: one entry per lease, steps
        in [0, planned], no steps for a failed lease, a reason for each failed lease."""
        n = leases.jobs.size
        if self.steps.shape != (n,) or self.failed.shape != (n,):
            raise ValueError(f"executor returned {self.steps.shape} steps and {self.failed.shape} failure flags "
                             f"for {n} leases")
        if ((self.steps < 0) | (self.steps > leases.steps)).any():
            raise ValueError("executor credited steps outside [0, planned steps]")
        if self.seconds is not None and (self.seconds.shape != (n,) or not (self.seconds >= 0).all()
                                         or not np.isfinite(self.seconds).all()):
            raise ValueError(f"executor reported lease seconds of shape {self.seconds.shape}, not {n} finite "
                             "values >= 0")
        if not self.failed.any():
            return
        if (self.steps[self.failed] != 0).any():
            raise ValueError("executor credited steps to a failed lease")
        missing = set(leases.jobs[self.failed].tolist()) - set(self.reasons)
        if missing:
            raise ValueError(f"executor gave no reason for the failed leases of jobs {sorted(missing)}")


class Executor(ABC):
    """Runs each round's leases; see the module docstring for the contract."""

    @abstractmethod
    def execute(self, leases: Leases) -> LeaseResults:
        """Run (or account for) one round's leases and report what they did."""


class SimulatedExecutor(Executor):
    """Every lease does its planned steps: the pure simulation."""

    def execute(self, leases: Leases) -> LeaseResults:
        return LeaseResults(leases.steps, np.zeros(leases.steps.size, dtype=bool))


@dataclass
class FailedLeases:
    """The run's failed leases: how many per job, the GPU-seconds they spent for nothing (the work
    redone after a resume from the last checkpoint) and, for every job that ended failed, a note
    with its last lease's failure. Both clocks keep one."""

    count: np.ndarray
    redone_gpu_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, jobs: int) -> FailedLeases:
        return cls(np.zeros(jobs, dtype=np.int64))

    def record(self, leases: Leases, results: LeaseResults) -> np.ndarray:
        """Count the failed ``leases``; per lease, whether its job has now failed
        :data:`MAX_FAILED_LEASES` times."""
        failed = results.failed
        if not failed.any():
            return failed
        jobs = leases.jobs
        self.count[jobs[failed]] += 1
        self.redone_gpu_seconds += float((leases.seconds[failed] * leases.gpus[failed]).sum())
        return failed & (self.count[jobs] >= MAX_FAILED_LEASES)

    def end(self, jobs: np.ndarray, names: np.ndarray, results: LeaseResults) -> list[str]:
        """Note the end of ``jobs`` (named ``names``) as failed; returns the new notes."""
        new = [f"job {name} failed after {int(self.count[job])} failed leases; last: {results.reasons[job]}"
               for job, name in zip(jobs.tolist(), names.tolist(), strict=True)]
        self.notes += new
        return new
