"""GPU sharing: two jobs on the same GPUs, each at its measured speed beside the other (Lucid's
packing), for the slot clock.

A workload that may share carries a :class:`Sharing`: each job's profiled workload (an index into
Lucid's ``single_data.csv``, drawn by :func:`~simulator.lucid_profiles.draw_profiles`) and the
measured pair speeds (:func:`~simulator.lucid_profiles.pair_speeds`): ``speed[i, k]`` is workload
i's throughput beside workload k relative to running alone. A node plan may then put a job on the
GPUs another job holds (:class:`~allocators.slot_plans.NodePlan`'s ``host``); while they share, each
progresses at its rate times its pair speed, and at the full rate again once its partner leaves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.lucid_profiles import draw_profiles, pair_speeds
from simulator.readers.lucid_measurements import Profiles, read_colocations, read_profiles

#: the memory of the GPU Lucid measured its pairs on (RTX 3090, 24 GB), in MB
GPU_MEMORY_MB = 24576.0
PROFILES_FILE = "single_data.csv"
PAIRS_FILE = "colocate_info.csv"


@dataclass(frozen=True)
class Sharing:
    """Each job's profiled workload ``profile[j]`` (index into ``profiles``), the pair speeds
    ``speed`` (P, P; NaN: the pair was not measured and may not share), the GPU's memory (MB) and
    where the measurements came from."""

    profiles: Profiles
    profile: np.ndarray
    speed: np.ndarray
    memory_mb: float = GPU_MEMORY_MB
    seed: int = 0

    def pair(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The speeds of jobs ``a`` beside jobs ``b`` and of ``b`` beside ``a`` (NaN: not measured)."""
        pa, pb = self.profile[a], self.profile[b]
        return self.speed[pa, pb], self.speed[pb, pa]

    def gmem(self, jobs: np.ndarray) -> np.ndarray:
        """The jobs' GPU memory alone (MB)."""
        return self.profiles.gmem[self.profile[jobs]]

    def describe(self) -> str:
        return (f"each job's workload drawn uniformly from the {len(self.profiles)} profiled ones of "
                f"{self.profiles.source} (seed {self.seed}); pair speeds measured")

    @classmethod
    def read(cls, folder: str | os.PathLike, job_ids: np.ndarray, seed: int = 0) -> Sharing:
        """The measurements in ``folder`` (``single_data.csv``, ``colocate_info.csv``), each job's
        workload drawn by ``seed``."""
        folder = Path(folder)
        profiles = read_profiles(folder / PROFILES_FILE)
        speed = pair_speeds(profiles, read_colocations(folder / PAIRS_FILE))
        return cls(profiles, draw_profiles(np.asarray(job_ids), profiles, seed), speed, seed=seed)


def shared_speeds(host: np.ndarray | None, jobs: np.ndarray, sharing: Sharing | None) -> tuple[np.ndarray, np.ndarray]:
    """The jobs of a node plan's GPU-sharing pairs (entries ``jobs`` with ``host``; -1 or None: a
    job on its own GPUs) and each one's speed factor: both jobs of a pair at their pair speeds
    (every other job runs at 1)."""
    if host is None or sharing is None:
        return jobs[:0], np.ones(0)
    guests = host >= 0
    guest, partner = jobs[guests], host[guests]
    mine, theirs = sharing.pair(guest, partner)
    return np.concatenate([guest, partner]), np.concatenate([mine, theirs])


__all__ = ["GPU_MEMORY_MB", "PAIRS_FILE", "PROFILES_FILE", "Sharing", "shared_speeds"]
