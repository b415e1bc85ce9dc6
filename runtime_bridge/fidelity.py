"""How far the simulator is from a real run of the same trace (``schedopt run
--compare-simulation``): the same workload, policy and throughput table replayed by the
simulated executor, compared job by job and on the summary metrics.

Differences are relative, ``real / simulated - 1``: +5% means the real run took 5%
longer. A job that finished in one run and not in the other has no difference (NaN).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.metrics import SimulationResult

#: (label, summary key) of the metrics compared
METRICS = (("average JCT (s)", "average_jct"), ("makespan (s)", "makespan"), ("utilization", "utilization"))


@dataclass(frozen=True)
class Fidelity:
    """``jobs``: per job its id and real and simulated JCT and their relative difference;
    ``summary``: per summary key of :data:`METRICS` (real, simulated, relative difference)."""

    jobs: dict[str, np.ndarray]
    summary: dict[str, tuple[float, float, float]]

    def _abs_jct_differences(self) -> np.ndarray:
        """|relative JCT difference| of the jobs finished in both runs."""
        diff = self.jobs["jct_difference"]
        return np.abs(diff[np.isfinite(diff)])

    @property
    def mean_abs_jct_difference(self) -> float:
        known = self._abs_jct_differences()
        return float(known.mean()) if known.size else float("nan")

    @property
    def max_abs_jct_difference(self) -> float:
        known = self._abs_jct_differences()
        return float(known.max()) if known.size else float("nan")

    def summary_fields(self) -> dict[str, float]:
        """Flat fields for a run's summary.json."""
        fields = {}
        for key, (_, simulated, diff) in self.summary.items():
            fields[f"simulated_{key}"], fields[f"{key}_difference"] = simulated, diff
        return fields | {"mean_abs_jct_difference": self.mean_abs_jct_difference,
                         "max_abs_jct_difference": self.max_abs_jct_difference}


def _relative(real: np.ndarray | float, simulated: np.ndarray | float) -> np.ndarray:
    real, simulated = np.asarray(real, dtype=float), np.asarray(simulated, dtype=float)
    return np.divide(real, simulated, out=np.full(np.broadcast(real, simulated).shape, np.nan),
                     where=np.isfinite(real) & np.isfinite(simulated) & (simulated > 0)) - 1.0


def compare(real: SimulationResult, simulated: SimulationResult) -> Fidelity:
    """Job-by-job and summary differences of two runs of the same trace."""
    if not np.array_equal(real.jobs["job_id"], simulated.jobs["job_id"]):
        raise ValueError("the real and simulated runs are not of the same trace (their job ids differ)")
    jct_real, jct_sim = real.jobs["jct"].astype(float), simulated.jobs["jct"].astype(float)  # NaN: unfinished
    jobs = {"job_id": real.jobs["job_id"], "jct_real": jct_real, "jct_simulated": jct_sim,
            "jct_difference": _relative(jct_real, jct_sim)}
    summary = {key: (float(real.summary[key]), float(simulated.summary[key]),
                     float(_relative(real.summary[key], simulated.summary[key])))
               for _, key in METRICS}
    return Fidelity(jobs, summary)
