"""Helios' Quasi-Shortest-Service-First (``qssf``), as the published simulators run it (Lucid
``simulation/policy/qssf.py``, HeliosArtifact ``framework/QSSF Service/policies/qssf.py``; facts
restated, no code taken), with the history estimator of :mod:`allocators.helios.estimator`:

- one queue per VC; at every decision (after ended jobs release their GPUs and join the
  estimator's history) arrivals are appended and the queue is stably sorted by requested GPUs;
  then, if the queue holds any job besides this decision's arrivals, every job without a priority
  gets one, its estimated service (estimated duration x GPUs) at that time, kept for good, and the
  queue is stably sorted by priority (ties: fewer GPUs, then the previous order). A queue of
  arrivals only is walked in GPU order unestimated; the artifacts estimate its leftovers a second
  later, so a decision is asked for then;
- non-preemptive: the queue is walked from its head, each job placed now
  (:func:`~allocators.helios.placement.consolidate`) starts, the first that cannot blocks its queue;
  a started job runs to completion on its nodes, no overhead.

Differences: the estimator (its module doc) is the artifact's history half, by user where the log
names users (Helios' logs), else with the VC for the user (Philly); job names are not matched; its
history is every VC's ended jobs of the simulated range (the artifacts' VC processes each learn
their own VC's ends, on top of the jobs submitted before the range, which a windowed log here does
not hold). Ties in submission are in trace order.
"""

from __future__ import annotations

import numpy as np

from allocators.helios.estimator import HistoryEstimator
from allocators.helios.queued import QueuePolicy
from allocators.slot_plans import JobState, JobsView
from optim import SolveOptions

_DONE = int(JobState.DONE)


class HeliosQssf(QueuePolicy):
    name = "qssf"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        super().__init__(solver, options)
        self.estimated = np.zeros(0, dtype=bool)

    def laid_out(self, view: JobsView) -> None:
        super().laid_out(view)
        J = len(view.state)
        self._gpus = view.requested.tolist()
        counts, self._column = np.unique(view.requested, return_inverse=True)
        #: the estimator's group of each job: its user where the log names users, else its VC
        self._group = self.vc if view.user is None else view.user
        self.by_user = view.user is not None
        self.estimator = HistoryEstimator(int(self._group.max(initial=0)) + 1, counts.size)
        self.estimated = np.zeros(J, dtype=bool)
        self.priority = [0.0] * J
        self._duration = view.duration  # read for ended jobs only (and the notes' error)

    def release_ended(self, view: JobsView) -> None:
        jobs = self.entries[0]
        done = np.unique(jobs[view.state[jobs] == _DONE])
        if done.size:
            self.estimator.learn(view.now, view.submit[done], np.full(done.size, view.now), self._group[done],
                                 self._column[done], self._duration[done])
        super().release_ended(view)

    def order(self, view: JobsView, queue: list[int], new: list[int]) -> list[int]:
        # a queue is estimated all or none: arrivals only are left unestimated, any other walk estimates all
        stale = bool(queue) and not self.estimated[queue[0]]
        if not new and not stale:
            return queue
        todo = (queue if stale else []) + new
        queue.extend(new)
        queue.sort(key=self._gpus.__getitem__)
        if len(queue) > len(new):
            jobs = np.array(todo)
            service = self.estimator.estimate(view.now, self._group[jobs], self._column[jobs], view.requested[jobs])
            for j, s in zip(todo, service.tolist(), strict=True):
                self.priority[j] = s
            self.estimated[jobs] = True
            queue.sort(key=self.priority.__getitem__)
        return queue

    def next_decision(self, view: JobsView) -> float:
        if any(queue and not self.estimated[queue[0]] for queue in self.queues):
            return view.now + 1.0
        return np.inf

    def notes(self) -> list[str]:
        if not self.estimated.size:
            return []
        jobs = np.flatnonzero(self.estimated)
        guess = np.array(self.priority)[jobs] / np.maximum(np.array(self._gpus)[jobs], 1)
        error = np.abs(guess - self._duration[jobs])
        mae = f"{error.mean():.0f} s (median {np.median(error):.0f} s)" if jobs.size else "none"
        features = ("user, GPUs (job names not matched)" if self.by_user else
                    "VC, GPUs; the log has no users or job names, so the VC stands for the user")
        return [f"qssf: Helios' history estimator (features: {features}), learning each of the "
                f"{self.estimator.learnt} jobs of the run as it ended "
                f"(an estimate reads only jobs ended before it); {jobs.size} jobs waited to be estimated, "
                f"mean absolute error of their estimated durations against the trace's {mae}"]


__all__ = ["HeliosQssf"]
