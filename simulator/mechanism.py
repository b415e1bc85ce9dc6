"""Gavel's round mechanism: from time fractions to the jobs that run in the next round.

State per combination row c and type j (held in :class:`~simulator.combos.Combos`):
``time[c, j]``, time received since the last reset, starting at half a round so a new
job's share is never 0/0 (a new pair starts at 0); ``deficit[c, j]``; and per type the
total ``worker_time[j]``, rebuilt at each reset from the rows' counters and then grown by
the time every finished round ran (once per combination, not per GPU).

* reset at time t (before each new allocation): ``deficit += x_cj · (t − t_reset) −
  (time_cj − round/2)`` with the allocation that was in force; counters return to round/2.
* priority ``p_cj = x_cj / (time_cj / worker_time_j)``; ``x_cj · 1e9`` while the type has
  no time yet; 0 where ``x_cj = 0``, the row cannot run on j, or the row was not part of
  the last allocation.
* selection: per type in the given order, rows by (priority, deficit, allocation)
  descending, ties by arrival order; a row is taken when none of its jobs was taken this
  round and its s GPUs fit in what is left of the type.
"""

from __future__ import annotations

import numpy as np

from .combos import Combos

NEW_JOB_PRIORITY = 1e9


class Mechanism:
    def __init__(self, combos: Combos, capacities: np.ndarray, round_length: float, reset_interval: float,
                 skip_zero_priority: bool = False):
        self.combos = combos
        self.capacities = np.asarray(capacities, dtype=np.int64)
        self.half_round = round_length / 2.0
        self.reset_interval = reset_interval
        self.skip_zero_priority = skip_zero_priority
        self.worker_time = np.zeros(self.capacities.shape[0])
        self.last_reset = 0.0
        self._ranks: dict[tuple[int, ...], np.ndarray] = {}

    def reset_due(self, now: float) -> bool:
        """The reset interval has passed, or the last reset was at time 0 (Gavel treats a
        reset at the start of the clock as provisional)."""
        return now - self.last_reset >= self.reset_interval or self.last_reset == 0

    def reset(self, now: float) -> None:
        """Fold the time each live row received since the last reset into its deficit."""
        c, rows = self.combos, self.combos.live()
        elapsed = now - self.last_reset
        should = np.where(c.in_alloc[rows, None], c.alloc[rows] * elapsed, 0.0)
        c.deficit[rows] += should - (c.time[rows] - self.half_round)
        c.time[rows] = self.half_round
        self.worker_time[:] = self.half_round * rows.size
        self.last_reset = now

    def credit(self, rows: np.ndarray, types: np.ndarray, seconds: np.ndarray) -> None:
        """Rows ``rows`` (distinct) ran ``seconds`` on ``types`` in the round that just ended."""
        self.combos.time[rows, types] += seconds
        self.worker_time += np.bincount(types, weights=seconds, minlength=self.worker_time.size)

    def priorities(self, rows: np.ndarray) -> np.ndarray:
        """(k, n) priorities of ``rows``."""
        c = self.combos
        alloc = c.alloc[rows]
        wt = self.worker_time
        share = np.divide(c.time[rows], wt, out=np.zeros(alloc.shape), where=wt > 0)
        prio = np.divide(alloc, share, out=alloc * NEW_JOB_PRIORITY, where=share > 0)
        prio[~(c.in_alloc[rows, None] & (alloc != 0) & c.can_run[rows])] = 0.0
        return prio

    def select(self, rows: np.ndarray, type_order: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Rows to run next round and their types (see the module doc).

        Every (row, type) candidate is ordered by one lexsort on (position of the type in
        ``type_order``, priority, deficit, allocation, row); the walk then takes rows type by
        type and stops on a type once it is full."""
        c = self.combos
        prio = self.priorities(rows)
        scale = c.scale[rows]
        ok = c.can_run[rows] & (scale[:, None] <= self.capacities)
        if self.skip_zero_priority:
            ok &= prio > 0
        k, j = np.nonzero(ok)
        rank = self._ranks.get(tuple(type_order))
        if rank is None:
            rank = self._ranks[tuple(type_order)] = np.argsort(type_order)
        alloc = np.where(c.in_alloc[rows[k]], c.alloc[rows[k], j], 0.0)
        order = np.lexsort((k, -alloc, -c.deficit[rows[k], j], -prio[k, j], rank[j]))
        cand, cand_type = k[order].tolist(), j[order]
        ends = np.cumsum(np.bincount(rank[cand_type], minlength=len(type_order))).tolist()
        members = c.members[rows]
        first, second, scale_list = members[:, 0].tolist(), members[:, 1].tolist(), scale.tolist()
        taken: set[int] = set()
        chosen, chosen_types = [], []
        begin = 0
        for t, end in zip(type_order, ends):
            left = int(self.capacities[t])
            for i in cand[begin:end]:
                if left == 0:
                    break
                if first[i] in taken or second[i] in taken or scale_list[i] > left:
                    continue
                left -= scale_list[i]
                taken.add(first[i])
                if second[i] >= 0:
                    taken.add(second[i])
                chosen.append(i)
                chosen_types.append(t)
            begin = end
        return rows[np.asarray(chosen, dtype=np.int64)], np.asarray(chosen_types, dtype=np.int64)
