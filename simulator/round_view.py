"""A trace bound to a cluster and a throughput table: every job's static facts as arrays.

Rates are looked up once, when the workload is built, so the engine's inner loop only
indexes arrays: ``rates[i, j]`` (job i alone on s_i GPUs of type j, one server),
``spread_rates[i, j]`` (the ``<type>_unconsolidated`` rate where the table gives one,
else ``rates``), and co-located pair rates by job type through ``pair_rates``.
``reference_column[i]``: the cluster type job i's isolated run time is measured on (v100
where it can run there, else its fastest type); ``table`` serves batch-size changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.cluster import Cluster
from simulator.jobs import REFERENCE_TYPE, reference_rates
from simulator.readers.traces import Trace
from simulator.throughputs import ThroughputTable


class WorkloadError(ValueError):
    """The trace does not fit the cluster or the throughput table; names the trace line."""


@dataclass(frozen=True)
class RoundView:
    trace: Trace
    cluster: Cluster
    keys: np.ndarray
    rates: np.ndarray
    spread_rates: np.ndarray
    reference_durations: np.ndarray
    _pair_table: np.ndarray
    reference_column: np.ndarray | None = None
    table: ThroughputTable | None = None

    @property
    def num_jobs(self) -> int:
        return len(self.trace)

    def pair_rates(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(P, n, 2): rates of jobs ``a[p]`` and ``b[p]`` sharing GPUs of each type (0 where
        the table has no co-located entry)."""
        return self._pair_table[self.keys[a], self.keys[b]]

    def slo_deadlines(self) -> np.ndarray:
        """Absolute SLO deadline per job: ``arrival + SLO factor × reference duration`` (inf: none)."""
        return self.trace.arrival_times + self.trace.slo * self.reference_durations


def build_round_view(trace: Trace, cluster: Cluster, table: ThroughputTable) -> RoundView:
    """Bind ``trace`` to ``cluster`` and ``table``; a job whose type the table lacks, or that
    fits no worker type it can run on, is an error naming its trace line."""
    cols = table.type_columns(cluster.worker_types)
    keys = np.empty(len(trace), dtype=np.int64)
    for i, (model, scale) in enumerate(zip(trace.job_types, trace.scale_factors)):
        try:
            keys[i] = table.index_of(model, int(scale))
        except ValueError:
            raise WorkloadError(f"{trace.source}:{i + 1}: job_type {model!r} at scale {scale} is not in "
                                f"{table.source}") from None
    rates = table.isolated[np.ix_(keys, cols)]
    spread = table.unconsolidated[np.ix_(keys, cols)]
    spread = np.where(np.isnan(spread), rates, spread)
    fits = (rates > 0) & (trace.scale_factors[:, None] <= cluster.gpus[None, :])
    stuck = np.flatnonzero(~fits.any(axis=1))
    if stuck.size:
        i = int(stuck[0])
        raise WorkloadError(f"{trace.source}:{i + 1}: job {i} ({trace.job_types[i]}, scale {trace.scale_factors[i]}) "
                            f"cannot run on cluster {cluster}")
    ref_col = np.argmax(rates, axis=1)
    if REFERENCE_TYPE in cluster.worker_types:
        on_ref = cluster.worker_types.index(REFERENCE_TYPE)
        ref_col = np.where(rates[:, on_ref] > 0, on_ref, ref_col)
    return RoundView(trace, cluster, keys, rates, spread, trace.total_steps / reference_rates(table, keys),
                    _pair_table(table, cols), ref_col, table)


def _pair_table(table: ThroughputTable, cols: np.ndarray) -> np.ndarray:
    """(K, K, n, 2) co-located rates by job-type key, both orders filled; 0 where absent."""
    K = len(table.keys)
    out = np.zeros((K, K, cols.size, 2))
    if table.pair_keys:
        pk = np.asarray(table.pair_keys)
        rates = np.nan_to_num(table.pair_rates[:, cols, :])
        out[pk[:, 1], pk[:, 0]] = rates[:, :, ::-1]
        out[pk[:, 0], pk[:, 1]] = rates
    return out
