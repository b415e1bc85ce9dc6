"""Each clock's view of the one workload (:class:`~simulator.workload.Workload`).

- :func:`round_view`: what the round clock runs (:class:`~simulator.round_view.RoundView`): per job and
  worker type, the rate on its requested GPUs, Gavel's pair and unconsolidated rates. A workload
  rated by ElasticFlow's curves (:class:`~simulator.rates.CurveRates`) becomes one worker type (the
  GPU type's name, else ``gpu``) with one job type per (model, batch size) and a table entry at every
  GPU count its curve has; the requested count is the scale factor; the deadline is kept as the SLO
  factor (deadline − arrival) / isolated duration.
- :func:`slot_view`: what the slot clock runs (:class:`~simulator.slot_view.SlotView`): per job, the
  rate at every GPU count of one GPU type, on nodes of equal size. A workload rated by Gavel's table
  (:class:`~simulator.rates.TableRates`) needs a one-type cluster, whole nodes and deadlines: a job may
  run on any count at which the table has its job type; deadlines are its SLOs
  (:meth:`RoundView.slo_deadlines`; jobs without one are best effort). Jobs rated by their run time
  (:class:`~simulator.rates.RunTimeRates`: job logs) run 1 s of work per second on their requested
  count only. On a cluster split into virtual clusters each job carries its VC (an unknown VC is an
  error naming the job). Errors name what is missing.
- :func:`with_deadlines`: deadlines drawn by a :class:`DeadlineRule` (an explicit option, recorded in
  the run's notes) as SLOs, so round and slot policies see the same deadlines.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np

from simulator.cluster import Cluster, ClusterSpecError
from simulator.rates import CurveRates, GoodputRates, RunTimeRates, TableRates
from simulator.readers.elasticflow_traces import DeadlineTrace
from simulator.readers.iteration_tables import IterationTable
from simulator.readers.node_cluster import NodeCluster
from simulator.readers.traces import Trace
from simulator.round_view import RoundView, WorkloadError, build_round_view
from simulator.slot_view import SlotView
from simulator.throughputs import ThroughputTable
from simulator.workload import Workload

_RULE = re.compile(r"^uniform:([0-9.eE+-]+):([0-9.eE+-]+)$")


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


def round_view(workload: Workload) -> RoundView:
    """The workload in the round clock's terms (module doc). Its servers are the run's (the cluster's
    nodes, else ``--gpus-per-server``), not the view's."""
    jobs, rates, cluster = workload.jobs, workload.rates, workload.cluster
    if isinstance(rates, CurveRates):
        whole = int(cluster.gpus[0])
        trace, rcluster, table = _as_round_inputs(_curve_view(workload, cluster.gpus_per_node or whole))
        return build_round_view(trace, rcluster, table)
    if isinstance(rates, TableRates) and isinstance(jobs.record, Trace):
        return build_round_view(jobs.record, cluster, rates.table)
    raise WorkloadError(f"{jobs.source}: no round view of {type(jobs.record).__name__} jobs rated by "
                        f"{type(rates).__name__} ({rates.source})")


def slot_view(workload: Workload, gpus_per_server: int | None, policy: str) -> SlotView:
    """The workload in the slot clock's terms (module doc): one GPU type in whole nodes of the
    cluster's size, else of ``gpus_per_server``; errors name what is missing."""
    cluster = workload.cluster
    if len(cluster.worker_types) != 1:
        raise WorkloadError(f"policy {policy} plans GPU counts of one GPU type; cluster {cluster} has "
                            f"{len(cluster.worker_types)} (give one type, e.g. --cluster {cluster.worker_types[0]}="
                            f"{int(cluster.gpus[0])})")
    per_server = cluster.gpus_per_node or gpus_per_server
    if not isinstance(per_server, int):
        raise WorkloadError(f"policy {policy}: one GPUs-per-server count, got {per_server}")
    if int(cluster.gpus[0]) % per_server:
        raise WorkloadError(f"policy {policy}: {int(cluster.gpus[0])} GPUs are not whole servers of {per_server} "
                            f"(--gpus-per-server)")
    if isinstance(workload.rates, CurveRates):
        view = _curve_view(workload, per_server)
    elif isinstance(workload.rates, RunTimeRates):
        view = _run_time_view(workload, per_server)
    else:
        view = _as_slot_view(round_view(workload), per_server, policy)
    vcs = cluster.vcs
    if vcs is None:
        return view if workload.sharing is None else replace(view, sharing=workload.sharing)
    if int(vcs.nodes.sum()) != view.cluster.num_nodes:
        raise ClusterSpecError(f"cluster {cluster}: its VCs have {int(vcs.nodes.sum())} nodes, its GPUs make "
                               f"{view.cluster.num_nodes} nodes of {per_server}")
    jobs = workload.jobs
    users = getattr(jobs.record, "users", None)
    return replace(view, vcs=vcs, job_vc=vcs.index(jobs.vc, jobs.ids, jobs.source), sharing=workload.sharing,
                   job_user=None if users is None else np.unique(users.astype(str), return_inverse=True)[1])


