"""Rate models: how fast a job trains on some GPUs of one worker type.

Every :class:`~simulator.workload.Workload` has one rate model, and every rate model answers the
same question, vectorized over jobs::

    rate(models, batch_sizes, gpus, worker_type) -> work units per second (NaN: no entry)

- :class:`TableRates`: Gavel's throughput table (JSON): steps/s per (job type, GPU count) and worker
  type, plus co-located pair rates and unconsolidated rates. A Gavel job type names its batch size
  (``"ResNet-18 (batch size 64)"``); a batch size given here looks the same model up at that batch
  size (how Shockwave's jobs change theirs).
- :class:`CurveRates`: ElasticFlow's tables: iterations/s per (model, global batch size) at every GPU
  count of one GPU type (:class:`~simulator.readers.iteration_tables.IterationTable`).
- :class:`RunTimeRates`: jobs whose work is their run time in seconds on their requested GPUs (Helios
  and Philly job logs, ``unit="seconds"``): 1 s of work per second, gang-scheduled.

Each clock reads its own dense view of the rate model once per run (:mod:`simulator.views`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from simulator.adaptation import job_type_at, split_job_type
from simulator.coadaptive import CoAdaptiveJobs
from simulator.readers.iteration_tables import IterationTable
from simulator.throughputs import ThroughputTable


class RateModel(Protocol):
    """Work units per second of jobs on GPUs of one worker type."""

    @property
    def worker_types(self) -> tuple[str, ...]: ...

    @property
    def source(self) -> str: ...

    def rate(self, models, batch_sizes, gpus, worker_type: str) -> np.ndarray: ...


def _distinct(models, batch_sizes, gpus) -> tuple[list[tuple], np.ndarray]:
    """The distinct (model, batch size, GPUs) triples and each job's index into them."""
    m = np.asarray(models, dtype=object)
    b = np.broadcast_to(np.asarray(batch_sizes, dtype=np.int64), m.shape)
    n = np.broadcast_to(np.asarray(gpus, dtype=np.int64), m.shape)
    seen: dict[tuple, int] = {}
    index = np.array([seen.setdefault(t, len(seen)) for t in zip(m.tolist(), b.tolist(), n.tolist())],
                     dtype=np.int64)
    return list(seen), index


@dataclass(frozen=True)
class TableRates:
    """Gavel's per-(job type, GPU count) × worker type table; batch size 0 = the job type's own."""

    table: ThroughputTable

    @property
    def worker_types(self) -> tuple[str, ...]:
        return self.table.worker_types

    @property
    def source(self) -> str:
        return self.table.source

    def rate(self, models, batch_sizes, gpus, worker_type: str) -> np.ndarray:
        col = int(self.table.type_columns((worker_type,))[0])
        triples, index = _distinct(models, batch_sizes, gpus)
        values = np.full(len(triples), np.nan)
        for k, (model, batch, n) in enumerate(triples):
            name = job_type_at(split_job_type(model)[0], batch) if batch > 0 else model
            row = self.table._index.get((name, n))
            if row is not None and self.table.isolated[row, col] > 0:
                values[k] = self.table.isolated[row, col]
        return values[index]


@dataclass(frozen=True)
class CurveRates:
    """ElasticFlow's per-(model, batch size) curves over GPU counts of one GPU type ``gpu_type``
    ("A100", "T4", or None: unnamed, called ``gpu``)."""

    table: IterationTable
    gpu_type: str | None = None

    @property
    def worker_types(self) -> tuple[str, ...]:
        return (self.gpu_type or "gpu",)

    @property
    def source(self) -> str:
        return self.table.directory

    def rate(self, models, batch_sizes, gpus, worker_type: str) -> np.ndarray:
        if worker_type not in self.worker_types:
            raise ValueError(f"{self.source}: rates of one GPU type, {self.worker_types[0]!r}; got {worker_type!r}")
        triples, index = _distinct(models, batch_sizes, gpus)
        counts = self.table.gpu_counts
        values = np.full(len(triples), np.nan)
        for k, (model, batch, n) in enumerate(triples):
            col = np.searchsorted(counts, n)
            if col < counts.size and counts[col] == n:
                values[k] = self.table.curve(model, batch)[col]
        return values[index]


@dataclass(frozen=True)
class GoodputRates(CurveRates):
    """Pollux's measured applications (:mod:`simulator.applications`): jobs progress as co-adaptive
    jobs (:mod:`simulator.coadaptive`); the curves, epochs per second at a job's trace batch size on
    n GPUs packed on full nodes, are what policies that plan by a table read."""

    apps: dict = field(default_factory=dict)

    @classmethod
    def build(cls, apps: dict, models, batch_sizes, max_gpus: int, gpus_per_node: int) -> GoodputRates:
        """Curves for the (application, batch size) pairs of ``models`` / ``batch_sizes`` on 1..``max_gpus``."""
        unknown = sorted(set(models) - set(apps))
        if unknown:
            raise ValueError(f"no measurements for application(s) {', '.join(unknown)} (known: {', '.join(apps)})")
        counts = np.arange(1, max_gpus + 1)
        pairs = sorted({(m, int(b)) for m, b in zip(models, batch_sizes, strict=True)})
        batch_rows: dict[str, list] = {}
        rate_rows: dict[str, list] = {}
        for model, batch in pairs:
            app = apps[model]
            probe = CoAdaptiveJobs([app], np.array([batch]))
            iterations = app.iterations_at(batch, app.max_epochs - 1)
            curve = np.full(counts.size, np.nan)
            for k, n in enumerate(counts):
                if n * app.min_local <= batch:
                    try:
                        curve[k] = app.max_epochs / (iterations * probe.packed_step_seconds(0, int(n), batch,
                                                                                              gpus_per_node))
                    except ValueError:
                        pass
            batch_rows.setdefault(model, []).append(batch)
            rate_rows.setdefault(model, []).append(curve)
        table = IterationTable("pollux applications", counts, {m: np.array(b) for m, b in batch_rows.items()},
                               {m: np.array(r) for m, r in rate_rows.items()})
        return cls(table, None, dict(apps))


@dataclass(frozen=True)
class RunTimeRates:
    """Work in seconds of run time on the job's requested GPUs (Helios / Lucid job logs): a job on its
    requested GPUs progresses 1 s of work per second. Such jobs are gang-scheduled with a fixed GPU
    count: they run on exactly their requested GPUs or wait, so the views offer them no other count
    (the slot view's rate is NaN at every other count, which the engine refuses to allocate) and
    this model is only asked at the requested count."""

    gpu_type: str = "gpu"
    source: str = "run time in seconds (job log)"

    @property
    def worker_types(self) -> tuple[str, ...]:
        return (self.gpu_type,)

    def rate(self, models, batch_sizes, gpus, worker_type: str) -> np.ndarray:
        if worker_type != self.gpu_type:
            raise ValueError(f"{self.source}: rates of one GPU type, {self.gpu_type!r}; got {worker_type!r}")
        return np.ones(np.shape(np.asarray(gpus)))


__all__ = ["CurveRates", "GoodputRates", "RateModel", "RunTimeRates", "TableRates"]
