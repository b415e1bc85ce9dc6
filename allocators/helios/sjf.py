"""Helios' shortest job first (``sjf``) with oracle durations, as the published simulators run it
(Lucid ``simulation/policy/sjf.py``, HeliosArtifact ``framework/QSSF Service/policies/sjf.py``;
facts restated, no code taken):

- one queue per VC; arrivals are appended in submission order, then at every decision the queue is
  stably sorted by the job's trace ``duration`` (the oracle), so ties keep arrival order (ties in
  submission: trace order, as :mod:`allocators.helios.fifo`);
- non-preemptive: the queue is walked from its head, each job placed now starts
  (:func:`~allocators.helios.placement.consolidate`), the first that cannot be placed blocks its
  queue (no backfilling); a started job runs to completion on its nodes, no overhead.

Differences: none in the rules; the artifacts step time by 1 s, the ``helios`` preset decides on
every arrival and completion, which takes the same decisions on a trace of whole seconds.
"""

from __future__ import annotations

from allocators.helios.queued import QueuePolicy
from allocators.slot_plans import JobsView


class HeliosSjf(QueuePolicy):
    name = "sjf"

    def order(self, view: JobsView, queue: list[int], new: list[int]) -> list[int]:
        if new:
            queue.extend(new)
            queue.sort(key=self._duration.__getitem__)
        return queue

    def laid_out(self, view: JobsView) -> None:
        super().laid_out(view)
        self._duration = view.duration.tolist()


__all__ = ["HeliosSjf"]
