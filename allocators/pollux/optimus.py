"""Optimus+Oracle (+TunedJobs), the baseline of Pollux's artifact (``optimus``).

GPU counts by marginal gain, with oracle knowledge of each job's true speed and remaining work:

- every job keeps the workload's tuned global batch; it may use up to ``batch // min_local`` GPUs
  (``ncf``: one);
- in submission order each job gets one GPU while any is free (later jobs wait);
- then, one GPU at a time, the job whose next GPU saves the most remaining time gets it: the gain
  of the k-th to (k+1)-th GPU is ``(t(k) − t(k+1)) · remaining iterations``, with t(n) the measured
  step time on n GPUs packed four to a node (one GPU: at least two micro-steps) and the remaining
  iterations counted from the end of the job's current epoch; ties go to the earlier job; it stops
  when no gain is positive, even with GPUs free;
- a job whose count is unchanged keeps its GPUs; the others, fewest GPUs first (ties in submission
  order), take the nodes with the most free GPUs (:func:`~allocators.pollux.placement.fill_most_free`).
"""

from __future__ import annotations

import numpy as np

from allocators.pollux.placement import PolluxSystemPolicy, fill_most_free
from allocators.slot_plans import JobsView

#: GPUs per node Optimus's speed oracle packs a job on (the published constant)
ORACLE_NODE_GPUS = 4


class OptimusOracle(PolluxSystemPolicy):
    name = "optimus"
    needs_goodput = True

    def allocate(self, view: JobsView) -> np.ndarray:
        jobs = view.coadaptive
        active = view.active()
        active = active[np.argsort(view.submit[active], kind="stable")]
        count = np.zeros(view.nodes.shape[0], dtype=np.int64)
        free = view.total_gpus
        gains: dict[int, float] = {}
        for j in active.tolist():
            if free == 0:
                break
            count[j], free = 1, free - 1
            gains[j] = self._gain(view, jobs, j, 1, free)
        while free > 0 and gains:
            j = max(gains, key=lambda k: (gains[k], -view.submit[k], -k))
            if gains[j] <= 0:
                break
            count[j] += 1
            free -= 1
            gains[j] = self._gain(view, jobs, j, int(count[j]), free)
        return self._place(view, count, active)

    @staticmethod
    def _gain(view: JobsView, jobs, j: int, k: int, free: int) -> float:
        app, batch = jobs.apps[j], int(view.batch_size[j])
        most = 1 if app.name == "ncf" else batch // app.min_local
        if k + 1 > most or free <= 0:
            return 0.0
        t = [jobs.packed_step_seconds(j, n, batch, ORACLE_NODE_GPUS) for n in (k, k + 1)]
        return (t[0] - t[1]) * jobs.remaining_iterations(j, batch)

    @staticmethod
    def _place(view: JobsView, count: np.ndarray, order: np.ndarray) -> np.ndarray:
        plan = np.zeros_like(view.nodes)
        held = view.nodes.sum(axis=1)
        keep = order[(count[order] > 0) & (held[order] == count[order])]
        plan[keep] = view.nodes[keep]
        free = view.gpus_per_node - plan.sum(axis=0)
        move = order[(count[order] > 0) & (held[order] != count[order])]
        for j in move[np.argsort(count[move], kind="stable")].tolist():
            plan[j] = fill_most_free(free, int(count[j]))
        return plan
