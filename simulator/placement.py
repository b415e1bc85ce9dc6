"""Placing the selected rows on GPUs: lease extension first, then consolidation.

GPUs of type j are numbered 0..W_j-1 and grouped into servers of ``gpus_per_server[j]``
consecutive GPUs. Rows are placed largest scale factor first (in selection order within a
scale). Within a scale, a row keeps exactly the GPUs it held in the previous round when
they are all still free (a lease extension); the others then take GPUs on as few servers
as possible: the fullest server that still has room for the whole gang, else the servers
with the most free GPUs, in turn.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Placed(NamedTuple):
    """Per placed row: its GPU ids on its type, whether the lease was extended, and the
    number of servers it spans."""

    gpus: list[tuple[int, ...]]
    extended: np.ndarray
    servers: np.ndarray


class Placement:
    def __init__(self, capacities: np.ndarray, gpus_per_server: np.ndarray):
        self.capacities = np.asarray(capacities, dtype=np.int64)
        self.per_server = np.minimum(np.asarray(gpus_per_server, dtype=np.int64), self.capacities)
        self._per_server = self.per_server.tolist()
        self.single_gpu_servers = bool((self.per_server == 1).all())
        #: row -> (type, GPU ids, their bit mask) of the last placement
        self.previous: dict[int, tuple[int, tuple[int, ...], int]] = {}

    def place(self, rows: np.ndarray, types: np.ndarray, scale: np.ndarray) -> Placed:
        """GPUs for the selected ``rows`` (on ``types``, needing ``scale`` GPUs each); the
        placement becomes the previous one for the next round.

        One pass over the rows by (type, scale descending, selection order): each
        (type, scale) group first extends the leases it can, then hands out GPUs anew. Last
        round's GPU sets are disjoint, so an extension only has to avoid GPUs handed out
        anew on its type, and a single-GPU-server type hands out its lowest free ids. The
        GPUs in use on a type are the bits of one integer."""
        k = rows.shape[0]
        gpus: list[tuple[int, ...]] = [()] * k
        masks = [0] * k
        extended = [False] * k
        rows_l, types_l, scale_l = rows.tolist(), types.tolist(), scale.tolist()
        previous = self.previous
        order = np.lexsort((-scale, types)).tolist() if k > 1 else list(range(k))
        order.append(-1)  # ends the last group
        group, used, fresh = (-1, -1), 0, False
        rest: list[int] = []
        for i in order:
            key = (types_l[i], scale_l[i]) if i >= 0 else (-1, -1)
            if key != group or i < 0:
                if rest:
                    used = self._hand_out(rest, group, used, gpus, masks)
                    fresh, rest = True, []
                if i < 0:
                    break
                if key[0] != group[0]:
                    used, fresh = 0, False
                group = key
            prev = previous.get(rows_l[i])
            if (prev is not None and prev[0] == key[0] and len(prev[1]) == key[1]
                    and not (fresh and prev[2] & used)):
                gpus[i], masks[i], extended[i] = prev[1], prev[2], True
                used |= prev[2]
            else:
                rest.append(i)
        self.previous = dict(zip(rows_l, zip(types_l, gpus, masks)))
        if self.single_gpu_servers:
            servers = np.asarray(scale, dtype=np.int64)
        else:
            per_server = self.per_server[types].tolist()
            servers = np.array([len({g // p for g in gs}) if p > 1 else len(gs) for gs, p in zip(gpus, per_server)],
                               dtype=np.int64)
        return Placed(gpus, np.array(extended, dtype=bool), servers)

    def _hand_out(self, rest: list[int], group: tuple[int, int], used: int, gpus: list[tuple[int, ...]],
                  masks: list[int]) -> int:
        """GPUs anew for the rows ``rest`` of one (type, scale) group, given the ``used`` bits
        of the type (single-GPU servers: the lowest free ids); returns the bits in use after."""
        j, s = group
        per = self._per_server[j]
        if per == 1:
            for i in rest:
                taken, mask = [], 0
                for _ in range(s):
                    low = ~used & (used + 1)  # the lowest clear bit
                    used |= low
                    mask |= low
                    taken.append(low.bit_length() - 1)
                gpus[i], masks[i] = tuple(taken), mask
            return used
        free = np.array([not used >> g & 1 for g in range(int(self.capacities[j]))], dtype=bool)
        for i in rest:
            gpus[i] = self._take(free, s, per)
            masks[i] = sum(1 << g for g in gpus[i])
            used |= masks[i]
        return used

    @staticmethod
    def _take(free: np.ndarray, s: int, per_server: int) -> tuple[int, ...]:
        """``s`` GPUs from the ``free`` mask (updated) on servers of ``per_server``: the
        fullest server with room for all of them, else the servers with most room in turn."""
        pad = (-free.size) % per_server
        grid = np.concatenate([free, np.zeros(pad, dtype=bool)]).reshape(-1, per_server)
        room = grid.sum(axis=1)
        fits = np.flatnonzero(room >= s)
        if fits.size:
            server = fits[np.argmin(room[fits])]
            picked = server * per_server + np.flatnonzero(grid[server])[:s]
        else:
            order = np.argsort(-room, kind="stable")
            cells = np.concatenate([srv * per_server + np.flatnonzero(grid[srv]) for srv in order])
            picked = cells[:s]
        free[picked] = False
        return tuple(picked.tolist())
