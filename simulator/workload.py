"""The one workload every trace reader yields: jobs, a cluster and a rate model.

:class:`Jobs` is the one job model, one row per job whatever the trace's format: arrival (s); work
and its unit (Gavel's steps, ElasticFlow's iterations, Pollux's epochs); model and global batch size (0: named by the
model, as Gavel's job types do); GPUs requested; priority weight; deadline kind
(:class:`DeadlineKind`: best effort, strict or soft) with the deadline either absolute (ElasticFlow,
ITP, Chronus) or a factor of the job's isolated run time (Gavel's SLO, made absolute once the rate
model is known: :meth:`simulator.round_view.RoundView.slo_deadlines`); the isolated run time where
the trace gives one; how the job adapts its batch size (Shockwave's modes).

:func:`read_jobs` reads any trace format, chosen from the file: Gavel's 10- and 7-column and
Shockwave's 12-column tab-separated traces, ElasticFlow / ITP CSV, Chronus CSV, Pollux workload
CSV, Helios' job logs and the Philly CSV (jobs with virtual clusters). The file's own record
(:attr:`Jobs.record`) is kept for what only that format holds (a Gavel job's command line, a Chronus
job's deadline options) and to write the trace back.

A :class:`Workload` binds jobs to a :class:`~simulator.cluster.Cluster` (worker types × GPUs, in
nodes of ``gpus_per_node``) and a :class:`~simulator.rates.RateModel`; each clock of the engine
reads it through its view (:mod:`simulator.views`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from enum import IntEnum
from pathlib import Path

import numpy as np

from simulator.applications import MAX_EPOCHS
from simulator.cluster import Cluster
from simulator.files import write_atomically
from simulator.rates import RateModel
from simulator.readers.elasticflow_traces import (
    CHRONUS_COLUMNS,
    ChronusTrace,
    DeadlineInputError,
    DeadlineTrace,
    chronus_trace_text,
    deadline_trace_text,
    read_chronus_trace,
    read_deadline_trace,
)
from simulator.readers.helios_logs import JobLog, is_helios_log, is_philly_csv, job_log_text, read_job_log
from simulator.readers.pollux_traces import (
    POLLUX_COLUMNS,
    PolluxInputError,
    PolluxTrace,
    pollux_trace_text,
    read_pollux_trace,
)
from simulator.readers.traces import Trace, TraceError, read_trace, trace_text
from simulator.sharing import Sharing


class DeadlineKind(IntEnum):
    """Best effort: no deadline; strict: a job that cannot meet it may be declined (ElasticFlow's
    admission control, Chronus's ``strict``); soft: judged by it, never declined (Gavel's SLOs,
    Chronus's ``soft``)."""

    BEST_EFFORT = 0
    STRICT = 1
    SOFT = 2


@dataclass(frozen=True)
class Jobs:
    """The one job model (module doc): parallel arrays in trace order. ``deadline`` is absolute (s,
    inf: none), ``slo`` a factor of the isolated run time (inf: none); a job has at most one of them.

    ``vc``: each job's virtual cluster id (object array), None for traces without VCs. A field, not a
    detail of :attr:`record`, because it constrains where the job may run under every policy, as
    ``requested`` does; what only schedulers of one system read (a Helios job's user) stays in the record."""

    ids: np.ndarray
    arrival: np.ndarray
    work: np.ndarray
    unit: str
    model: np.ndarray
    batch_size: np.ndarray
    requested: np.ndarray
    weight: np.ndarray
    kind: np.ndarray
    deadline: np.ndarray
    slo: np.ndarray
    duration: np.ndarray
    mode: tuple[str, ...]
    source: str
    record: Trace | DeadlineTrace | ChronusTrace | PolluxTrace | JobLog
    chronus_minutes: bool = True
    vc: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.arrival)

    @classmethod
    def from_gavel(cls, trace: Trace) -> Jobs:
        """A Gavel / Shockwave trace: steps, the job type as the model, SLOs as soft deadline factors."""
        n = len(trace)
        return cls(ids=np.arange(n), arrival=trace.arrival_times, work=trace.total_steps, unit="steps",
                   model=np.array(trace.job_types, dtype=object), batch_size=np.zeros(n, dtype=np.int64),
                   requested=trace.scale_factors, weight=trace.weights,
                   kind=np.where(np.isfinite(trace.slo), DeadlineKind.SOFT, DeadlineKind.BEST_EFFORT).astype(np.int8),
                   deadline=np.full(n, np.inf), slo=trace.slo, duration=trace.durations, mode=tuple(trace.modes),
                   source=trace.source, record=trace)

    @classmethod
    def from_deadlines(cls, trace: DeadlineTrace) -> Jobs:
        """An ElasticFlow / ITP trace: iterations, strict deadlines unless best effort."""
        n = len(trace)
        return cls(ids=trace.job_ids, arrival=trace.submit, work=trace.iterations, unit="iterations",
                   model=trace.model, batch_size=trace.batch_size, requested=trace.num_gpus, weight=np.ones(n),
                   kind=np.where(trace.best_effort, DeadlineKind.BEST_EFFORT, DeadlineKind.STRICT).astype(np.int8),
                   deadline=trace.deadline, slo=np.full(n, np.inf), duration=trace.duration,
                   mode=("static",) * n, source=trace.source, record=trace)

    @classmethod
    def from_chronus(cls, trace: ChronusTrace, minutes: bool = True) -> Jobs:
        """A Chronus trace: iterations, each job's first deadline option, strict / soft / best effort as
        its ``job_type`` says (the options stay in :attr:`record`); ``minutes``: the file's times were
        minutes (written back so)."""
        n = len(trace)
        kinds = {"strict": DeadlineKind.STRICT, "soft": DeadlineKind.SOFT, "best": DeadlineKind.BEST_EFFORT}
        batch = trace.batch_size if trace.batch_size is not None else np.zeros(n, dtype=np.int64)
        return cls(ids=trace.job_ids, arrival=trace.submit, work=trace.iterations, unit="iterations",
                   model=trace.model, batch_size=batch, requested=trace.num_gpus, weight=np.ones(n),
                   kind=np.array([kinds[k] for k in trace.job_type], dtype=np.int8), deadline=trace.deadline,
                   slo=np.full(n, np.inf), duration=trace.duration, mode=("static",) * n, source=trace.source,
                   record=trace, chronus_minutes=minutes)

    @classmethod
    def from_pollux(cls, trace: PolluxTrace) -> Jobs:
        """A Pollux workload: epochs of the job's application (its published training length), the
        tuned GPUs and batch size as requested, best effort."""
        unknown = sorted(set(trace.application) - set(MAX_EPOCHS))
        if unknown:
            raise PolluxInputError(f"{trace.source}: unknown application(s) {', '.join(unknown)}; known: "
                                   f"{', '.join(MAX_EPOCHS)}")
        n = len(trace)
        return cls(ids=trace.names, arrival=trace.time, work=np.array([MAX_EPOCHS[a] for a in trace.application]),
                   unit="epochs", model=trace.application, batch_size=trace.batch_size,
                   requested=trace.num_replicas, weight=np.ones(n),
                   kind=np.full(n, DeadlineKind.BEST_EFFORT, dtype=np.int8), deadline=np.full(n, np.inf),
                   slo=np.full(n, np.inf), duration=np.full(n, np.nan), mode=("static",) * n, source=trace.source,
                   record=trace)

    @classmethod
    def from_job_log(cls, log: JobLog) -> Jobs:
        """A Helios / Philly job log: work is the run time alone in seconds, arrivals from the log's
        origin (:attr:`~simulator.readers.helios_logs.JobLog.origin`), best effort, each job in its VC."""
        n = len(log)
        return cls(ids=log.job_ids, arrival=log.arrival, work=log.duration, unit="seconds",
                   model=np.full(n, "", dtype=object), batch_size=np.zeros(n, dtype=np.int64), requested=log.gpus,
                   weight=np.ones(n), kind=np.full(n, DeadlineKind.BEST_EFFORT, dtype=np.int8),
                   deadline=np.full(n, np.inf), slo=np.full(n, np.inf), duration=log.duration, mode=("static",) * n,
                   source=log.source, record=log, vc=log.vc)

    @property
    def best_effort(self) -> np.ndarray:
        return self.kind == DeadlineKind.BEST_EFFORT

    def deadline_trace(self) -> DeadlineTrace:
        """These jobs as an ElasticFlow trace record (the record itself where it is one)."""
        if isinstance(self.record, DeadlineTrace):
            return self.record
        if (self.batch_size <= 0).any():
            j = int(np.argmax(self.batch_size <= 0))
            raise DeadlineInputError(f"{self.source}: job {self.ids[j]} has no global batch size, which "
                                     f"ElasticFlow's tables are looked up by")
        return DeadlineTrace(job_ids=self.ids, submit=self.arrival.astype(float), iterations=self.work,
                             model=self.model, deadline=self.deadline, batch_size=self.batch_size.astype(np.int64),
                             num_gpus=self.requested.astype(np.int64), duration=self.duration.astype(float),
                             best_effort=self.best_effort, source=self.source)

    def with_slo(self, slo: np.ndarray) -> Jobs:
        """These (Gavel) jobs with SLO factors ``slo`` (inf: none) as soft deadlines."""
        if not isinstance(self.record, Trace):
            raise TypeError("SLO factors are a Gavel trace's deadlines")
        return Jobs.from_gavel(replace(self.record, slo=np.asarray(slo, dtype=float)))


