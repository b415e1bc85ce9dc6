"""Jobs whose batch size changes while they train: the engine's mutable per-job state.

Progress is counted in optimizer steps at the job's current batch size b:
``steps_per_epoch(b) = ceil(D / b)``. A round runs at the batch size in force when it was
dispatched; after it, a job that moved into an epoch with another batch size switches:
its rates become the table's rates of ``"<model> (batch size b')"`` at its scale factor,
and its step counts are rescaled so that its epoch count stays fixed
(``total' = ceil(total · b / b')``, or ``E · ceil(D / b')`` if that changes the count) and
its completed fraction of epochs is kept. A batch size the table lacks is not taken (the
run's notes say so).

With ``published=True`` the published Shockwave simulator's rules apply instead: the
change is decided from the progress at dispatch by its own accordion / GNS rules
(:func:`~simulator.adaptation.published_next_batch_size`) and progress is rounded up to
whole epochs on every change.
"""

from __future__ import annotations

import math

import numpy as np

from allocators.round_plans import EpochProfile
from simulator.adaptation import (
    DATASET_SIZES,
    batch_size_schedule,
    job_type_at,
    num_epochs,
    published_next_batch_size,
    split_job_type,
    steps_per_epoch,
)
from simulator.round_view import RoundView
from simulator.throughputs import ThroughputTable, ThroughputTableError


