"""The lease-aware iterator: wraps any training loop's batch source and ends the lease.

A lease is what a job receives for one round: at most ``steps`` training steps and at
most ``seconds`` of wall clock. The iterator yields batches until either runs out (it
stops *before* a step that would cross the deadline, judged by the last step's time),
calls the ``checkpoint`` hook once, and leaves a :class:`LeaseReport` with the
throughput. No module or global state: one iterator per lease, usable in any process.

    lease = LeaseIterator(loader, steps=500, seconds=360.0,
                          restore=lambda: workload.resume(path), checkpoint=lambda step: workload.save(path))
    for batch in lease:
        workload.train_step(batch)
    print(lease.report.steps_per_second)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

#: why a lease ended
STEP_BUDGET, DEADLINE, EXHAUSTED = "steps", "deadline", "exhausted"


@dataclass(frozen=True)
class LeaseReport:
    """What one lease did: ``steps`` trained in ``seconds`` of training (checkpointing
    excluded, timed apart), the job's step counter at the end, and why it ended."""

    start_step: int
    steps: int
    seconds: float
    checkpoint_seconds: float
    reason: str

    @property
    def step(self) -> int:
        """The job's step counter after the lease."""
        return self.start_step + self.steps

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


class LeaseIterator:
    """Yield batches from ``batches`` within a lease of ``steps`` and/or ``seconds``.

    ``restore()`` (optional) is called when iteration starts and returns the job's step
    counter to resume from; ``checkpoint(step)`` (optional) is called once when the lease
    ends, with the counter after the lease. The iterator never draws a batch it does not
    yield, so a batch source whose state is checkpointed resumes exactly. A re-iterable
    source (a DataLoader, a list) is walked again at its end, so a lease spans epochs; a
    one-shot iterator that runs dry ends the lease. Leaving the loop early (``break``, an
    exception) ends the lease without a checkpoint or report. ``clock`` returns seconds.
    """

    def __init__(
        self,
        batches: Iterable,
        *,
        steps: int | None = None,
        seconds: float | None = None,
        start_step: int = 0,
        restore: Callable[[], int] | None = None,
        checkpoint: Callable[[int], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if steps is not None and steps < 0:
            raise ValueError(f"lease steps must be >= 0, got {steps}")
        if seconds is not None and not seconds >= 0:
            raise ValueError(f"lease seconds must be >= 0, got {seconds}")
        self._batches = batches
        self.steps_budget = steps
        self.seconds_budget = seconds
        self.start_step = start_step
        self._restore = restore
        self._checkpoint = checkpoint
        self._clock = clock
        self.report: LeaseReport | None = None

    def __iter__(self) -> Iterator:
        if self.report is not None:
            raise RuntimeError("a lease is iterated once; make a new LeaseIterator for the next lease")
        if self._restore is not None:
            self.start_step = int(self._restore())
        started = last = self._clock()
        last_step_time = 0.0
        done = 0
        reason = EXHAUSTED
        source = iter(self._batches)
        epoch_steps = 0
        while True:
            if self.steps_budget is not None and done >= self.steps_budget:
                reason = STEP_BUDGET
                break
            if self.seconds_budget is not None and self._past_deadline(last - started, last_step_time):
                reason = DEADLINE
                break
            try:
                batch = next(source)
            except StopIteration:
                if source is self._batches or epoch_steps == 0:
                    break
                source, epoch_steps = iter(self._batches), 0
                continue
            yield batch
            done += 1
            epoch_steps += 1
            now = self._clock()
            last_step_time, last = now - last, now
        trained = last - started
        if self._checkpoint is not None:
            self._checkpoint(self.start_step + done)
        self.report = LeaseReport(self.start_step, done, trained, self._clock() - last, reason)

    def _past_deadline(self, elapsed: float, last_step_time: float) -> bool:
        """No time left, or the next step (as long as the last one) would end past the deadline."""
        return elapsed >= self.seconds_budget or elapsed + last_step_time > self.seconds_budget
