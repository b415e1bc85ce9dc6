"""Node-aware placement of GPU counts on a cluster of equal nodes.

Jobs are placed in the policy's order (:meth:`allocators.slot_plans.SlotPolicy.placement_order`)
on consecutive GPU ranks: the jobs of a node's size or more come first and take whole nodes
(ceil(n / g) each), the smaller ones pack after them. For power-of-two counts and power-of-two
nodes, with the smaller jobs in decreasing size, this is buddy placement: every job starts at a multiple of
its own size and never straddles a node, so counts that sum to at most G always fit. A job that
does not fit gets no GPUs.

On a cluster split into virtual clusters (:func:`place_in_vcs`) each VC's jobs are placed so on its
own nodes, whose ranks follow the VCs' node order.

A placement is summarized per job by its first rank; ``(first rank, n)`` identifies the GPU
set, which the overhead model's cache keys on.
"""

from __future__ import annotations

import numpy as np


def place(gpus: np.ndarray, order: np.ndarray, gpus_per_node: int, total_gpus: int) -> tuple[np.ndarray, np.ndarray]:
    """First GPU rank of each job in ``order`` (−1 = not placed) and the placed mask.

    ``gpus``: GPUs per job (length J); ``order``: the jobs to place, in placement order."""
    order = np.asarray(order, dtype=np.int64)
    first = np.full(len(gpus), -1, dtype=np.int64)
    placed = np.zeros(len(gpus), dtype=bool)
    if not order.size:
        return first, placed
    n = gpus[order]
    keep = n > 0
    order, n = order[keep], n[keep]
    whole = n >= gpus_per_node
    if (np.diff(whole.astype(np.int8)) > 0).any():
        raise ValueError("place: a job of a node's size or more comes after a smaller one in the order")
    footprint = np.where(whole, -(-n // gpus_per_node) * gpus_per_node, n)
    start = np.concatenate(([0], np.cumsum(footprint)[:-1]))
    fits = start + footprint <= total_gpus
    first[order[fits]] = start[fits]
    placed[order[fits]] = True
    return first, placed


def place_in_vcs(gpus: np.ndarray, order: np.ndarray, gpus_per_node: int, job_vc: np.ndarray,
                 bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`place` inside each VC: the jobs of VC k (``job_vc``), in ``order``, on the ranks of its
    nodes ``bounds[k]:bounds[k + 1]``."""
    order = np.asarray(order, dtype=np.int64)
    first = np.full(len(gpus), -1, dtype=np.int64)
    placed = np.zeros(len(gpus), dtype=bool)
    for k in np.unique(job_vc[order]).tolist():
        mine = order[job_vc[order] == k]
        f, p = place(gpus, mine, gpus_per_node, int(bounds[k + 1] - bounds[k]) * gpus_per_node)
        first[mine] = np.where(p[mine], f[mine] + int(bounds[k]) * gpus_per_node, -1)
        placed[mine] = p[mine]
    return first, placed


class RankSetCache:
    """GPU sets ``(first rank, n)`` any job has used since the last :meth:`clear`."""

    def __init__(self) -> None:
        self._seen = np.empty(0, dtype=np.int64)

    def lookup_and_add(self, first: np.ndarray, n: np.ndarray, shift: int) -> np.ndarray:
        """Whether each set was seen before; all of them are then remembered."""
        keys = first.astype(np.int64) * (1 << shift) + n.astype(np.int64)
        seen = np.isin(keys, self._seen)
        if (~seen).any():
            self._seen = np.union1d(self._seen, keys[~seen])
        return seen

    def clear(self) -> None:
        self._seen = np.empty(0, dtype=np.int64)
