"""Tiresias (+TunedJobs), the baseline of Pollux's artifact (``tiresias``).

- Every job runs on exactly its tuned GPUs and batch (the workload's ``num_replicas`` and
  ``batch_size``), or not at all.
- Two queues: a job enters Q0 at its tail when it arrives and moves to the tail of Q1 once its
  attained service reaches 16 h of GPU time (57,600 GPU·s), counted as the wall-clock seconds it was
  scheduled (restart delays included) times its GPUs; no promotion.
- Each decision walks Q0 then Q1 with all the cluster's GPUs: a job that fits runs, one that does
  not is preempted or waits, and later smaller ones may still run.
- Jobs that keep running keep their GPUs; a newly started one takes, repeatedly, the node with the
  most free GPUs (:func:`~allocators.pollux.placement.fill_most_free`), in queue order.
"""

from __future__ import annotations

import numpy as np

from allocators.pollux.placement import PolluxSystemPolicy, fill_most_free
from allocators.slot_plans import JobsView
from optim import SolveOptions

#: GPU-seconds of service after which a job leaves the first queue
DEMOTE_GPU_SECONDS = 16 * 3600.0


class TiresiasPollux(PolluxSystemPolicy):
    name = "tiresias"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        super().__init__(solver, options)
        self.queues: tuple[list[int], list[int]] = ([], [])
        self.known: set[int] = set()
        self.scheduled: dict[int, float] = {}
        self.executed: dict[int, float] = {}
        self.checked: dict[int, float] = {}

    def allocate(self, view: JobsView) -> np.ndarray:
        now, active = view.now, view.active()
        live = set(active.tolist())
        for j in active.tolist():
            if j not in self.known:
                self.known.add(j)
                self.queues[0].append(j)
                self.executed[j], self.checked[j] = 0.0, now
        for q in self.queues:
            q[:] = [j for j in q if j in live]
        for j in active.tolist():
            if self.scheduled.get(j):
                self.executed[j] += now - self.checked[j]
            self.checked[j] = now
        for j in list(self.queues[0]):
            if self.executed[j] * view.requested[j] >= DEMOTE_GPU_SECONDS:
                self.queues[0].remove(j)
                self.queues[1].append(j)
        budget = view.total_gpus
        order = self.queues[0] + self.queues[1]
        for j in order:
            runs = view.requested[j] <= budget
            self.scheduled[j] = runs
            budget -= view.requested[j] if runs else 0
        plan = np.zeros_like(view.nodes)
        free = np.full(view.nodes.shape[1], view.gpus_per_node, dtype=np.int64)
        for j in order:
            if self.scheduled[j] and view.nodes[j].any():
                plan[j] = view.nodes[j]
                free -= plan[j]
        for j in order:
            if self.scheduled[j] and not plan[j].any():
                plan[j] = fill_most_free(free, int(view.requested[j]))
        return plan
