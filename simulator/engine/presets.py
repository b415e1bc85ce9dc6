"""Each published system's simulator settings, by name (``schedopt simulate --preset NAME``),
for both clocks: what a round lasts and what it charges for round policies, what a slot lasts
for slot policies.

- ``gavel``: 360 s rounds, allocations reset at most every 1920 s, no checkpoint overhead;
  360 s slots;
- ``shockwave``: 120 s rounds, reset at most every 1000 s, 20 s checkpoint/restore, completion
  forced at 1.5x the isolated run time; 120 s slots;
- ``elasticflow``: 60 s rounds, reset at every change, no checkpoint overhead; 60 s slots.
- ``pollux``: 60 s rounds, reset at every change, 30 s restart delay charged as checkpoint
  overhead; 60 s slots on a fixed grid (decisions at multiples of 60 s only, none on events).
- ``helios``: the Helios and Lucid simulators' 1 s time step: 1 s rounds and slots, no overhead
  (slots decide on every arrival and completion, at most one decision a second).

Slots charge the overhead each policy's system published (ElasticFlow's scaling / restart model,
:mod:`simulator.overheads`; Pollux's 30 s restart delay); an explicit option overrides any field of
a preset.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    """One system's settings: round length, reset interval, checkpoint overhead and runtime cap
    of the round clock (s; cap as a multiple of the isolated run time, None: none), and the slot
    clock's slot length (s) and whether it keeps to its grid."""

    system: str
    round_length: float
    reset_interval: float
    overhead: float
    max_runtime_factor: float | None
    slot: float
    #: slots keep to their grid (no decision on events)
    grid: bool = False

    def round_fields(self) -> dict:
        return {"round_length": self.round_length, "reset_interval": self.reset_interval,
                "overhead": self.overhead, "max_runtime_factor": self.max_runtime_factor}


PRESETS = {
    "gavel": Preset("Gavel", 360.0, 1920.0, 0.0, None, 360.0),
    "shockwave": Preset("Shockwave", 120.0, 1000.0, 20.0, 1.5, 120.0),
    "elasticflow": Preset("ElasticFlow", 60.0, 0.0, 0.0, None, 60.0),
    "pollux": Preset("Pollux", 60.0, 0.0, 30.0, None, 60.0, grid=True),
    "helios": Preset("Helios", 1.0, 0.0, 0.0, None, 1.0),
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None


__all__ = ["PRESETS", "Preset", "get_preset"]
