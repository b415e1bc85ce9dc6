"""``ef``: ElasticFlow's published planner without admission control, replayed on the published
event-time profile (:mod:`formulations.elasticflow_events`).

Every job is admitted. At each decision all active jobs are planned in deadline order (best
effort last) on {now: G}, also a job that can no longer make its deadline (it takes what fits
up to and after its deadline), and the GPUs free now go out by marginal GPU time. As in the
published simulator (pkusys/ElasticFlow, ``scheduler.py``: ``ef_sim_jobs``):

- a job holds its GPUs until its planned, slot-aligned end (:meth:`EFReplay.releases`; the
  engine adds the decision's overhead), and one that completes in the interval ending there
  finishes *at* that end (its deadline is judged on it);
- the next decision also comes at each job's first planned change of its GPU count; such a
  change event stays due after later re-plans, except one at the planned end of a job that
  holds GPUs (the published end-event bookkeeping drops it when the end moves by the overhead).
"""

from __future__ import annotations

import numpy as np

from allocators.slot_plans import Charge, JobsView, SlotPolicy
from formulations.elasticflow_events import MAXSIZE, PlanJob, allocate_free, plan_all


class EFReplay(SlotPolicy):
    """ElasticFlow's published planner without admission control: every job is admitted."""

    name = "ef"
    caps = "elasticflow"
    charge = Charge.EVERY_DECISION
    whole_seconds = True
    finish_at_release = True

    def __init__(self, solver: str = "highs", options=None):
        super().__init__(solver, options)
        self._ends = np.zeros(0)
        self._events: set[float] = set()

    def allocate(self, view: JobsView) -> np.ndarray:
        jobs = view.active()
        deadline = np.where(view.best_effort[jobs], MAXSIZE, view.deadline[jobs])
        order = np.argsort(deadline, kind="stable")
        jobs, deadline = jobs[order], deadline[order]
        allowed = view.allowed(jobs)
        plans = [PlanJob(levels=view.gpu_counts[allowed[k]], rates=view.rates[j][allowed[k]],
                         need=float(view.remaining[j]), deadline=float(deadline[k]))
                 for k, j in enumerate(jobs.tolist())]
        profile, _ = plan_all(plans, view.now, view.slot, view.total_gpus)
        allocate_free(plans, profile, view.now, view.slot, view.total_gpus)
        gpus = np.zeros(len(view.state), dtype=np.int64)
        self._ends = np.full(len(view.state), np.nan)
        gpus[jobs] = [plan.gpus for plan in plans]
        self._ends[jobs] = [plan.end for plan in plans]
        changes = {min((t for t in plan.alloc if t > view.now), default=np.inf) for plan in plans}
        self._events = {t for t in self._events | changes if view.now < t < np.inf}
        self._events -= {plan.end for plan in plans if plan.gpus}
        return gpus

    def next_decision(self, view: JobsView) -> float:
        return min(self._events, default=np.inf)

    def releases(self, view: JobsView) -> np.ndarray:
        return self._ends
