"""ElasticFlow's published planner replayed on the published event-time profile
(:mod:`formulations.elasticflow_events`): ``ef`` without admission control (:class:`EFReplay`),
``elasticflow-greedy`` with it (:class:`EFAccessReplay`, whose docstring says where it differs).

``ef``: every job is admitted. At each decision all active jobs are planned in deadline order (best
effort last) on {now: G}, also a job that can no longer make its deadline (it takes what fits
up to and after its deadline), and the GPUs free now go out by marginal GPU time. As in the
published simulator (pkusys/ElasticFlow, ``scheduler.py``: ``ef_sim_jobs``):

- a job holds its GPUs until its planned, slot-aligned end (:meth:`EFReplay.releases`; the
  engine adds the decision's overhead) and finishes *at* that end (its deadline is judged on
  it), whatever work is left: the published simulator ends a job at its end event;
- a job's interval is credited up to its planned completion (before overhead) at most, as the
  published ``run_all_jobs`` cuts it (:meth:`EFReplay.runs_until`): the overhead is not made
  up, so a job re-planned after its planned completion but before its end still has the
  overhead's work to do (a defect of the published code, replayed here only);
- jobs are placed as ``ef_sim_jobs`` places its running list (:meth:`EFReplay.placement_order`),
  which decides the GPU sets, hence the cached overheads;
- the next decision also comes at each job's first planned change of its GPU count; such a
  change event stays due after later re-plans until the published end-event bookkeeping drops
  it (:func:`due_events`): when a job's end event leaves that time (a re-plan, or a leftover
  scale-up, moves the end) and no other job ends there, and at the planned end of a job that
  holds GPUs (its end event moves by the overhead). A job whose last seconds of work fit in the
  overhead so makes no progress until a decision falls at its end, as in the published run.

On the Fig. 9 cases of the ElasticFlow paper (``generated/1000job_1500lam.csv``, 240 s slots)
every decision time and every job's progress equal the published simulator's.
"""

from __future__ import annotations

import numpy as np

from allocators.slot_plans import Charge, JobState, JobsView, SlotPolicy
from formulations.elasticflow_compiled_plan import plan_all
from formulations.elasticflow_events import MAXSIZE, PlanJob
from formulations.elasticflow_leftover import allocate_free


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
        self._real_ends = np.zeros(0)
        self._events: set[float] = set()
        #: each job's place in the published running list (inf: never started)
        self._started = np.zeros(0)
        self._count = 0

    def allocate(self, view: JobsView) -> np.ndarray:
        jobs, plans, profile, _ = self._plan(view, view.active())
        moved = self._moved(view, jobs, plans)
        planned = np.array([plan.gpus for plan in plans], dtype=np.int64)
        moved |= allocate_free(plans, profile, view.now, view.slot, view.total_gpus).replaced
        gpus = self._adopt(view, jobs, plans)
        self._record_starts(view, jobs, planned, gpus)
        self._events = due_events(self._events, plans, moved, view.now, set(first_changes(plans, view.now)))
        return gpus

    def _plan(self, view: JobsView, jobs: np.ndarray) -> tuple[np.ndarray, list[PlanJob], dict, bool]:
        """``jobs`` in planning (deadline, best effort last) order, their plans on {now: G}, the
        profile left and whether every job is on time."""
        deadline = np.where(view.best_effort[jobs], MAXSIZE, view.deadline[jobs])
        order = np.argsort(deadline, kind="stable")
        jobs, deadline = jobs[order], deadline[order]
        allowed = view.allowed(jobs)
        plans = [PlanJob(levels=view.gpu_counts[allowed[k]], rates=view.rates[j][allowed[k]],
                         need=float(view.remaining[j]), deadline=float(deadline[k]))
                 for k, j in enumerate(jobs.tolist())]
        profile, ok = plan_all(plans, view.now, view.slot, view.total_gpus)
        return jobs, plans, profile, ok

    def _moved(self, view: JobsView, jobs: np.ndarray, plans: list[PlanJob]) -> set:
        """End-event times the re-plan leaves: the jobs' previous releases where their plan
        ends elsewhere now, and those of the jobs that completed since the last decision."""
        moved = {t for t, plan in zip(view.release[jobs].tolist(), plans) if not np.isnan(t) and t != plan.end}
        if self._ends.size == view.state.size:
            ended = ~np.isnan(self._ends) & (view.state != JobState.PENDING) & (view.state != JobState.RUNNING)
            moved |= set(view.release[ended].tolist())
        return moved

    def _adopt(self, view: JobsView, jobs: np.ndarray, plans: list[PlanJob]) -> np.ndarray:
        """GPUs per job now; keeps each plan's end and completion."""
        gpus = np.zeros(len(view.state), dtype=np.int64)
        gpus[jobs] = [plan.gpus for plan in plans]
        self._ends = np.full(len(view.state), np.nan)
        self._ends[jobs] = [plan.end for plan in plans]
        self._real_ends = np.full(len(view.state), np.nan)
        self._real_ends[jobs] = [plan.real_end for plan in plans]
        return gpus

    def _record_starts(self, view: JobsView, jobs: np.ndarray, planned: np.ndarray, gpus: np.ndarray) -> None:
        """Number the jobs that get GPUs for the first time in the published running-list order:
        those the plan itself starts now (arrival order), then those only the leftover GPUs
        start (planning order, the order the leftover reaches them)."""
        if self._started.size != gpus.size:
            self._started = np.full(gpus.size, np.inf)
        new = (gpus[jobs] > 0) & np.isinf(self._started[jobs])
        by_plan = jobs[new & (planned > 0)]
        first = np.concatenate((by_plan[np.lexsort((by_plan, view.submit[by_plan]))], jobs[new & (planned == 0)]))
        self._started[first] = self._count + np.arange(first.size)
        self._count += first.size

    def placement_order(self, view: JobsView, gpus: np.ndarray) -> np.ndarray:
        """The jobs of a node's size or more in the order they first got GPUs, then the smaller
        ones by decreasing size, ties in that order."""
        on = np.flatnonzero(gpus > 0)
        whole = gpus[on] >= view.gpus_per_node
        return on[np.lexsort((self._started[on], np.where(whole, 0, -gpus[on]), ~whole))]

    def next_decision(self, view: JobsView) -> float:
        return min(self._events, default=np.inf)

    def releases(self, view: JobsView) -> np.ndarray:
        return self._ends

    def runs_until(self, view: JobsView) -> np.ndarray:
        return self._real_ends


