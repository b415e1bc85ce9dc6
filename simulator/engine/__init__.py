"""The simulation engine: one loop (:class:`Engine`, :mod:`simulator.engine.loop`) for every
policy, on the clock the policy plans for:

- :class:`Rounds` (:mod:`simulator.engine.rounds`): fixed rounds; policies that plan time shares
  (Gavel's mechanism turns them into leases) or whole rounds (Shockwave);
- :class:`Slots` (:mod:`simulator.engine.slots`): slots plus events (arrivals, completions, a
  policy's own requests); policies that plan GPUs per job and admit or decline arrivals
  (ElasticFlow and its baselines, Chronus).

Both hand each interval's leases to one :class:`~simulator.executor.Executor` and report a
:class:`~simulator.metrics.SimulationResult` with the same columns (:mod:`simulator.outcomes`);
each system's published settings are named presets (:mod:`simulator.engine.presets`).
"""

from simulator.engine.clock import Clock, Progress, SimulationError
from simulator.engine.loop import Engine
from simulator.engine.rounds import GAVEL_TYPE_ORDER, Rounds, SimulationConfig, type_order
from simulator.engine.slots import SlotConfig, Slots

__all__ = ["GAVEL_TYPE_ORDER", "Clock", "Engine", "Progress", "Rounds", "SimulationConfig", "SimulationError",
           "SlotConfig", "Slots", "type_order"]
