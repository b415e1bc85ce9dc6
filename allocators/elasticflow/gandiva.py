"""Gandiva, as the published ElasticFlow simulator implements it (``gandiva_sim_jobs``), on the
slot clock.

Non-elastic (requested GPUs), no admission control, progress in wall-clock seconds against the
trace's ``duration`` (``duration_based``). Jobs live in *node sets*, one list of sets per GPU-count
class (1, 2, 4, 8, 12, 16, ...). A set of class k holds ``ceil(k / gpn)`` whole nodes and has
``capacity = int(nodes × gpn / k)`` job slots; only its first ``capacity`` jobs run, the others are
time-sliced out. Per published decision at time t:

A. *Adjust*: class k's demand is (jobs in class k) × k; its target is
   ``min(floor(demand_k / Σ demand × G), demand_k)`` GPUs against the ``nodes × gpn`` it holds.
   Below target it grows by ``ceil(diff / k)`` sets while free nodes last; the new sets stay
   empty (and are freed again in B) unless the last attempt failed or a set spans several nodes,
   in which case all the class's jobs are dealt round-robin over its sets by utilization (the
   published loop variable is shadowed). Above target it shrinks by ``ceil(-diff / k)`` sets,
   keeping at least one: the first sets' nodes are freed and their jobs go, one by one, to the
   least-utilized remaining set. This consolidates small jobs (e.g. all 1-GPU jobs onto one node).
B. *Time slicing*: the first ``capacity`` jobs of each set are credited the past interval (using
   the membership after A); jobs that reach their duration end. Only when ``int(t) % 60 == 0``
   do the running jobs of an oversubscribed set rotate to its back. Empty sets free their nodes.
C. *Placement* of the arrivals, in submission order: the least-utilized set of the job's class if
   ``util + 1 < capacity`` (strict: a set of capacity ≤ 2 takes one job this way); else a new set
   on free nodes; else oversubscribe the class's first set; else the job waits (pending). A set's
   ``util`` counts the jobs added to it and is not lowered when one finishes. When B freed a set,
   the pending jobs are retried, skipping the one after each success (the published loop removes
   from the list it iterates; ``pending_skip=False`` retries them all).

Engine mapping. The published loop credits [t_prev, t] at t with the membership after A(t); A(t)
depends only on the state left at t_prev, so this policy runs A right after C at t_prev and gives
GPUs to the first ``capacity`` jobs of every set: what the engine credits over [t_prev, t] is
then what the published B(t) credits. Published decisions come only at arrivals (folded per Δ)
while arrivals remain and every Δ after the last one; the engine also decides at predicted
completions. Such an extra decision is *transparent* here: sets, rotation and pending jobs are
left alone and the allocation is kept (a finished job's slot stays idle, as in the published run).
After the last arrival ``next_decision`` asks for t+Δ, keeping the published Δ grid (and so its
rotation residue).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from allocators.slot_plans import Charge, JobState, JobsView, SlotPolicy
from optim import SolveOptions

#: the published node-set classes, in its dict order
CLASSES = (1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 88, 128, 256)


@dataclass
class NodeSet:
    """Whole nodes shared by jobs of one GPU count; ``util`` counts jobs added since the last
    re-deal (published: not lowered when a job finishes)."""

    nodes: list[int]
    capacity: int
    util: int = 0
    jobs: list[int] = field(default_factory=list)

    def running(self) -> list[int]:
        return self.jobs[:self.capacity]


class Gandiva(SlotPolicy):
    name = "gandiva-ef"
    elastic = False
    duration_based = True
    charge = Charge.FULL_WHILE_ARRIVING

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, rotation_period: int = 60,
                 pending_skip: bool = True, transparent_extra_decisions: bool = True):
        super().__init__(solver, options)
        if rotation_period < 1:
            raise ValueError(f"rotation_period must be >= 1 s, got {rotation_period}")
        self.rotation_period = int(rotation_period)
        self.pending_skip = pending_skip
        self.transparent = transparent_extra_decisions
        self.sets: dict[int, list[NodeSet]] = {k: [] for k in CLASSES}
        self.free_nodes: list[int] | None = None
        self.gpus_per_node = 0
        self.total_gpus = 0
        self.pending: list[int] = []
        self._known: np.ndarray | None = None
        self.rotations = 0
        self.extra_decisions = 0
        self.never_placed = 0

    # ------------------------------------------------------------------ the loop

    def allocate(self, view: JobsView) -> np.ndarray:
        state = view.state
        if self.free_nodes is None:
            self.gpus_per_node, self.total_gpus = view.gpus_per_node, view.total_gpus
            self.free_nodes = list(range(view.total_gpus // view.gpus_per_node))
            self._known = np.zeros(len(state), dtype=bool)
        arrived = np.flatnonzero((state != JobState.FUTURE) & ~self._known)
        self._known[arrived] = True
        arriving = bool(np.any(state == JobState.FUTURE))
        if arrived.size == 0 and arriving and self.transparent:
            self.extra_decisions += 1
            return self._grant(view)
        released = self._time_slice(view)                                       # B
        arrived = arrived[np.argsort(view.submit[arrived], kind="stable")]
        for j in arrived.tolist():                                              # C
            if state[j] != JobState.PENDING:
                continue                                                        # declined by the engine
            if not self._place(j, int(view.requested[j])):
                self.pending.append(j)
        if released and self.pending:
            self._retry_pending(view)
        self._adjust()                                                          # A of the next decision
        return self._grant(view)

    def next_decision(self, view: JobsView) -> float:
        """After the last arrival the published loop decides every Δ."""
        if np.any(view.state == JobState.FUTURE):
            return math.inf
        return view.now + view.slot

    def _grant(self, view: JobsView) -> np.ndarray:
        gpus = np.zeros(len(view.state), dtype=np.int64)
        live = (view.state == JobState.PENDING) | (view.state == JobState.RUNNING)
        for k, sets in self.sets.items():
            for s in sets:
                for j in s.running():
                    if live[j]:
                        gpus[j] = k
        return gpus

    # ------------------------------------------------------------------ B: time slicing

    def _time_slice(self, view: JobsView) -> bool:
        """Rotation (only when int(t) % period == 0), removal of finished jobs, freeing empty sets."""
        rotate = int(view.now) % self.rotation_period == 0
        live = (view.state == JobState.PENDING) | (view.state == JobState.RUNNING)
        released = False
        for k in CLASSES:
            kept = []
            for s in self.sets[k]:
                slots = min(len(s.jobs), s.capacity)
                if rotate and len(s.jobs) > slots:
                    s.jobs = s.jobs[slots:] + s.jobs[:slots]
                    self.rotations += 1
                s.jobs = [j for j in s.jobs if live[j]]
                if s.jobs:
                    kept.append(s)
                else:
                    self.free_nodes.extend(s.nodes)
                    released = True
            self.sets[k] = kept
        return released

    # ------------------------------------------------------------------ C: placement

    def _nodes_for(self, k: int) -> int:
        return -(-k // self.gpus_per_node)

    def _new_set(self, k: int) -> NodeSet:
        count = self._nodes_for(k)
        nodes, self.free_nodes = self.free_nodes[:count], self.free_nodes[count:]
        return NodeSet(nodes, int(count * self.gpus_per_node / k))

    def _place(self, j: int, k: int) -> bool:
        if k not in self.sets:
            raise ValueError(f"gandiva: job {j} requests {k} GPUs, not a node-set class ({CLASSES})")
        sets = self.sets[k]
        if sets:
            s = sets.pop(0)
            if s.util + 1 < s.capacity:                                         # strict, as published
                s.util += 1
                s.jobs.append(j)
                sets.append(s)
                sets.sort(key=lambda x: x.util)
                return True
            sets.append(s)
        if self._nodes_for(k) <= len(self.free_nodes):
            s = self._new_set(k)
            s.util = 1
            s.jobs.append(j)
            sets.append(s)
            sets.sort(key=lambda x: x.util)
            return True
        if sets:                                                                # oversubscribe
            s = sets.pop(0)
            s.util += 1
            s.jobs.append(j)
            sets.append(s)
            sets.sort(key=lambda x: x.util)
            return True
        return False

    def _retry_pending(self, view: JobsView) -> None:
        i = 0
        while i < len(self.pending):
            j = self.pending[i]
            if self._place(j, int(view.requested[j])):
                self.pending.pop(i)
                if not self.pending_skip:
                    continue
            i += 1

    # ------------------------------------------------------------------ A: adjust

    def _adjust(self) -> None:
        demand = {k: sum(len(s.jobs) for s in sets) * k for k, sets in self.sets.items()}
        occupied = {k: sum(len(s.nodes) for s in sets) * self.gpus_per_node for k, sets in self.sets.items()}
        total = sum(demand.values())
        if total == 0:
            return
        for k in CLASSES:
            if demand[k] == 0:
                continue
            plan = int(math.floor((demand[k] / total) * self.total_gpus))
            diff = min(plan, demand[k]) - occupied[k]
            if diff > 0:
                self._expand(k, math.ceil(diff / k))
            elif diff < 0:
                self._shrink(k, math.ceil(-diff / k))

    @staticmethod
    def _deal(sets: list[NodeSet], jobs: list[int]) -> None:
        for j in jobs:
            s = sets[0]
            s.util += 1
            s.jobs.append(j)
            sets.sort(key=lambda x: x.util)

    def _expand(self, k: int, count: int) -> None:
        sets = self.sets[k]
        per_set = self._nodes_for(k)
        created_last = False
        for _ in range(count):
            created_last = per_set <= len(self.free_nodes)
            if created_last:
                sets.append(self._new_set(k))
        # published: the re-deal runs iff its (shadowed) loop variable ends > 0
        if not created_last or per_set > 1:
            jobs = []
            for s in sets:
                if s.jobs:
                    jobs.extend(s.jobs)
                    s.jobs = []
                    s.util = 0
            self._deal(sets, jobs)

    def _shrink(self, k: int, count: int) -> None:
        sets = self.sets[k]
        count = min(count, len(sets) - 1)
        if count <= 0:
            return
        jobs = []
        for _ in range(count):
            s = sets.pop(0)
            jobs.extend(s.jobs)
            self.free_nodes.extend(s.nodes)
        self._deal(sets, jobs)

    def notes(self) -> list[str]:
        return [f"gandiva: {self.rotations} rotation(s); {self.extra_decisions} engine decision(s) at a "
                f"completion between arrivals kept the allocation (the published loop has none there)"]


__all__ = ["CLASSES", "Gandiva", "NodeSet"]
