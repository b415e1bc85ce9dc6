"""Placing the selected rows on GPUs: lease extension first, then consolidation.

GPUs of type j are numbered 0..W_j-1 and grouped into servers of ``gpus_per_server[j]``
consecutive GPUs. Rows are placed largest scale factor first (in selection order within a
scale). Within a scale, a row keeps exactly the GPUs it held in the previous round when
they are all still free (a lease extension); the others then take GPUs on as few servers
as possible: the fullest server that still has room for the whole gang, else the servers
with the most free GPUs, in turn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Placed:
    """Per placed row: its GPU ids on its type, whether the lease was extended, and the
    number of servers it spans."""

    gpus: list[tuple[int, ...]]
    extended: np.ndarray
    servers: np.ndarray


class Placement:
    def __init__(self, capacities: np.ndarray, gpus_per_server: np.ndarray):
        self.capacities = np.asarray(capacities, dtype=np.int64)
        self.per_server = np.minimum(np.asarray(gpus_per_server, dtype=np.int64), self.capacities)
        self.single_gpu_servers = bool((self.per_server == 1).all())
        self.previous: dict[int, tuple[int, tuple[int, ...]]] = {}

    def place(self, rows: np.ndarray, types: np.ndarray, scale: np.ndarray) -> Placed:
        """GPUs for the selected ``rows`` (on ``types``, needing ``scale`` GPUs each); the
        placement becomes the previous one for the next round."""
        k = rows.shape[0]
        gpus: list[tuple[int, ...]] = [()] * k
        extended = [False] * k
        rows_l, types_l, scale_l = rows.tolist(), types.tolist(), scale.tolist()
        groups: dict[int, dict[int, list[int]]] = {}
        for i in range(k):
            groups.setdefault(types_l[i], {}).setdefault(scale_l[i], []).append(i)
        previous = self.previous
        for j in sorted(groups):
            per, width = int(self.per_server[j]), int(self.capacities[j])
            used: set[int] = set()
            fresh = False  # GPUs handed out anew on this type (last round's sets are disjoint)
            by_scale = groups[j]
            for s in sorted(by_scale, reverse=True):
                rest = []
                for i in by_scale[s]:
                    prev = previous.get(rows_l[i])
                    if (prev is not None and prev[0] == j and len(prev[1]) == s
                            and (not fresh or used.isdisjoint(prev[1]))):
                        gpus[i], extended[i] = prev[1], True
                        used.update(prev[1])
                    else:
                        rest.append(i)
                if not rest:
                    continue
                fresh = True
                if per == 1:
                    free = [g for g in range(width) if g not in used]
                    for n, i in enumerate(rest):
                        gpus[i] = tuple(free[n * s:(n + 1) * s])
                    used.update(free[: len(rest) * s])
                else:
                    mask = np.ones(width, dtype=bool)
                    mask[list(used)] = False
                    for i in rest:
                        gpus[i] = self._take(mask, s, per)
                    used.update(np.flatnonzero(~mask).tolist())
        self.previous = dict(zip(rows_l, zip(types_l, gpus)))
        if self.single_gpu_servers:
            servers = np.asarray(scale, dtype=np.int64)
        else:
            per_server = self.per_server[types].tolist()
            servers = np.array([len({g // p for g in gs}) if p > 1 else len(gs) for gs, p in zip(gpus, per_server)],
                               dtype=np.int64)
        return Placed(gpus, np.array(extended, dtype=bool), servers)

    @staticmethod
    def _take(free: np.ndarray, s: int, per_server: int) -> tuple[int, ...]:
        if per_server == 1:
            picked = np.flatnonzero(free)[:s]
        else:
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
