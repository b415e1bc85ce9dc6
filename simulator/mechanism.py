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

from dataclasses import dataclass, field

import numpy as np

from simulator.combos import Combos

NEW_JOB_PRIORITY = 1e9
MAX_CACHED_ORDERS = 24


class Mechanism:
    def __init__(self, combos: Combos, capacities: np.ndarray, round_length: float, reset_interval: float,
                 skip_zero_priority: bool = False):
        self.combos = combos
        self.capacities = np.asarray(capacities, dtype=np.int64)
        self._capacities = self.capacities.tolist()
        self.half_round = round_length / 2.0
        self.reset_interval = reset_interval
        self.skip_zero_priority = skip_zero_priority
        self.worker_time = np.zeros(self.capacities.shape[0])
        self.last_reset = 0.0
        self._cached: tuple[int, _Candidates] | None = None

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
        c.changed()

    def credit(self, rows: np.ndarray, types: np.ndarray, seconds: np.ndarray) -> None:
        """Rows ``rows`` (distinct) ran ``seconds`` on ``types`` in the round that just ended."""
        self.combos.time[rows, types] += seconds
        self.worker_time += np.bincount(types, weights=seconds, minlength=self.worker_time.size)

    def _candidates(self, rows: np.ndarray) -> _Candidates:
        """The (row, type) pairs the walk may take, with everything about them that changes
        only when rows come, the allocation changes or a reset folds deficits. When rows
        only died since (``combos.departed``), the candidates stay: the walk skips the rows
        of departed jobs, and the others keep their order."""
        cached = self._cached
        if cached is None or cached[0] != self.combos.version:
            cached = self._cached = (self.combos.version,
                                     _Candidates.build(self.combos, rows, self.capacities, self.skip_zero_priority))
        return cached[1]

    def select(self, rows: np.ndarray, type_order: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Rows to run next round and their types, out of the live ``rows`` (see the module doc).

        Every (row, type) candidate is ordered by one lexsort on (position of the type in
        ``type_order``, priority, deficit, allocation, row); the walk then takes rows type by
        type and stops on a type once it is full."""
        c = self.combos
        cand = self._candidates(rows)
        wt = self.worker_time[cand.j]
        share = np.divide(c.time.take(cand.cells), wt, out=np.zeros(wt.shape), where=wt > 0)
        minus_prio = np.divide(cand.minus_alloc, share, out=cand.minus_alloc * NEW_JOB_PRIORITY, where=share > 0)
        type_rank, ends = cand.by_type(type_order)
        walk = cand.k[np.lexsort((minus_prio, type_rank))].tolist()  # candidates are in tie order
        first, second, scale, pairs = cand.first, cand.second, cand.scale, cand.pairs
        taken: set[int] = set(c.departed)
        take = taken.add
        chosen, chosen_types = [], []
        begin = 0
        for t, end in zip(type_order, ends):
            left = self._capacities[t]
            picked = len(chosen)
            for i in walk[begin:end]:
                job = first[i]
                if job in taken or scale[i] > left or (pairs and second[i] in taken):
                    continue
                left -= scale[i]
                take(job)
                if pairs and second[i] >= 0:
                    take(second[i])
                chosen.append(i)
                if left == 0:
                    break
            chosen_types += [t] * (len(chosen) - picked)
            begin = end
        return cand.rows[np.asarray(chosen, dtype=np.int64)], np.asarray(chosen_types, dtype=np.int64)


@dataclass(frozen=True)
class _Candidates:
    """Candidate k of the walk is row ``rows[k[·]]`` (the live rows it was built on) on
    type ``j[·]``, cell ``cells[·]`` of the per-type arrays (row × types + type): the row can
    run there and its GPUs fit the type (and, for FIFO policies, it has an allocation there).
    ``minus_alloc`` is minus the allocation, 0 where the priority is 0 (no allocation, not in
    the last one, or the row cannot run there). The candidates are in tie order: by (deficit,
    allocation) descending, then row, the order among equal priorities; ``pairs``: some row is
    a pair of jobs."""

    rows: np.ndarray
    k: np.ndarray
    j: np.ndarray
    cells: np.ndarray
    minus_alloc: np.ndarray
    first: list[int]
    second: list[int]
    scale: list[int]
    pairs: bool
    _orders: dict = field(default_factory=dict)

    @classmethod
    def build(cls, c: Combos, rows: np.ndarray, capacities: np.ndarray, skip_zero_priority: bool) -> _Candidates:
        alloc = np.where(c.in_alloc[rows, None], c.alloc[rows], 0.0)
        can_run = c.can_run[rows]
        ok = can_run & (c.scale[rows, None] <= capacities)
        if skip_zero_priority:
            ok &= alloc > 0
        k, j = np.nonzero(ok)
        cells, minus_alloc = rows[k] * ok.shape[1] + j, -alloc[k, j]
        tie = np.lexsort((k, minus_alloc, -c.deficit.take(cells)))
        members = c.members[rows]
        return cls(rows, k[tie], j[tie], cells[tie], minus_alloc[tie],
                   members[:, 0].tolist(), members[:, 1].tolist(), c.scale[rows].tolist(),
                   bool((members[:, 1] >= 0).any()))

    def by_type(self, type_order: list[int]) -> tuple[np.ndarray, list[int]]:
        """Each candidate's position of its type in ``type_order``, and where each type's
        candidates end in the walk (cached for the first few orders: shuffled orders of many
        types would not repeat)."""
        key = tuple(type_order)
        hit = self._orders.get(key)
        if hit is None:
            type_rank = np.argsort(type_order)[self.j]
            hit = (type_rank, np.cumsum(np.bincount(type_rank, minlength=len(type_order))).tolist())
            if len(self._orders) < MAX_CACHED_ORDERS:
                self._orders[key] = hit
        return hit
