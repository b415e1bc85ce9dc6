"""Helios' history-based duration estimator, on the features a job log has: its user (else its VC)
and its GPUs.

The published estimator (HeliosArtifact ``framework/QSSF Service/estimators/estimator.py``,
``NaiveEstimator`` and ``CombinedEstimator.naive_inference``; Lucid ``simulation/estimator/estimator.py``)
learns from the jobs that ended (``update_train_data`` at each end, on top of the jobs submitted
before the simulated range) and estimates a job's service as the mean duration of its user's past
jobs of the same name, preferably those on the same GPU count, times its GPUs; without a match, its
user's mean, then everyone's. Restated here by group: the user where the log names users (Helios'
logs; job names are not matched), else the VC (Philly's VCs are teams; its log has no users and no
job names):

    duration = mean over ended jobs of the same group and GPU count, else of the group, else of all
    (no history at all: 1 s, so jobs rank by their GPUs); service = duration x GPUs.

History only: :meth:`HistoryEstimator.learn` takes a job only once it has ended at the decision
time (a job submitted, or ending, after it is an error), and an estimate at time t reads what was
learnt by t.

Not reproduced: the LightGBM half of ``CombinedEstimator`` (weight 0.9) is published only as
precomputed per-job priorities, without its training code; for Philly both artifacts read
``Philly_lgb.csv``, which ``philly_estimate.py`` makes from each job's own trace duration plus a
random error drawn from Helios' measured error distribution, i.e. an oracle with noise, which
reads the future.
"""

from __future__ import annotations

import numpy as np


class HistoryEstimator:
    """Sums and counts of ended jobs' durations per (group, GPU-count column); see the module doc."""

    def __init__(self, groups: int, columns: int):
        self.sum = np.zeros((groups, columns))
        self.count = np.zeros((groups, columns), dtype=np.int64)
        #: the latest decision time learnt at (an estimate may not be asked for earlier)
        self.now = -np.inf
        self.learnt = 0

    def learn(self, now: float, submit: np.ndarray, end: np.ndarray, group: np.ndarray, column: np.ndarray,
              duration: np.ndarray) -> None:
        """Jobs that ended by ``now`` join the history; one submitted or ending later is an error."""
        late = (np.asarray(submit) > now) | (np.asarray(end) > now)
        if late.any():
            k = int(np.argmax(late))
            raise ValueError(f"history at t={now:g} s may not hold a job submitted at {submit[k]:g} s "
                             f"and ending at {end[k]:g} s")
        np.add.at(self.sum, (group, column), duration)
        np.add.at(self.count, (group, column), 1)
        self.now = max(self.now, now)
        self.learnt += len(duration)

    def estimate(self, now: float, group: np.ndarray, column: np.ndarray, gpus: np.ndarray) -> np.ndarray:
        """Estimated service (GPU·s) of jobs in ``group`` on ``gpus`` GPUs (``column``) at ``now``."""
        if now < self.now:
            raise ValueError(f"an estimate at t={now:g} s after learning the history of t={self.now:g} s")
        same_n, same_s = self.count[group, column], self.sum[group, column]
        vc_n, vc_s = self.count[group].sum(axis=1), self.sum[group].sum(axis=1)
        all_n, all_s = int(self.count.sum()), float(self.sum.sum())
        fallback = all_s / all_n if all_n else 1.0
        duration = np.where(same_n > 0, same_s / np.maximum(same_n, 1),
                            np.where(vc_n > 0, vc_s / np.maximum(vc_n, 1), fallback))
        return duration * np.asarray(gpus)


__all__ = ["HistoryEstimator"]
