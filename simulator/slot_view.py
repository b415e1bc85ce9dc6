"""What the slot clock runs: a workload's jobs with their rates at every GPU count of one GPU type,
on a cluster of identical nodes, split into virtual clusters where the workload's cluster is
(built by :func:`simulator.views.slot_view`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.cluster import VirtualClusters
from simulator.readers.elasticflow_traces import DeadlineInputError, DeadlineTrace
from simulator.readers.iteration_tables import IterationTable, elasticflow_max_gpus
from simulator.readers.node_cluster import NodeCluster
from simulator.sharing import Sharing


@dataclass(frozen=True)
class SlotView:
    """``rates[j, s]``: iterations/s of job j on ``gpu_counts[s]`` GPUs (NaN unsupported);
    ``gpu_type`` ("A100", "T4" or None) selects ElasticFlow's hand-set caps."""

    trace: DeadlineTrace
    cluster: NodeCluster
    table: IterationTable
    rates: np.ndarray
    gpu_type: str | None = None
    #: the worker type's name in the run's outputs (``gpu_seconds_<type>``, ``busy_<type>``)
    worker_type: str = "gpu"
    #: per job, its measured application when the jobs are co-adaptive (:mod:`simulator.coadaptive`)
    applications: tuple | None = None
    #: the cluster's virtual clusters (None: one pool) and each job's VC index into them
    vcs: VirtualClusters | None = None
    job_vc: np.ndarray | None = None
    #: each job's user as an index into the log's users (None: the log names none)
    job_user: np.ndarray | None = None
    #: the jobs' profiled workloads and measured pair speeds where they may share GPUs
    #: (:class:`simulator.sharing.Sharing`, aligned with the jobs; None: no sharing)
    sharing: Sharing | None = None

    @classmethod
    def build(cls, trace: DeadlineTrace, cluster: NodeCluster, table: IterationTable,
              gpu_type: str | None = None, worker_type: str | None = None, applications=None) -> SlotView:
        rates = table.curves(trace.model, trace.batch_size)
        counts = table.gpu_counts
        col = np.searchsorted(counts, trace.num_gpus)
        bad = (col >= len(counts)) | (counts[np.minimum(col, len(counts) - 1)] != trace.num_gpus)
        if bad.any():
            j = int(np.argmax(bad))
            raise DeadlineInputError(f"{trace.source}: job {trace.job_ids[j]} requests {trace.num_gpus[j]} GPUs; "
                                     f"the tables in {table.directory} have columns {', '.join(map(str, counts))}")
        return cls(trace, cluster, table, rates, gpu_type, worker_type or gpu_type or "gpu", applications)

    def __len__(self) -> int:
        return len(self.trace)

    @property
    def total_gpus(self) -> int:
        return self.cluster.num_gpus

    @property
    def gpus_per_node(self) -> int:
        return self.cluster.gpus_per_node

    @property
    def gpu_counts(self) -> np.ndarray:
        return self.table.gpu_counts

    @property
    def job_ids(self) -> np.ndarray:
        return self.trace.job_ids

    @property
    def submit(self) -> np.ndarray:
        return self.trace.submit

    @property
    def deadline(self) -> np.ndarray:
        return self.trace.deadline

    @property
    def best_effort(self) -> np.ndarray:
        return self.trace.best_effort

    @property
    def iterations(self) -> np.ndarray:
        return self.trace.iterations

    @property
    def requested(self) -> np.ndarray:
        return self.trace.num_gpus

    @property
    def duration(self) -> np.ndarray:
        return self.trace.duration

    def caps(self, source: str) -> np.ndarray:
        """Most GPUs per job: "table" = the largest supported count, at most the batch size and
        the cluster (a job without a batch size, 0, has no batch cap); "elasticflow" = the published
        hand-set caps for ``gpu_type`` (the table's where the type is unknown), also at most the cluster."""
        counts = self.gpu_counts
        batch = self.trace.batch_size[:, None]
        ok = np.isfinite(self.rates) & (self.rates > 0) & ((counts[None, :] <= batch) | (batch <= 0))
        table_cap = np.where(ok, counts[None, :], 0).max(axis=1)
        if source == "elasticflow" and self.gpu_type is not None:
            pairs = {(m, int(b)) for m, b in zip(self.trace.model, self.trace.batch_size)}
            hand = {p: elasticflow_max_gpus(*p, gpu_type=self.gpu_type) for p in pairs}
            cap = np.array([hand[(m, int(b))] for m, b in zip(self.trace.model, self.trace.batch_size)])
        elif source in ("table", "elasticflow"):
            cap = table_cap
        else:
            raise ValueError(f"unknown cap source {source!r}")
        return np.minimum(cap, self.total_gpus).astype(np.int64)

    def duration_rates(self) -> np.ndarray:
        """Rates implied by the trace's durations: iterations / duration on the requested count only
        (what the published duration-based baselines measure progress by)."""
        rates = np.full_like(self.rates, np.nan)
        col = np.searchsorted(self.gpu_counts, self.requested)
        rates[np.arange(len(self)), col] = self.iterations / self.duration
        return rates
