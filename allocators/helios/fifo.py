"""Helios' FIFO (``fifo-helios``), as the published simulators run it (Lucid
``simulation/policy/fifo.py``, HeliosArtifact ``framework/QSSF Service/policies/fifo.py``; facts
restated, no code taken):

- one queue per virtual cluster (the artifacts simulate each VC on its own); a job joins its VC's
  queue when it arrives, the queue ordered by submission (ties in trace order: the artifacts' pandas
  sort leaves ties unspecified);
- at every decision, after the jobs that ended release their GPUs, the queue is walked from its
  head: each job that can be placed now starts, on exactly its requested GPUs
  (:func:`~allocators.helios.placement.consolidate`); the first job that cannot be placed stops the
  walk, so the head blocks its queue (no backfilling), though other VCs go on;
- a started job runs to completion on the nodes it got (no preemption, no migration, no overhead);
  progress is its trace duration (``end = start + duration`` in the artifacts).

On a cluster without VCs the whole cluster is one VC. The artifacts step time by 1 s; the ``helios``
preset's 1 s slots with decisions on every arrival and completion take the same decisions on a trace
of whole seconds.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from allocators.helios.placement import consolidate
from allocators.slot_plans import Charge, JobState, JobsView, NodePlan, SlotPolicy
from optim import SolveOptions

_PENDING, _RUNNING = int(JobState.PENDING), int(JobState.RUNNING)


class HeliosFifo(SlotPolicy):
    name = "fifo-helios"
    system = "Helios"
    elastic = False
    duration_based = True
    places = True
    charge = Charge.NEVER
    restart_seconds = 0.0
    preset = "helios"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        super().__init__(solver, options)
        self.queues: list[deque[int]] = []
        self.free = np.zeros(0, dtype=np.int64)
        self.bounds = np.zeros(0, dtype=np.int64)
        self.vc = np.zeros(0, dtype=np.int64)
        self.entries: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * 3
        self._known = np.zeros(0, dtype=bool)

    def allocate(self, view: JobsView) -> NodePlan:
        if not self._known.size:
            self._layout(view)
        jobs, nodes, gpus = self.entries
        ended = view.state[jobs] != _RUNNING
        if ended.any():
            self.free += np.bincount(nodes[ended], weights=gpus[ended], minlength=self.free.size).astype(np.int64)
            jobs, nodes, gpus = jobs[~ended], nodes[~ended], gpus[~ended]
        new = np.flatnonzero((view.state == _PENDING) & ~self._known)
        self._known[new] = True
        for j in new[np.argsort(view.submit[new], kind="stable")].tolist():
            self.queues[self.vc[j]].append(j)
        started: list[tuple[int, np.ndarray, np.ndarray]] = []
        for k, queue in enumerate(self.queues):
            lo, hi = int(self.bounds[k]), int(self.bounds[k + 1])
            while queue:
                where = consolidate(self.free[lo:hi], int(view.requested[queue[0]]), view.gpus_per_node)
                if where is None:
                    break
                on, count = where
                self.free[lo + on] -= count
                started.append((queue.popleft(), lo + on, count))
        if started:
            jobs = np.concatenate([jobs, *(np.full(on.size, j) for j, on, _ in started)])
            nodes = np.concatenate([nodes, *(on for _, on, _ in started)])
            gpus = np.concatenate([gpus, *(count for _, _, count in started)])
        self.entries = [jobs, nodes, gpus]
        return NodePlan(jobs, nodes, gpus)

    def _layout(self, view: JobsView) -> None:
        J = len(view.state)
        if view.vc is None:
            self.bounds = np.array([0, view.total_gpus // view.gpus_per_node], dtype=np.int64)
            self.vc = np.zeros(J, dtype=np.int64)
        else:
            self.bounds, self.vc = np.asarray(view.vc_bounds, dtype=np.int64), np.asarray(view.vc, dtype=np.int64)
        self.free = np.full(int(self.bounds[-1]), view.gpus_per_node, dtype=np.int64)
        self.queues = [deque() for _ in range(len(self.bounds) - 1)]
        self._known = np.zeros(J, dtype=bool)


__all__ = ["HeliosFifo"]
