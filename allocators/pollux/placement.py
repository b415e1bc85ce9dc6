"""How Pollux's baselines put a job's GPUs on nodes, and what they share as slot policies."""

from __future__ import annotations

import numpy as np

from allocators.slot_plans import Charge, SlotPolicy

#: seconds a job loses whenever its GPUs change (the published simulator's restart delay)
RESTART_SECONDS = 30.0


class PolluxSystemPolicy(SlotPolicy):
    """A policy of Pollux's artifact: plans GPUs per node, pays 30 s on any change of them, and runs
    with Pollux's simulator settings (60 s intervals on a fixed grid)."""

    system = "Pollux"
    places = True
    charge = Charge.ON_PLACEMENT
    restart_seconds = RESTART_SECONDS
    preset = "pollux"
    elastic = False


def fill_most_free(free: np.ndarray, need: int) -> np.ndarray:
    """GPUs per node for a job of ``need`` GPUs: repeatedly the node with the most free GPUs (the
    lowest index on ties), as many as it has or the job still needs; ``free`` is updated."""
    row = np.zeros(free.size, dtype=np.int64)
    while need > 0:
        n = int(np.argmax(free))
        take = min(int(free[n]), need)
        if take <= 0:
            raise ValueError(f"no free GPU left for {need} more")
        row[n] += take
        free[n] -= take
        need -= take
    return row
