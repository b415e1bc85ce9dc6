"""One workload whatever the trace format: every reader's jobs in either engine's terms.

A job is: arrival, work (iterations / steps), a rate at each GPU count of one GPU type, the GPU
count it asks for, an optional deadline (absolute; inf = best effort) and a priority weight.
Gavel and Shockwave traces bind to a Gavel throughput table and a ``type=count`` cluster
(:func:`simulator.workload.build_workload`); ElasticFlow / ITP / Chronus traces to iteration
tables and a node cluster (:class:`SlotWorkload`, what the slotted engine runs). This module holds
the slot workload and maps each kind onto the other:

- :func:`as_round_inputs`: a deadline workload as a Gavel trace, cluster and table. One worker
  type (the GPU type's name, else ``gpu``) with the cluster's GPUs; one job type per (model,
  batch size), with a table entry at every GPU count the iteration table has; the requested
  count is the scale factor; the deadline is kept as the SLO factor (deadline − arrival) /
  isolated duration.
- :func:`as_deadline_workload`: a Gavel workload on a one-type cluster as a deadline workload:
  ``gpus_per_server``-GPU nodes; a job may run on any count at which the table has its model;
  deadlines from the trace's SLOs (a trace with none is an error naming what is missing).
- :func:`with_deadlines`: deadlines drawn by a :class:`DeadlineRule` (an explicit option, recorded
  in the run's notes) as SLOs, so round and slot policies see the same deadlines.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np

from simulator.cluster import Cluster
from simulator.elasticflow_traces import DeadlineInputError, DeadlineTrace
from simulator.iteration_tables import IterationTable, elasticflow_max_gpus
from simulator.node_cluster import NodeCluster
from simulator.throughputs import ThroughputTable
from simulator.traces import Trace
from simulator.workload import Workload, WorkloadError, build_workload

_RULE = re.compile(r"^uniform:([0-9.eE+-]+):([0-9.eE+-]+)$")


@dataclass(frozen=True)
class SlotWorkload:
    """``rates[j, s]``: iterations/s of job j on ``gpu_counts[s]`` GPUs (NaN unsupported);
    ``gpu_type`` ("A100", "T4" or None) selects ElasticFlow's hand-set caps."""

    trace: DeadlineTrace
    cluster: NodeCluster
    table: IterationTable
    rates: np.ndarray
    gpu_type: str | None = None

    @classmethod
    def build(cls, trace: DeadlineTrace, cluster: NodeCluster, table: IterationTable,
              gpu_type: str | None = None) -> SlotWorkload:
        rates = table.curves(trace.model, trace.batch_size)
        counts = table.gpu_counts
        col = np.searchsorted(counts, trace.num_gpus)
        bad = (col >= len(counts)) | (counts[np.minimum(col, len(counts) - 1)] != trace.num_gpus)
        if bad.any():
            j = int(np.argmax(bad))
            raise DeadlineInputError(f"{trace.source}: job {trace.job_ids[j]} requests {trace.num_gpus[j]} GPUs; "
                                     f"the tables in {table.directory} have columns {', '.join(map(str, counts))}")
        return cls(trace, cluster, table, rates, gpu_type)

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
        the cluster; "elasticflow" = the published hand-set caps for ``gpu_type`` (the table's
        where the type is unknown), also at most the cluster."""
        counts = self.gpu_counts
        ok = np.isfinite(self.rates) & (self.rates > 0) & (counts[None, :] <= self.trace.batch_size[:, None])
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


@dataclass(frozen=True)
class DeadlineRule:
    """deadline = arrival + U(lo, hi) × the job's isolated duration on its requested GPUs (the
    ElasticFlow trace generator's rule, whose defaults are 0.5 and 1.5), drawn with ``seed``."""

    lo: float
    hi: float
    seed: int = 0

    @classmethod
    def parse(cls, text: str, seed: int = 0) -> DeadlineRule:
        """``uniform:LO:HI`` with 0 < LO <= HI."""
        m = _RULE.match(text.strip())
        lo, hi = (float(m.group(1)), float(m.group(2))) if m else (math.nan, math.nan)
        if not (m and 0 < lo <= hi < math.inf):
            raise ValueError(f"--deadlines {text!r}: expected uniform:LO:HI with 0 < LO <= HI, e.g. uniform:0.5:1.5")
        return cls(lo, hi, seed)

    def __str__(self) -> str:
        return f"uniform:{self.lo:g}:{self.hi:g} (seed {self.seed})"

    def draw(self, arrival: np.ndarray, duration: np.ndarray) -> np.ndarray:
        factor = np.random.default_rng(self.seed).uniform(self.lo, self.hi, size=arrival.shape)
        return arrival + np.floor(factor * duration)


