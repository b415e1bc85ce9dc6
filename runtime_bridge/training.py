"""One lease of a reference workload: resume from its checkpoint, train, checkpoint."""

from __future__ import annotations

import os

from .lease import LeaseIterator, LeaseReport
from .workloads import Workload


def train_lease(workload: Workload, *, steps: int | None = None, seconds: float | None = None,
                checkpoint: str | os.PathLike | None = None, save_to: str | os.PathLike | None = None) -> LeaseReport:
    """Train ``workload`` for one lease of ``steps`` and/or ``seconds``. With a
    ``checkpoint`` path, resume from it when it exists and save to it (or to ``save_to``)
    when the lease ends."""
    out = checkpoint if save_to is None else save_to
    hooks = {} if checkpoint is None else {
        "restore": lambda: workload.resume(checkpoint), "checkpoint": lambda step: workload.save(out)}
    lease = LeaseIterator(workload.batches(), steps=steps, seconds=seconds, start_step=workload.step, **hooks)
    for batch in lease:
        workload.train_step(batch)
    return lease.report
