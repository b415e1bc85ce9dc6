"""Helios' Tiresias (``tiresias-helios``; ``tiresias`` is Pollux'), as the Lucid artifact runs it
(``simulation/policy/tiresias.py``, preemption overhead ``Policy.ckpt_overhead`` in
``simulation/policy/policy.py``; HeliosArtifact's QSSF service has no Tiresias; facts restated, no
code taken):

- a job's priority is its attained service, GPU·s run (GPUs x seconds run, over all its runs);
- two queues, one discretization threshold of 18,000 GPU·s: a job above it is in the low queue,
  the rest in the high one; inside a queue, jobs in submission order (ties in trace order);
- decisions every 60 s only (on multiples of 60 s from the trace's first submission; between them
  ended jobs release their GPUs and nothing starts): per VC, running and waiting jobs are walked
  high queue first with the VC's GPUs as quota: a job that fits the quota takes its GPUs from it
  (a waiting one is to start), a running one that does not fit is preempted (it releases its GPUs
  and waits); then the jobs to start are placed in that order
  (:func:`~allocators.helios.placement.consolidate`), one that cannot be placed keeps waiting and
  the walk goes on (no head-of-line blocking);
- a preempted job pays a checkpoint / restart overhead when it resumes: 40 s on up to 8 GPUs, 60 s
  on more (``Charge.ON_RESUME``); its first start is free; running jobs never move.

Differences: the artifact counts a job's priority every second it holds GPUs, its restart overhead
included, and releases a job one second after its remaining time reaches zero (``end = start +
duration + 1`` without preemption); here the priority is the engine's attained GPU·s (overhead
excluded) and a job ends when its remaining time does.
"""

from __future__ import annotations

import math

import numpy as np

from allocators.helios.queued import HeliosPolicy
from allocators.slot_plans import Charge, JobState, JobsView, NodePlan
from optim import SolveOptions

#: GPU·s of attained service above which a job is in the low-priority queue
THRESHOLD = 18_000.0
#: seconds between scheduling decisions
INTERVAL = 60.0

_PENDING, _RUNNING = int(JobState.PENDING), int(JobState.RUNNING)


class HeliosTiresias(HeliosPolicy):
    name = "tiresias-helios"
    charge = Charge.ON_RESUME
    restart_seconds = 40.0
    restart_wide = (8, 60.0)

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        super().__init__(solver, options)
        self.preemptions = 0

    def allocate(self, view: JobsView) -> NodePlan:
        self.arrivals(view)
        self.release_ended(view)
        active = view.active()
        if not active.size or abs(view.now - INTERVAL * round(view.now / INTERVAL)) > 1e-6:
            return self.plan()
        low = view.attained[active] > THRESHOLD
        order = active[np.lexsort((active, view.submit[active], low, self.vc[active]))]
        take = self._within_quota(order, view.requested[order], view.vc_gpus())
        running = view.state[order] == _RUNNING
        preempt = order[running & ~take]
        if preempt.size:
            self.release(np.isin(self.entries[0], preempt))
            self.preemptions += preempt.size
        for j in order[~running & take].tolist():
            self.start(view, j)
        return self.plan()

    def _within_quota(self, order: np.ndarray, need: np.ndarray, quota: np.ndarray) -> np.ndarray:
        """Per VC (``order`` grouped by VC), the jobs that fit the VC's GPUs walked in order."""
        edges = np.searchsorted(self.vc[order], np.arange(quota.size + 1))
        take = np.zeros(order.size, dtype=bool)
        for k in range(quota.size):
            lo, hi = int(edges[k]), int(edges[k + 1])
            if need[lo:hi].sum() <= quota[k]:
                take[lo:hi] = True
                continue
            left = int(quota[k])
            for i in range(lo, hi):
                if need[i] <= left:
                    left -= int(need[i])
                    take[i] = True
        return take

    def next_decision(self, view: JobsView) -> float:
        if not (view.state == _PENDING).any():
            return math.inf
        return INTERVAL * (math.floor(view.now / INTERVAL + 1e-9) + 1)

    def notes(self) -> list[str]:
        return [f"tiresias-helios: {self.preemptions} preemption(s)"]


__all__ = ["INTERVAL", "THRESHOLD", "HeliosTiresias"]
