"""What the one loop (:class:`simulator.engine.loop.Engine`) asks of a clock, how a run fails, and
how far in simulated time a run may go (:data:`HORIZON`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from simulator.metrics import SimulationResult

#: progress(now, jobs done, jobs, solves, seconds of the last solve)
Progress = Callable[[float, int, int, int, float], None]


#: the latest simulated time (s from the trace's time 0) a run may reach: ten years. Published traces
#: span months; a longer run takes a decision per round, slot or planned change all the way (a 10-year
#: job on ElasticFlow's planner, which re-plans every 64 slots: 82,000 decisions), and float times lose
#: whole seconds past 2**53 s (at 9e18 s, t + 60 == t: the clock would stand still)
HORIZON = 10 * 365 * 86400.0


class SimulationError(RuntimeError):
    """The simulation cannot go on (a policy or solver failure, a stalled schedule, a run past
    :data:`HORIZON`)."""


def check_horizon(source: str, ids: np.ndarray, arrival: np.ndarray, work: np.ndarray, rate: np.ndarray,
                  alone: np.ndarray) -> None:
    """Refuse, before it starts, a run that would simulate past :data:`HORIZON`: the first job (in trace
    order) that arrives past it, or whose end can be no earlier than past it (its ``arrival`` plus
    ``alone``, the seconds its ``work`` takes alone on the cluster at its fastest ``rate``, or less
    where the clock caps its run: no schedule ends it sooner), is a :class:`SimulationError` naming
    ``source``, the job and the value."""
    late = np.flatnonzero(~(arrival + alone <= HORIZON))
    if not late.size:
        return
    j = int(late[0])
    limit = f"past the {HORIZON:.0f} s (10 years) of simulated time a run may reach"
    if not arrival[j] <= HORIZON:
        raise SimulationError(f"{source}: job {ids[j]}: arrival {_number(arrival[j])} s is {limit}")
    raise SimulationError(f"{source}: job {ids[j]}: work {_number(work[j])} takes {alone[j]:.3g} s even alone at "
                          f"its fastest rate ({rate[j]:.3g}/s); arriving at {_number(arrival[j])} s, it would end "
                          f"{limit}")


def _number(value) -> str:
    """A trace's number as it reads: whole numbers in full, others as Python writes them."""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    x = float(value)
    return str(int(x)) if x.is_integer() and abs(x) < 2.0**63 else repr(x)


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
