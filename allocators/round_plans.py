"""Round planners: policies that return the jobs to run in each round themselves.

A :class:`RoundPlanner` replaces the time-fraction mechanism: at every round boundary the
engine hands it a :class:`RoundState` and runs exactly the jobs it names (gang-scheduled
on their scale factor of GPUs), so the policy owns its integer schedule.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field

import numpy as np

from allocators.base import Plans, Policy
from formulations import ProblemError


@dataclass(frozen=True)
class EpochProfile:
    """Every job's per-epoch batch sizes and isolated epoch durations (s), one flat array
    each: job i's epochs are ``offsets[i]:offsets[i + 1]``."""

    offsets: np.ndarray
    batch_sizes: np.ndarray
    durations: np.ndarray

    @property
    def epochs(self) -> np.ndarray:
        return np.diff(self.offsets)

    def isolated_runtimes(self) -> np.ndarray:
        """Sum of each job's epoch durations: its isolated run time."""
        epochs = self.epochs
        owner = np.repeat(np.arange(epochs.size), epochs)
        return np.bincount(owner, weights=self.durations, minlength=epochs.size)

    def job(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(batch sizes, durations) of job ``i``'s epochs."""
        sl = slice(int(self.offsets[i]), int(self.offsets[i + 1]))
        return self.batch_sizes[sl], self.durations[sl]


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
