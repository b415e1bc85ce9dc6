"""Round planners: policies that return the jobs to run in each round themselves.

A :class:`RoundPlanner` replaces the time-fraction mechanism: at every round boundary the
engine hands it a :class:`RoundState` and runs exactly the jobs it names (gang-scheduled
on their scale factor of GPUs), so the policy owns its integer schedule.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from allocators.base import Plans, Policy
from formulations import ProblemError


@dataclass(frozen=True)
class EpochProfile:
    """Every job's per-epoch batch sizes and isolated epoch durations (s). Job i has
    ``epochs[i]`` epochs. One that keeps its batch size runs every epoch at ``batch_size[i]``
    in ``duration[i]``, so a trace of such jobs costs J numbers, not one per epoch (Gavel's
    traces run to millions); one in ``varying`` has an array of each, ``(batch sizes,
    durations)``."""

    epochs: np.ndarray
    batch_size: np.ndarray
    duration: np.ndarray
    varying: Mapping[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @classmethod
    def of_jobs(cls, jobs: list[tuple[np.ndarray, np.ndarray]]) -> EpochProfile:
        """The profile of jobs each given as (batch sizes, durations) per epoch."""
        varying = {i: (np.asarray(b, dtype=np.int64), np.asarray(d, dtype=float)) for i, (b, d) in enumerate(jobs)}
        return cls(np.array([b.size for b, _ in varying.values()], dtype=np.int64),
                   np.array([b[0] if b.size else 0 for b, _ in varying.values()], dtype=np.int64),
                   np.zeros(len(jobs)), varying)

    def isolated_runtimes(self) -> np.ndarray:
        """Sum of each job's epoch durations: its isolated run time."""
        runtimes = self.epochs * self.duration
        for i, (_, durations) in self.varying.items():
            runtimes[i] = durations.sum()
        return runtimes

    def job(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(batch sizes, durations) of job ``i``'s epochs."""
        if i in self.varying:
            return self.varying[i]
        n = int(self.epochs[i])
        return np.full(n, self.batch_size[i]), np.full(n, self.duration[i])

    def batch_sizes_at(self, jobs: np.ndarray, epochs: np.ndarray) -> np.ndarray:
        """The batch size of each of ``jobs`` in its epoch ``epochs`` (0-based)."""
        varying, fixed = self.varying, self.batch_size
        pairs = zip(jobs.tolist(), epochs.tolist())
        return np.array([varying[i][0][e] if i in varying else fixed[i] for i, e in pairs], dtype=np.int64)


@dataclass(frozen=True)
class RoundState:
    """What a planner sees at a round boundary: the round's index and start (s), the GPU
    count, and per active job (in admission order) its trace id, GPUs, completed epochs,
    total epochs and admission time; ``profile`` covers every job of the trace."""

    round_index: int
    now: float
    gpus: int
    round_length: float
    jobs: np.ndarray
    scale_factors: np.ndarray
    epochs_done: np.ndarray
    epochs_total: np.ndarray
    admitted: np.ndarray
    profile: EpochProfile


@dataclass
class RoundPlan:
    """The jobs (trace ids) to run this round; ``solved``: a new plan was computed for it,
    taking ``seconds``."""

    jobs: np.ndarray
    solved: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


class RoundPlanner(Policy):
    """A policy with its own integer per-round schedule (see the module doc)."""

    plans = Plans.GPUS

    @abstractmethod
    def plan(self, state: RoundState) -> RoundPlan: ...

    def allocate(self, problem):
        raise ProblemError(f"policy {self.name!r} plans whole rounds over time, not one allocation: "
                           f"run it with `schedopt simulate --policy {self.name}`")
