"""The simulation engine: one workload, one executor contract, one result, two clocks.

- :class:`Engine` (:mod:`simulator.engine.rounds`): fixed rounds; policies that plan time shares
  (Gavel's mechanism turns them into leases) or whole rounds (Shockwave);
- :class:`SlotEngine` (:mod:`simulator.engine.slots`): slots plus events (arrivals, completions, a
  policy's own requests); policies that plan GPUs per job and admit or decline arrivals
  (ElasticFlow and its baselines, Chronus).

Both hand each interval's leases to an :class:`~simulator.executor.Executor` and report a
:class:`~simulator.metrics.SimulationResult` with the same columns (:mod:`simulator.outcomes`).
:func:`simulator.simulate.simulate` picks the clock by what the policy plans.
"""

from simulator.engine.rounds import GAVEL_TYPE_ORDER, Engine, Progress, SimulationConfig, SimulationError, type_order
from simulator.engine.slots import SlotConfig, SlotEngine

__all__ = ["GAVEL_TYPE_ORDER", "Engine", "Progress", "SimulationConfig", "SimulationError", "SlotConfig", "SlotEngine",
           "type_order"]
