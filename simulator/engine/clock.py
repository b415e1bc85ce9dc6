"""What the one loop (:class:`simulator.engine.loop.Engine`) asks of a clock, and how a run fails."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from simulator.metrics import SimulationResult

#: progress(now, jobs done, jobs, solves, seconds of the last solve)
Progress = Callable[[float, int, int, int, float], None]


class SimulationError(RuntimeError):
    """The simulation cannot go on (a policy or solver failure, or a stalled schedule)."""


class Clock(Protocol):
    """What the loop of :class:`~simulator.engine.loop.Engine` asks of a clock, in the order it asks."""

    #: every job's arrival time (s), in trace order
    arrivals: np.ndarray

    def start(self, first_arrival: float) -> float:
        """The first decision point, given the first arrival."""

    def credit(self, start: float, end: float) -> None:
        """Credit the leases of the interval [start, end] through the executor."""

    def admit(self, jobs: np.ndarray, now: float) -> None:
        """Take in the jobs that arrived by ``now``, in arrival order."""

    def over(self, arriving: bool) -> bool:
        """Whether the run ends here (``arriving``: jobs are still to arrive)."""

    def decide(self, now: float, arriving: bool) -> None:
        """Plan, place and launch the interval starting at ``now``."""

    def next_time(self, now: float, arrival: float) -> float:
        """The next decision point, given the next job ``arrival`` (inf: none); raises
        :class:`SimulationError` when the schedule is stalled."""

    def status(self) -> tuple[int, int, float]:
        """(jobs done, solves, seconds of the last solve), for progress reports."""

    def result(self, now: float) -> SimulationResult:
        """Close the run at ``now`` and report it."""
