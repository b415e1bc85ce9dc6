"""Free-capacity step functions and the EDF look-ahead plan.

A :class:`FreeProfile` holds free GPUs as a step function of time: ``free[i]`` on
``[times[i], times[i+1])``, the last step extending to infinity. Plans subtract from it.
"""

from __future__ import annotations

import math

import numpy as np

from allocators.slot_plans import JobsView


class FreeProfile:
    def __init__(self, start: float, total: int):
        self.times = np.array([float(start)])
        self.free = np.array([int(total)], dtype=np.int64)

    def key(self, t: float) -> int:
        """Index of the step starting at ``t``, splitting a step if needed."""
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        if self.times[i] == t:
            return i
        self.times = np.insert(self.times, i + 1, t)
        self.free = np.insert(self.free, i + 1, self.free[i])
        return i + 1

    def end(self, i: int) -> float:
        return float(self.times[i + 1]) if i + 1 < len(self.times) else math.inf


def align(start: float, t: float, slot: float) -> float:
    """``t`` rounded up to the slot grid that starts at ``start``."""
    return start + math.ceil((t - start) / slot - 1e-12) * slot


def edf_finish_times(view: JobsView, jobs: np.ndarray) -> np.ndarray:
    """Finish time of each job of ``jobs`` (in priority order) when each in turn takes its cap where
    that many GPUs are free, else the largest allowed free count, from now on (the published EDF
    planner; a job holds its GPUs to the end of the slot it finishes in)."""
    profile = FreeProfile(view.now, view.total_gpus)
    allowed = view.allowed(jobs)
    counts = view.gpu_counts
    finish = np.full(len(jobs), math.inf)
    for k, j in enumerate(jobs):
        ok = counts[allowed[k]]
        if not ok.size:
            continue
        rates = view.rate(np.full(ok.size, j), ok)
        rem = float(view.remaining[j])
        i = 0
        while True:
            avail = profile.free[i]
            usable = ok[ok <= avail]
            if usable.size:
                a = usable[-1]
                rate = rates[np.searchsorted(ok, a)]
                start, stop = float(profile.times[i]), profile.end(i)
                done = start + rem / rate
                if done <= stop:
                    finish[k] = done
                    profile.key(min(align(view.now, done, view.slot), stop))
                    profile.free[i] -= a
                    break
                rem -= (stop - start) * rate
                profile.free[i] -= a
            i += 1
    return finish
