"""Seconds a job loses when it is (re)started or rescaled: the published ElasticFlow model.

    o(n) = base                                 if the job's GPU set was used before (cached)
    o(n) = base + [restart] + step·(log2 n + 1) otherwise

with base 2 s, step 2 s and a trainer restart of 27 s every ``restart_every`` decisions; on
clusters of 256 GPUs or more the published simulator uses base 7 s and restart 47 s. The
published simulator restarts every Δ-th decision (it reuses the slot length in seconds as a
decision count); ``restart_every=0`` turns restarts off. Which jobs are charged, and when, is the
policy's :class:`allocators.slot_plans.Charge`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OverheadModel:
    base: float = 2.0
    step: float = 2.0
    restart: float = 27.0
    restart_every: int = 0
    #: (n, s): a job on more than n GPUs loses s seconds instead (Helios' Tiresias: 40 s, 60 s over 8)
    wide: tuple[int, float] | None = None

    @classmethod
    def published(cls, total_gpus: int, slot: float) -> OverheadModel:
        large = total_gpus >= 256
        return cls(base=7.0 if large else 2.0, restart=47.0 if large else 27.0, restart_every=int(slot))

    @classmethod
    def none(cls) -> OverheadModel:
        return cls(base=0.0, step=0.0, restart=0.0, restart_every=0)

    def is_restart(self, decision: int) -> bool:
        return self.restart_every > 0 and decision > 0 and decision % self.restart_every == 0

    def seconds(self, gpus: np.ndarray, cached: np.ndarray, restart: bool) -> np.ndarray:
        """Overhead of each job on ``gpus`` GPUs (0 GPUs: none)."""
        gpus = np.asarray(gpus, dtype=float)
        fresh = self.base + (self.restart if restart else 0.0) + self.step * (np.log2(np.maximum(gpus, 1)) + 1)
        seconds = np.where(cached, self.base, fresh)
        if self.wide is not None:
            seconds = np.where(gpus > self.wide[0], self.wide[1], seconds)
        return np.where(gpus > 0, seconds, 0.0)