def first_changes(plans: list[PlanJob], now: float) -> list[float]:
    """Each plan's first change of its GPU count after ``now`` (inf: none)."""
    return [min((t for t in plan.alloc if t > now), default=np.inf) for plan in plans]


def due_events(events: set, plans: list[PlanJob], moved: set, now: float, joining: set) -> set:
    """The scale events still due after a re-plan at ``now``, as the published event list keeps
    them: the ``joining`` ones are added; an event goes when a job's end event leaves its time
    (``moved``: the jobs' previous releases, those of the jobs that completed since, and the
    ends their scale-ups replaced) and no plan still ends there, and at the plan end of a job
    that holds GPUs (its end event moves by the overhead)."""
    ends = {plan.end for plan in plans}
    kept = {t for t in (events - (moved - ends)) | joining if now < t < np.inf}
    return kept - {plan.end for plan in plans if plan.gpus}


class EFAccessReplay(EFReplay):
    """ElasticFlow's published planner with its admission control (the published
    ``ef-accessctrl``, ``ef_sim_jobs_access_control``), on the ``ef`` replay.

    The arrivals of a decision are planned with every admitted job; all of them are admitted if
    every plan is on time, else all are declined (best-effort arrivals are always admitted). As
    published, and unlike ``ef``: only the earliest first planned change of all jobs becomes a
    scale event, and only when it comes before every other event (ends, arrivals, pending scale
    events); a job without GPUs brings a decision at its planned end too; a job is judged on
    the completion its last plan predicted (:attr:`SlotPolicy.finish_at_plan`); jobs are placed
    largest first, ties in the order the leftover-GPU ranking by marginal GPU time left them."""

    name = "elasticflow-greedy"
    finish_at_plan = True

    def __init__(self, solver: str = "highs", options=None):
        super().__init__(solver, options)
        self._rank = np.zeros(0)
        self._waiting: set[float] = set()

    def admit(self, view: JobsView, arrivals: np.ndarray) -> np.ndarray:
        ok = np.ones(len(arrivals), dtype=bool)
        asking = ~view.best_effort[arrivals]
        if asking.any():
            ok[asking] = self._plan(view, np.union1d(view.active(), arrivals))[3]
        return ok

    def allocate(self, view: JobsView) -> np.ndarray:
        jobs, plans, profile, _ = self._plan(view, view.active())
        moved = self._moved(view, jobs, plans)
        left = allocate_free(plans, profile, view.now, view.slot, view.total_gpus)
        moved |= left.replaced
        gpus = self._adopt(view, jobs, plans)
        self._rank = np.full(len(view.state), np.inf)
        self._rank[jobs[left.ranked]] = np.arange(len(left.ranked))
        kept = due_events(self._events, plans, moved, view.now, set())
        first = min(first_changes(plans, view.now), default=np.inf)
        later = view.submit[view.submit > view.now]
        # kept leaves out the running plans' ends, but first < every plan end is tested below
        if first < min(kept | {plan.end for plan in plans} | {float(later.min()) if later.size else np.inf}):
            kept.add(first)
        self._events = kept
        self._waiting = {plan.end for plan in plans if not plan.gpus}
        return gpus

    def placement_order(self, view: JobsView, gpus: np.ndarray) -> np.ndarray:
        on = np.flatnonzero(gpus > 0)
        return on[np.lexsort((self._rank[on], -gpus[on]))]

    def next_decision(self, view: JobsView) -> float:
        return min(self._events | self._waiting, default=np.inf)