def as_round_inputs(workload: SlotWorkload) -> tuple[Trace, Cluster, ThroughputTable, int]:
    """The deadline workload as (trace, cluster, throughput table, GPUs per server) for the round
    engine (module doc)."""
    tr, counts = workload.trace, workload.gpu_counts
    names = np.array([f"{m} (batch size {int(b)})" for m, b in zip(tr.model, tr.batch_size)], dtype=object)
    kinds, first = np.unique(names, return_index=True)
    curves = workload.rates[first]
    ok = np.isfinite(curves) & (curves > 0)
    k, s = np.nonzero(ok)
    keys = tuple((str(kinds[a]), int(counts[b])) for a, b in zip(k, s))
    rates = curves[k, s][:, None]
    gpu = workload.gpu_type or "gpu"
    table = ThroughputTable((gpu,), keys, rates, np.full_like(rates, np.nan), source=f"{workload.table.directory}")
    col = np.searchsorted(counts, tr.num_gpus)
    isolated = tr.iterations / workload.rates[np.arange(len(tr)), col]
    slo = np.where(tr.best_effort | ~np.isfinite(tr.deadline), -1.0, (tr.deadline - tr.submit) / isolated)
    n = len(tr)
    trace = Trace(job_types=tuple(names), commands=("",) * n, working_dirs=("",) * n, num_steps_args=("",) * n,
                  needs_data_dir=np.zeros(n, dtype=bool), total_steps=tr.iterations.astype(np.int64),
                  scale_factors=tr.num_gpus.astype(np.int64), weights=np.ones(n),
                  slo=np.where(slo > 0, slo, np.inf), arrival_times=tr.submit.astype(float), source=tr.source,
                  durations=tr.duration.astype(float))
    cluster = Cluster((gpu,), np.array([workload.total_gpus], dtype=np.int64))
    return trace, cluster, table, workload.gpus_per_node


def with_deadlines(workload: Workload, rule: DeadlineRule) -> Workload:
    """``workload`` with every job's deadline drawn by ``rule`` from its reference duration (kept as
    the trace's SLO factor, which Gavel's SLO policies also read); a trace with SLOs of its own is an
    error (one source of deadlines per run)."""
    tr = workload.trace
    if np.isfinite(tr.slo).any():
        raise WorkloadError(f"--deadlines {rule.lo:g}..{rule.hi:g}: {tr.source} has SLOs of its own")
    drawn = rule.draw(tr.arrival_times, workload.reference_durations)
    slo = (drawn - tr.arrival_times) / workload.reference_durations
    return build_workload(replace(tr, slo=slo), workload.cluster, workload.table)


def as_deadline_workload(workload: Workload, gpus_per_server: int, policy: str) -> SlotWorkload:
    """The Gavel workload as a deadline workload (module doc); its deadlines are the trace's SLOs
    (:meth:`Workload.slo_deadlines`; jobs without one are best effort). Errors name what the run
    lacks."""
    cluster, tr, table = workload.cluster, workload.trace, workload.table
    if len(cluster.worker_types) != 1:
        raise WorkloadError(f"policy {policy} plans GPU counts of one GPU type; cluster {cluster} has "
                            f"{len(cluster.worker_types)} (give one type, e.g. --cluster {cluster.worker_types[0]}="
                            f"{int(cluster.gpus[0])})")
    gpus = int(cluster.gpus[0])
    if gpus % gpus_per_server:
        raise WorkloadError(f"policy {policy}: {gpus} GPUs are not whole servers of {gpus_per_server} "
                            f"(--gpus-per-server)")
    col = table.type_columns(cluster.worker_types)[0]
    counts = np.unique(np.concatenate([[int(s) for _, s in table.keys], tr.scale_factors.astype(np.int64)]))
    models = sorted(set(tr.job_types))
    rates = {}
    for model in models:
        row = np.full(counts.size, np.nan)
        for c, n in enumerate(counts):
            key = (model, int(n))
            if key in table._index and table.isolated[table._index[key], col] > 0:
                row[c] = table.isolated[table._index[key], col]
        rates[model] = row[None, :]
    big = int(counts.max())
    iteration_table = IterationTable(directory=table.source, gpu_counts=counts,
                                     batch_sizes={m: np.array([big]) for m in models}, rates=rates)
    requested = tr.scale_factors.astype(np.int64)
    duration = tr.total_steps / np.maximum(workload.rates[:, 0], 1e-300)
    if not np.isfinite(tr.slo).any():
        raise WorkloadError(f"policy {policy} needs deadlines and {tr.source} has none: pass --deadlines "
                            f"uniform:LO:HI (ElasticFlow's rule: uniform:0.5:1.5)")
    deadline = workload.slo_deadlines()
    n = len(tr)
    dtrace = DeadlineTrace(job_ids=np.arange(n), submit=tr.arrival_times.astype(float),
                           iterations=tr.total_steps.astype(np.int64), model=np.array(tr.job_types, dtype=object),
                           deadline=deadline, batch_size=np.full(n, big, dtype=np.int64), num_gpus=requested,
                           duration=duration, best_effort=~np.isfinite(deadline), source=tr.source)
    nodes = NodeCluster(1, gpus // gpus_per_server, gpus_per_server, 1, 1)
    return SlotWorkload.build(dtrace, nodes, iteration_table)