@dataclass(frozen=True)
class Workload:
    """Jobs on a cluster at the rates of a rate model; ``notes`` say what an option supplied that
    the trace lacks (drawn deadlines), for the run's summary; ``sharing``: the jobs' profiled
    workloads and measured pair speeds, where they may share GPUs (:mod:`simulator.sharing`)."""

    jobs: Jobs
    cluster: Cluster
    rates: RateModel
    notes: tuple[str, ...] = ()
    sharing: Sharing | None = None


def jobs_text(jobs: Jobs) -> str:
    """The jobs in their trace's own format (what :func:`read_jobs` reads back to equal jobs)."""
    record = jobs.record
    if isinstance(record, Trace):
        return trace_text(record)
    if isinstance(record, ChronusTrace):
        return chronus_trace_text(record, minutes=jobs.chronus_minutes)
    if isinstance(record, PolluxTrace):
        return pollux_trace_text(record)
    if isinstance(record, JobLog):
        return job_log_text(record)
    return deadline_trace_text(record)


def write_jobs(jobs: Jobs, path: str | os.PathLike) -> None:
    """Write :func:`jobs_text` to ``path``, atomically."""
    write_atomically(Path(path), jobs_text(jobs))


def read_jobs(path: str | os.PathLike, *, chronus_minutes: bool = True) -> Jobs:
    """Read a trace of any format (module doc): tab-separated lines are a Gavel trace, a CSV header
    with Pollux's columns a Pollux workload, with Chronus's a Chronus trace (times in minutes unless
    ``chronus_minutes`` is False), with Helios' or Philly's a whole job log (GPU jobs;
    :func:`~simulator.readers.helios_logs.read_job_log` selects windows and VCs), any other CSV an
    ElasticFlow / ITP trace."""
    src = os.fspath(path)
    try:
        with open(src, "rb") as handle:  # only the first line is decoded here: the readers locate bad bytes
            number, raw = next(((n, line) for n, line in enumerate(handle, start=1) if line.strip()), (1, b""))
        first = raw.decode("utf-8-sig")
    except OSError as exc:
        raise TraceError(f"{src}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise TraceError(f"{src}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None
    if "\t" in first or Path(src).suffix == ".trace":
        return Jobs.from_gavel(read_trace(src))
    header = {name.strip() for name in first.split(",")}
    if set(POLLUX_COLUMNS) <= header:
        return Jobs.from_pollux(read_pollux_trace(src))
    if is_philly_csv(header) or is_helios_log(header):
        return Jobs.from_job_log(read_job_log(src))
    if set(CHRONUS_COLUMNS) <= header:
        return Jobs.from_chronus(read_chronus_trace(src, minutes=chronus_minutes), minutes=chronus_minutes)
    return Jobs.from_deadlines(read_deadline_trace(src))


__all__ = ["DeadlineKind", "Jobs", "Workload", "jobs_text", "read_jobs", "write_jobs"]