def _run_time_view(workload: Workload, per_node: int) -> SlotView:
    """Jobs whose work is seconds of run time: rate 1 at the requested count, NaN at every other (a
    job requesting no GPU has no count and is declined as unschedulable)."""
    jobs, cluster = workload.jobs, workload.cluster
    counts = np.unique(jobs.requested[jobs.requested > 0]).astype(np.int64)
    rates = np.where(counts[None, :] == jobs.requested[:, None], 1.0, np.nan)
    trace = DeadlineTrace(job_ids=jobs.ids, submit=jobs.arrival.astype(float), iterations=jobs.work.astype(float),
                          model=jobs.model, deadline=jobs.deadline, batch_size=jobs.batch_size,
                          num_gpus=jobs.requested.astype(np.int64), duration=jobs.work.astype(float),
                          best_effort=jobs.best_effort, source=jobs.source)
    table = IterationTable(directory=workload.rates.source, gpu_counts=counts, batch_sizes={}, rates={})
    nodes = NodeCluster(1, int(cluster.gpus[0]) // per_node, per_node, 1, 1)
    return SlotView(trace, nodes, table, rates, None, cluster.worker_types[0])


def _curve_view(workload: Workload, per_node: int) -> SlotView:
    cluster, rates = workload.cluster, workload.rates
    nodes = NodeCluster(1, int(cluster.gpus[0]) // per_node, per_node, 1, 1)
    trace = workload.jobs.deadline_trace()
    apps = None
    if isinstance(rates, GoodputRates):
        apps = tuple(rates.apps[m] for m in workload.jobs.model)
        curves = rates.table.curves(trace.model, trace.batch_size)
        own = curves[np.arange(len(trace)), np.searchsorted(rates.table.gpu_counts, trace.num_gpus)]
        trace = replace(trace, duration=np.where(np.isnan(trace.duration), trace.iterations / own, trace.duration))
    return SlotView.build(trace, nodes, rates.table, rates.gpu_type, cluster.worker_types[0], apps)


def _as_round_inputs(workload: SlotView) -> tuple[Trace, Cluster, ThroughputTable]:
    """The slot view as a Gavel (trace, cluster, throughput table) (module doc)."""
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
    cluster = Cluster((gpu,), np.array([workload.total_gpus], dtype=np.int64), workload.gpus_per_node)
    return trace, cluster, table



def with_deadlines(workload: Workload, rule: DeadlineRule) -> Workload:
    """``workload`` with every job's deadline drawn by ``rule`` from its reference duration (kept as
    the trace's SLO factor, which Gavel's SLO policies also read); a trace with deadlines of its own is
    an error (one source of deadlines per run)."""
    jobs = workload.jobs
    if not isinstance(jobs.record, Trace) or np.isfinite(jobs.slo).any():
        raise WorkloadError(f"--deadlines {rule.lo:g}..{rule.hi:g}: {jobs.source} has deadlines of its own")
    view = round_view(workload)
    drawn = rule.draw(jobs.arrival, view.reference_durations)
    slo = (drawn - jobs.arrival) / view.reference_durations
    return replace(workload, jobs=jobs.with_slo(slo), notes=(*workload.notes, f"deadlines drawn: {rule}"))


def _as_slot_view(workload: RoundView, gpus_per_server: int, policy: str) -> SlotView:
    """The round view of a Gavel workload on one worker type as a slot view (module doc)."""
    cluster, tr, table = workload.cluster, workload.trace, workload.table
    counts = np.unique(np.concatenate([[int(s) for _, s in table.keys], tr.scale_factors.astype(np.int64)]))
    models = sorted(set(tr.job_types))
    grid = TableRates(table).rate(np.repeat(np.array(models, dtype=object), counts.size), 0,
                                  np.tile(counts, len(models)), cluster.worker_types[0])
    rates = {model: row[None, :] for model, row in zip(models, grid.reshape(len(models), counts.size))}
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
    nodes = NodeCluster(1, int(cluster.gpus[0]) // gpus_per_server, gpus_per_server, 1, 1)
    return SlotView.build(dtrace, nodes, iteration_table, worker_type=cluster.worker_types[0])