class AdaptiveJobs:
    """Current batch size, rates and step totals of every job of a workload."""

    def __init__(self, workload: RoundView, table: ThroughputTable | None, *, published: bool = False):
        tr = workload.trace
        self.workload = workload
        self.table = table
        self.published = published
        self.total_steps = tr.total_steps.copy()
        self.rates = workload.rates.copy()
        J = len(tr)
        self.models: list[str] = []
        self.b0 = np.zeros(J, dtype=np.int64)
        self.spe = np.ones(J, dtype=np.int64)
        self.adapts = np.zeros(J, dtype=bool)
        self.notes: dict[str, None] = {}
        self._n = len(workload.cluster.worker_types)
        self._cols = None if table is None else table.type_columns(workload.cluster.worker_types)
        self._rows: dict[tuple[str, int, int], np.ndarray] = {}
        self.epochs = np.ones(J, dtype=np.int64)
        duration = np.zeros(J)  # of every epoch, for a job that does not adapt
        varying: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # per-epoch (batch sizes, durations)
        ref = workload.reference_column
        for i, job_type in enumerate(tr.job_types):
            model, bs = split_job_type(job_type)
            self.models.append(model)
            if bs is None or model not in DATASET_SIZES:  # one epoch (batch size 0): the whole job
                self.spe[i] = max(1, int(tr.total_steps[i]))
                duration[i] = tr.total_steps[i] / workload.rates[i, ref[i]]
                continue
            self.b0[i] = bs
            self.spe[i] = steps_per_epoch(model, bs)
            epochs = self.epochs[i] = num_epochs(model, bs, int(tr.total_steps[i]))
            self.adapts[i] = tr.modes[i] != "static"
            if not self.adapts[i]:  # one batch size: one duration for every epoch
                rate = float(self._rate_row(model, bs, int(tr.scale_factors[i]))[ref[i]])
                if math.isnan(rate):
                    self._note_missing(model, bs, int(tr.scale_factors[i]))
                duration[i] = (DATASET_SIZES[model] / bs) / rate if rate > 0 else np.inf
                continue
            sched = batch_size_schedule(tr.modes[i], model, bs, epochs, int(tr.scale_factors[i]))
            rate = self._rates_at(model, sched, int(tr.scale_factors[i]))[:, ref[i]]
            missing = np.isnan(rate)
            if missing.any():  # the job keeps its batch size where the table lacks the next
                for b in np.unique(sched[missing]).tolist():
                    self._note_missing(model, b, int(tr.scale_factors[i]))
                keep = np.maximum.accumulate(np.where(missing, 0, np.arange(epochs)))
                sched, rate = sched[keep], rate[keep]
            with np.errstate(divide="ignore"):
                varying[i] = (sched, np.where(rate > 0, (DATASET_SIZES[model] / sched) / rate, np.inf))
        self.batch_size = self.b0.copy()
        self.profile = EpochProfile(self.epochs.copy(), self.b0.copy(), duration, varying)
        self._pending = np.zeros(J, dtype=np.int64)
        #: some job changes its batch size
        self.adapting = bool(self.adapts.any())

    def _rates_at(self, model: str, batch_sizes: np.ndarray, scale: int) -> np.ndarray:
        """(len(batch_sizes), n) rates on the cluster's types; a row of NaN where the table
        has no entry for that batch size."""
        distinct, which = np.unique(batch_sizes, return_inverse=True)
        return np.stack([self._rate_row(model, b, scale) for b in distinct.tolist()])[which]

    def _rate_row(self, model: str, batch_size: int, scale: int) -> np.ndarray:
        """Rates on the cluster's types of ``model`` at ``batch_size`` and ``scale`` (NaN
        where the table has no entry), looked up once per key."""
        key = (model, batch_size, scale)
        row = self._rows.get(key)
        if row is None:
            row = np.full(self._n, np.nan)
            if self.table is not None:
                try:
                    row = self.table.isolated[self.table.index_of(job_type_at(model, batch_size), scale), self._cols]
                except ThroughputTableError:  # not in the table: the callers note it and keep the job's batch size
                    pass
            self._rows[key] = row
        return row

    def epochs_done(self, jobs: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Completed epochs of ``jobs`` with ``steps`` at their current batch size."""
        return np.minimum(steps // self.spe[jobs], self.epochs[jobs])

    def dispatched(self, jobs: np.ndarray, steps: np.ndarray) -> None:
        """Published rules: decide each adapting job's next batch size from its progress now."""
        if not (self.published and self.adapting):
            return
        for i, s in zip(jobs[self.adapts[jobs]].tolist(), steps[self.adapts[jobs]].tolist()):
            epoch = math.ceil(s / self.spe[i])
            tr = self.workload.trace
            self._pending[i] = published_next_batch_size(tr.modes[i], self.models[i], int(self.b0[i]),
                                                         int(self.batch_size[i]), epoch, int(tr.scale_factors[i]))

    def after_round(self, jobs: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Switch the batch size of ``jobs`` (which just ran and are not done; ``steps`` is
        the engine's per-job step counter, rescaled in place) where their rule says so;
        returns the jobs whose rates changed."""
        moving = jobs[self.adapts[jobs]]
        if moving.size == 0:
            return moving
        if self.published:
            new = self._pending[moving]
        else:
            epoch = np.minimum(steps[moving] // self.spe[moving], self.epochs[moving] - 1)
            new = self.profile.batch_sizes_at(moving, epoch)
        change = new != self.batch_size[moving]
        changed = []
        for i, b in zip(moving[change].tolist(), new[change].tolist()):
            if self._switch(i, int(b), steps):
                changed.append(i)
        return np.asarray(changed, dtype=np.int64)

    def _note_missing(self, model: str, batch_size: int, scale: int) -> None:
        self.notes[f"{model} at batch size {batch_size} (scale {scale}) is not in the throughput table: "
                   f"jobs stay at their batch size"] = None

    def _switch(self, i: int, new_bs: int, steps: np.ndarray) -> bool:
        model, scale = self.models[i], int(self.workload.trace.scale_factors[i])
        rates = self._rates_at(model, np.array([new_bs]), scale)[0]
        if np.isnan(rates).all():
            self._note_missing(model, new_bs, scale)
            return False
        old_bs, old_spe = int(self.batch_size[i]), int(self.spe[i])
        new_spe = steps_per_epoch(model, new_bs)
        epochs = math.ceil(int(self.total_steps[i]) / old_spe)
        total = math.ceil(int(self.total_steps[i]) * old_bs / new_bs)
        if math.ceil(total / new_spe) != epochs:
            total = new_spe * epochs
        done = int(steps[i])
        steps[i] = math.ceil(done / old_spe) * new_spe if self.published else (done * new_spe) // old_spe
        self.total_steps[i] = total
        self.rates[i] = np.nan_to_num(rates)
        self.batch_size[i] = new_bs
        self.spe[i] = new_spe
        return True
