"""What the Helios baselines share, as the published simulators run them (Lucid
``simulation/policy/policy.py`` and ``simulation/simulator.py``, HeliosArtifact ``framework/QSSF
Service/policies/policy.py``): each virtual cluster is simulated on its own (on a cluster without VCs
the whole cluster is one VC); a job holds exactly its requested GPUs on the nodes the consolidated
placement (:func:`~allocators.helios.placement.consolidate`) gives it, in its VC; progress is the
trace duration (``duration_based``); the ``helios`` preset's 1 s slots step time as the artifacts do.

:class:`HeliosPolicy` keeps the free GPUs per node and the node plan as entries (one per job and
node); :class:`QueuePolicy` is the non-preemptive walk of FIFO, SJF and QSSF: at every decision,
after ended jobs release their GPUs and arrivals join their VC's queue, the queue (ordered by
:meth:`QueuePolicy.order`) is walked from its head and each job that can be placed now starts; the
first that cannot stops the walk (the head blocks its queue; other VCs go on). A started job runs to
completion on its nodes (no preemption, no migration, no overhead).
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from allocators.helios.placement import consolidate
from allocators.slot_plans import Charge, JobState, JobsView, NodePlan, SlotPolicy
from optim import SolveOptions

_PENDING, _RUNNING = int(JobState.PENDING), int(JobState.RUNNING)


class HeliosPolicy(SlotPolicy):
    """VC layout, free GPUs per node and the node plan (entries) of a Helios baseline."""

    system = "Helios"
    elastic = False
    duration_based = True
    places = True
    charge = Charge.NEVER
    restart_seconds = 0.0
    preset = "helios"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        super().__init__(solver, options)
        self.free = np.zeros(0, dtype=np.int64)
        #: (VCs + 1,) node offsets of each VC, and each job's VC
        self.bounds = np.zeros(1, dtype=np.int64)
        self.vc = np.zeros(0, dtype=np.int64)
        self.entries: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * 3
        #: the jobs in submission order (ties in trace order), their submission times, and how many
        #: of them arrived by the last decision (the engine admits every job submitted by then)
        self._arrival: np.ndarray | None = None
        self._submitted = np.zeros(0)
        self._taken = 0
        self._started: list[tuple[int, np.ndarray, np.ndarray]] = []

    def arrivals(self, view: JobsView) -> list[np.ndarray]:
        """Per VC, the jobs that arrived since the last decision, in submission order (ties in
        trace order); the first call lays out the VCs."""
        if self._arrival is None:
            self._layout(view)
        seen, self._taken = self._taken, int(np.searchsorted(self._submitted, view.now, side="right"))
        new = self._arrival[seen:self._taken]
        new = new[view.state[new] == _PENDING]
        vc = self.vc[new]
        return [new[vc == k] for k in range(len(self.bounds) - 1)]

    def release(self, gone: np.ndarray) -> None:
        """Drop the entries where ``gone`` (their GPUs become free)."""
        if gone.any():
            jobs, nodes, gpus = self.entries
            self.free += np.bincount(nodes[gone], weights=gpus[gone], minlength=self.free.size).astype(np.int64)
            self.entries = [jobs[~gone], nodes[~gone], gpus[~gone]]

    def release_ended(self, view: JobsView) -> None:
        self.release(view.state[self.entries[0]] != _RUNNING)

    def start(self, view: JobsView, j: int, k: int | None = None) -> bool:
        """Place job ``j`` in VC ``k`` (default: its own) now (consolidated); False when it does not fit."""
        k = int(self.vc[j]) if k is None else k
        lo, hi = int(self.bounds[k]), int(self.bounds[k + 1])
        where = consolidate(self.free[lo:hi], int(view.requested[j]), view.gpus_per_node)
        if where is None:
            return False
        on, count = where
        self.free[lo + on] -= count
        self._started.append((j, lo + on, count))
        return True

    def plan(self) -> NodePlan:
        """The node plan: the entries kept, and the jobs started at this decision."""
        jobs, nodes, gpus = self.entries
        if self._started:
            jobs = np.concatenate([jobs, *(np.full(on.size, j) for j, on, _ in self._started)])
            nodes = np.concatenate([nodes, *(on for _, on, _ in self._started)])
            gpus = np.concatenate([gpus, *(count for _, _, count in self._started)])
            self._started = []
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
        self._arrival = np.argsort(view.submit, kind="stable")
        self._submitted = view.submit[self._arrival]
        self._taken = 0
        self.laid_out(view)

    def laid_out(self, view: JobsView) -> None:
        """Hook after the layout (per-job tables of a subclass)."""


class QueuePolicy(HeliosPolicy):
    """A non-preemptive Helios baseline: one ordered queue per VC whose head blocks it (module doc)."""

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None):
        super().__init__(solver, options)
        self.queues: list[list[int]] = []

    def allocate(self, view: JobsView) -> NodePlan:
        arrived = self.arrivals(view)
        self.release_ended(view)
        for k, new in enumerate(arrived):
            queue = self.order(view, self.queues[k], new.tolist())
            started = 0
            for j in queue:
                if not self.start(view, j):
                    break
                started += 1
            del queue[:started]
            self.queues[k] = queue
        return self.plan()

    @abstractmethod
    def order(self, view: JobsView, queue: list[int], new: list[int]) -> list[int]:
        """The VC's queue for this decision's walk: ``queue`` (the jobs waiting, in their order;
        may be reordered in place) with the ``new`` arrivals (in submission order) in the policy's
        order."""

    def laid_out(self, view: JobsView) -> None:
        self.queues = [[] for _ in range(len(self.bounds) - 1)]


__all__ = ["HeliosPolicy", "QueuePolicy"]
