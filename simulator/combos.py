"""The schedulable units of a round: single jobs and, for space-sharing policies, pairs.

Rows are appended as jobs arrive and never move; a row dies when one of its jobs leaves.
``members[c] = (a, b)`` with ``b = -1`` for a single job; ``rates[c, j]`` holds the
members' rates on type j (second entry 0 for singles); the row index is the insertion order that
breaks ties in the priority walk; ``scale[c]`` is its GPU count and ``can_run[c, j]``
says every member has a positive rate on type j. The mechanism's per-row state lives here too:
``time[c, j]`` (time received on type j since the last reset), ``deficit[c, j]``,
``alloc[c, j]`` (the policy's time fraction) and ``in_alloc[c]`` (the row was part of the
last allocation). Storage grows geometrically, so adding is amortized O(1).
"""

from __future__ import annotations

import numpy as np


class Combos:
    def __init__(self, num_types: int, capacity: int = 64):
        self.n = num_types
        self.size = 0
        self.members = np.full((capacity, 2), -1, dtype=np.int64)
        self.rates = np.zeros((capacity, num_types, 2))
        self.scale = np.zeros(capacity, dtype=np.int64)
        self.can_run = np.zeros((capacity, num_types), dtype=bool)
        self.alive = np.zeros(capacity, dtype=bool)
        self.time = np.zeros((capacity, num_types))
        self.deficit = np.zeros((capacity, num_types))
        self.alloc = np.zeros((capacity, num_types))
        self.in_alloc = np.zeros(capacity, dtype=bool)
        self._live: np.ndarray | None = None
        self.version = 0
        #: jobs whose rows died since ``version`` last changed (a departure alone leaves the
        #: other rows' order and state as they were)
        self.departed: set[int] = set()

    def add(self, members: np.ndarray, rates: np.ndarray, scale: int, time: float) -> np.ndarray:
        """Append rows (``members`` (k, 2), ``rates`` (k, n, 2), each on ``scale`` GPUs) with
        ``time`` received on every type, no deficit and no allocation; returns their indices."""
        k = members.shape[0]
        if self.size + k > self.alive.shape[0]:
            cap = max(2 * self.alive.shape[0], self.size + k)
            self.members = _grow(self.members, cap, -1)
            self.rates = _grow(self.rates, cap, 0.0)
            self.scale = _grow(self.scale, cap, 0)
            self.can_run = _grow(self.can_run, cap, False)
            self.alive = _grow(self.alive, cap, False)
            self.time = _grow(self.time, cap, 0.0)
            self.deficit = _grow(self.deficit, cap, 0.0)
            self.alloc = _grow(self.alloc, cap, 0.0)
            self.in_alloc = _grow(self.in_alloc, cap, False)
        rows = np.arange(self.size, self.size + k)
        self.members[rows] = members
        self.rates[rows] = rates
        self.scale[rows] = scale
        self.can_run[rows] = (rates[:, :, 0] > 0) & ((rates[:, :, 1] > 0) | (members[:, 1] < 0)[:, None])
        self.alive[rows] = True
        self.time[rows] = time
        self.size += k
        self.changed()
        return rows

    def changed(self) -> None:
        """Rows, allocations or deficits changed: views cached from them are stale."""
        self._live = None
        self.version += 1
        self.departed = set()

    def live(self) -> np.ndarray:
        """Indices of live rows, in insertion order (cached until rows are added or killed)."""
        if self._live is None:
            self._live = np.flatnonzero(self.alive[: self.size])
        return self._live

    def is_pair(self, rows: np.ndarray) -> np.ndarray:
        return self.members[rows, 1] >= 0

    def kill_jobs(self, jobs: np.ndarray) -> np.ndarray:
        """Kill every live row containing one of ``jobs``; returns the killed rows."""
        live = self.live()
        gone = np.zeros(int(max(jobs.max(initial=-1), self.members[live].max(initial=-1))) + 2, dtype=bool)
        gone[jobs] = True
        hit = live[gone[self.members[live, 0]] | gone[self.members[live, 1]]]
        self.alive[hit] = False
        self._live = None
        self.departed.update(jobs.tolist())
        return hit


def _grow(array: np.ndarray, capacity: int, fill) -> np.ndarray:
    out = np.full((capacity, *array.shape[1:]), fill, dtype=array.dtype)
    out[: array.shape[0]] = array
    return out
