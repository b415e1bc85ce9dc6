"""The one simulation loop, for every policy on every clock.

The first decision point is the clock's :meth:`~simulator.engine.clock.Clock.start` for the first
arrival (the arrival itself, or the next boundary of a fixed grid). Each pass is one decision
point at simulated time ``now``:

1. **credit** the interval that ended at ``now``: its leases go to the run's executor, jobs
   gain the work it reports, finished and failed jobs leave;
2. **admit** the jobs that arrived by ``now``, in arrival order (ties in trace order);
3. stop once the clock says the run is **over** (closing it at ``now``);
4. **decide**: the policy plans the next interval, the plan is placed on GPUs and launched as
   leases;
5. move to the **next** decision point, which the clock picks from what it launched and the next
   arrival.

A :class:`Clock` is one way of turning a policy's plan into leases:
:class:`~simulator.engine.rounds.Rounds` (fixed rounds; Gavel's mechanism turns time shares into
leases, or a round planner names the jobs) and :class:`~simulator.engine.slots.Slots` (slots plus
events; an integer plan of GPUs per job, with admission). :class:`Engine` picks the clock by the
view of the workload it is given.
"""

from __future__ import annotations

import math

import numpy as np

from simulator.engine.clock import Clock, Progress
from simulator.engine.rounds import Rounds
from simulator.engine.slots import Slots
from simulator.metrics import SimulationResult
from simulator.round_view import RoundView


class Engine:
    """Runs ``view`` under ``policy`` on the clock its view is for: a
    :class:`~simulator.round_view.RoundView` on :class:`~simulator.engine.rounds.Rounds`
    (``config`` a :class:`~simulator.engine.rounds.SimulationConfig`; ``prices`` per type for
    cost-aware policies), a :class:`~simulator.slot_view.SlotView` on
    :class:`~simulator.engine.slots.Slots` (``config`` a :class:`~simulator.engine.slots.SlotConfig`).
    ``executor`` runs each interval's leases (default: simulated, every planned step done)."""

    def __init__(self, view, policy, config=None, *, prices: np.ndarray | None = None, executor=None):
        if isinstance(view, RoundView):
            self.clock: Clock = Rounds(view, policy, config, prices, executor)
        elif prices is not None:
            raise ValueError(f"policy {policy.name!r} plans GPUs per slot and takes no prices")
        else:
            self.clock = Slots(view, policy, config, executor)

    def run(self, progress: Progress | None = None) -> SimulationResult:
        clock = self.clock
        order = np.argsort(clock.arrivals, kind="stable")
        times = clock.arrivals[order].tolist()
        J = order.size
        now = clock.start(float(times[0]) if J else 0.0)
        last, pending = now, 0
        while True:
            clock.credit(last, now)
            arrived = pending
            while arrived < J and times[arrived] <= now:
                arrived += 1
            if arrived > pending:
                clock.admit(order[pending:arrived], now)
                pending = arrived
            if clock.over(pending < J):
                return clock.result(now)
            clock.decide(now, pending < J)
            if progress is not None:
                done, solves, seconds = clock.status()
                progress(now, done, J, solves, seconds)
            last, now = now, clock.next_time(now, times[pending] if pending < J else math.inf)
