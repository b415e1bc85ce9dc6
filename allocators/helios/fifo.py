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
of whole seconds. The walk is :class:`~allocators.helios.queued.QueuePolicy`'s.
"""

from __future__ import annotations

from allocators.helios.queued import QueuePolicy
from allocators.slot_plans import JobsView


class HeliosFifo(QueuePolicy):
    name = "fifo-helios"

    def order(self, view: JobsView, queue: list[int], new: list[int]) -> list[int]:
        queue.extend(new)
        return queue


__all__ = ["HeliosFifo"]
