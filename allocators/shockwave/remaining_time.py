"""Shockwave's remaining-time predictor: a Dirichlet posterior over batch-size values.

A job's profile lists the batch size ``b_e`` and duration ``d_e`` of each of its E
epochs. The predictor knows which batch sizes the job can use (the set B of the
profile's values) and the mean epoch duration ``d̄_b`` at each, but not when it will use
them. Prior: Dirichlet with concentration ``E / |B|`` on each b. After observing the
batch sizes of epochs ``0..c`` (c epochs done, the current one included), the posterior
concentrations ``α_b`` rebased to E epochs, less the epochs already seen at b (where at
least 1 remains), estimate the epochs still to run at each b::

    n_b = E α_b / Σα − seen_b  (seen_b subtracted only where 1 remains)
    R = Σ_b n_b d̄_b · (E − c) / Σ_b n_b

The last factor rescales the counts to the E − c epochs actually left (the published
code divides by ``max(⌊Σ n_b + 1⌋, E − c)`` instead, which leaves every estimate one epoch
short: a static job's at ``(E − c − 1) d``, a one-epoch job's at 0 from the start;
``published=True`` keeps that, and the published profile's epoch durations, rounded to
whole seconds and at least 1 s). ``oracle`` returns ``Σ_{e >= c} d_e`` (for ablations).
"""

from __future__ import annotations

import numpy as np


class RemainingTime:
    """Predicts one job's remaining isolated run time from its epoch profile."""

    def __init__(self, batch_sizes: np.ndarray, durations: np.ndarray, *, published: bool = False):
        self.published = published
        self.durations = np.asarray(durations, dtype=float)
        if published:
            self.durations = np.maximum(np.round(self.durations), 1.0)
        modes, self.which = np.unique(np.asarray(batch_sizes), return_inverse=True)
        self.epochs = self.durations.size
        counts = np.bincount(self.which, minlength=modes.size)
        self.mean_duration = np.bincount(self.which, weights=self.durations, minlength=modes.size) / counts
        self.prior = np.full(modes.size, self.epochs / modes.size)
        self.done_seconds = np.concatenate([[0.0], np.cumsum(self.durations)])

    def mean_epoch(self, done: int) -> float:
        """Mean duration of epochs ``0..done`` (the one in progress included)."""
        last = min(int(done) + 1, self.epochs)
        return float(self.done_seconds[last] / last)

    def elapsed(self, done: int) -> float:
        """Isolated time of the first ``done`` epochs."""
        return float(self.done_seconds[min(int(done), self.epochs)])

    def predict(self, done: int, *, oracle: bool = False) -> float:
        """Remaining isolated run time (s) after ``done`` completed epochs."""
        E, done = self.epochs, int(done)
        left = E - done
        if left <= 0:
            return 0.0
        if oracle:
            return float(self.done_seconds[E] - self.done_seconds[done])
        seen = np.bincount(self.which[: done + 1], minlength=self.prior.size)
        posterior = self.prior + seen
        rebased = E * posterior / posterior.sum()
        rebased -= np.where(rebased >= 1.0, np.minimum(seen, np.floor(rebased)), 0.0)
        total = rebased.sum()
        if self.published:
            return float((rebased * self.mean_duration).sum() * left / max(int(total + 1.0), left))
        if total <= 0.0:
            return float(left * self.mean_duration[self.which[min(done, E - 1)]])
        return float((rebased * self.mean_duration).sum() * left / total)
