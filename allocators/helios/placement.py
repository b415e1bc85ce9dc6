"""Helios' and Lucid's consolidated placement (``ConsolidatePlacement`` of the published simulators:
HeliosArtifact ``framework/QSSF Service/policies/placer/consolidate.py``, Lucid
``simulation/policy/placer/consolidate.py``), restated for nodes of ``per_node`` GPUs:

- the VC must have the job's GPUs free in all, else it does not fit;
- a job of at most a node's GPUs goes on one node: the one with the fewest free GPUs that still
  holds it (best fit; ties to the lowest node), else it does not fit (free GPUs spread over
  several nodes do not count);
- a job of ``q`` whole nodes takes the ``q`` lowest entirely free nodes, else it does not fit;
- a job of ``q`` whole nodes and ``r`` GPUs more takes the ``q`` lowest entirely free nodes and
  ``r`` GPUs on the next node in the order of most free GPUs (the next entirely free node if there is
  one, else the node with the most free GPUs), else it does not fit.

The published code raises for nodes of other than 8 GPUs; the rules above read the same for any size.
"""

from __future__ import annotations

import numpy as np


def consolidate(free: np.ndarray, n: int, per_node: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Where a job of ``n`` GPUs goes on nodes with ``free`` GPUs each (module doc): (node indices
    into ``free``, GPUs on each), or None when it does not fit now."""
    if n <= 0 or free.sum() < n:
        return None
    if n <= per_node:
        fits = np.flatnonzero(free >= n)
        if not fits.size:
            return None
        return fits[np.argmin(free[fits])][None], np.array([n])
    whole, rest = divmod(n, per_node)
    empty = np.flatnonzero(free == per_node)
    if empty.size < whole:
        return None
    nodes, gpus = empty[:whole], np.full(whole, per_node)
    if not rest:
        return nodes, gpus
    if empty.size > whole:
        last = empty[whole]
    else:
        partial = np.flatnonzero(free < per_node)
        last = partial[np.argmax(free[partial])]
        if free[last] < rest:
            return None
    return np.append(nodes, last), np.append(gpus, rest)


__all__ = ["consolidate"]
