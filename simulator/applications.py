"""Pollux's measured applications: what one training job of each does on a placement, from the
published measurements (``traces/<app>/`` of the Pollux artifact).

- ``placements.csv`` (placement, local_bsz, step_time, sync_time): seconds per step at a per-GPU
  batch on a placement, and the part of it spent synchronizing gradients. A placement's decimal
  digits are its GPUs per node (``1423``: four nodes with 1, 4, 2 and 3 GPUs).
- ``scalability.csv`` (num_nodes, num_replicas, local_bsz, step_time, sync_time): the same on
  larger clusters, by nodes and replicas only.
- ``validation-<B>.csv`` (progress, iteration, metric, grad_sqr, grad_var): one row per epoch of
  training at global batch B: statistical progress at the epoch's end (in iterations at the
  initial batch M0), the iterations taken, the validation metric and the gradient statistics.

The job model (as the published simulator's):

- M0 is the smallest validated batch, the largest is the batch-size limit, the per-GPU batch lies
  within the measured ``local_bsz`` (yolov3: at most 8); a job trains ``max_epochs`` epochs
  (:data:`MAX_EPOCHS`).
- **Step time** of a placement (as its lexicographically smallest rotation) at per-GPU batch m:
  linear in m between the measurements of that placement; a placement not measured is
  interpolated linearly over (nodes ≤ 16, replicas, m) between the measured points (placements
  of equal nodes and replicas averaged) and ``scalability.csv``. With s extra accumulation
  micro-steps a step takes ``step + s · (step − sync)``.
- **Gradient statistics** (sqr, var) in epoch e at batch M: row e of the validation files of the
  validated batches around M, linear in M. A step at batch M advances progress by
  ``gain(M) = (var + sqr) / (var / (M / M0) + sqr)``, i.e. M / M0 times the statistical efficiency
  ``E(M) = (φ + M0) / (φ + M)`` with noise scale ``φ = M0 · var / sqr``.
- **Epochs** end where progress reaches the smallest progress any validation file records at
  that epoch's end; the job completes at the end of its last epoch.
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

#: epochs each published application trains
MAX_EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}
#: per-GPU batch limits the published simulator sets over the measured range
MAX_LOCAL_BATCH = {"yolov3": 8}
#: nodes beyond which the measurements are extrapolated flat
MAX_MEASURED_NODES = 16

_VALIDATION = re.compile(r"validation-(\d+)\.csv$")


class ApplicationError(ValueError):
    """An application's measurements are missing or malformed (the message names the file)."""


def canonical(placement) -> tuple[int, ...]:
    """The placement's GPUs per node without empty nodes, as its lexicographically smallest
    rotation (how the measurements are keyed)."""
    p = tuple(int(g) for g in placement if g > 0)
    return min((p[i:] + p[:i] for i in range(len(p))), default=())


def placement_id(placement) -> int:
    """``(1, 4, 2, 3)`` -> 1234's digit form ``1423`` after :func:`canonical` (0 for no GPUs)."""
    return int("".join(map(str, canonical(placement))) or 0)


@dataclass(frozen=True)
class Application:
    """One application's constants and measurements (see the module docstring)."""

    name: str
    batch_sizes: np.ndarray
    max_local: int
    min_local: int
    max_epochs: int
    #: per validated batch (rows) and epoch (columns)
    progress: np.ndarray
    iterations: np.ndarray
    grad_sqr: np.ndarray
    grad_var: np.ndarray
    #: placement id -> (per-GPU batches ascending, step times, sync times)
    placements: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
    #: (nodes, replicas, per-GPU batch, step, sync) rows of scalability.csv
    scalability: np.ndarray
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def init_batch(self) -> int:
        return int(self.batch_sizes[0])

    @property
    def max_batch(self) -> int:
        return int(self.batch_sizes[-1])

    @cached_property
    def boundaries(self) -> np.ndarray:
        """Progress at the end of each epoch e = 0..max_epochs (0 at e = 0)."""
        return np.concatenate([[0.0], self.progress[:, :self.max_epochs].min(axis=0)])

    @property
    def total_progress(self) -> float:
        """Progress at which a job of this application completes."""
        return float(self.boundaries[self.max_epochs])

    def step_time(self, placement, atomic: float) -> tuple[float, float]:
        """(step, sync) seconds of one step at per-GPU batch ``atomic`` on ``placement`` (GPUs
        per node); ValueError outside the measured range."""
        key = (placement_id(placement), float(atomic))
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._interpolate(canonical(placement), float(atomic))
        return hit

    def _interpolate(self, placement: tuple[int, ...], m: float) -> tuple[float, float]:
        measured = self.placements.get(placement_id(placement))
        if measured is not None:
            local, step, sync = measured
            if not local[0] <= m <= local[-1]:
                raise ValueError(f"{self.name}: per-GPU batch {m:g} outside the measured "
                                 f"{local[0]:g}..{local[-1]:g} on placement {placement}")
            return float(np.interp(m, local, step)), float(np.interp(m, local, sync))
        point = (min(len(placement), MAX_MEASURED_NODES), sum(placement), m)
        step, sync = self._cloud(np.array([point], dtype=float))[0]
        if not (np.isfinite(step) and np.isfinite(sync)):
            raise ValueError(f"{self.name}: placement {placement} at per-GPU batch {m:g} is outside the "
                             f"measurements")
        return float(step), float(sync)

    @cached_property
    def _cloud(self):
        """Linear interpolation of (step, sync) over (nodes, replicas, per-GPU batch): the measured
        placements' means by (nodes, replicas, batch) in that order, then ``scalability.csv`` in file
        order. The points lie on a grid, whose Delaunay triangulation is not unique: the order of the
        points picks one, and this is the published simulator's (its grouped means come sorted)."""
        from scipy.interpolate import LinearNDInterpolator

        rows = {}
        for pid, (local, step, sync) in self.placements.items():
            digits = [int(d) for d in str(pid)]
            for m, a, b in zip(local, step, sync, strict=True):
                rows.setdefault((len(digits), sum(digits), float(m)), []).append((a, b))
        order = sorted(rows)
        keys = np.array(order, dtype=float)
        values = np.array([np.mean(rows[k], axis=0) for k in order])
        points = np.vstack([keys, self.scalability[:, :3]])
        values = np.vstack([values, self.scalability[:, 3:]])
        return LinearNDInterpolator(points, values)

    def grad_stats(self, batch: float, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) in ``epoch`` (0-based) at global batch ``batch``."""
        return self._between(batch, epoch, self.grad_sqr), self._between(batch, epoch, self.grad_var)

    def iterations_at(self, batch: float, epoch: int) -> float:
        """Iterations at global batch ``batch`` by the end of ``epoch`` (0-based)."""
        return self._between(batch, epoch, self.iterations)

    def _between(self, batch: float, epoch: int, table: np.ndarray) -> float:
        b = self.batch_sizes
        if not b[0] <= batch <= b[-1]:
            raise ValueError(f"{self.name}: batch {batch:g} outside the validated {b[0]}..{b[-1]}")
        hi = int(np.searchsorted(b, batch, side="left"))
        if b[hi] == batch:
            return float(table[hi, epoch])
        lo = hi - 1
        w = (batch - b[lo]) / (b[hi] - b[lo])
        return float(table[lo, epoch] + w * (table[hi, epoch] - table[lo, epoch]))

    def gain(self, batch, epoch: int):
        """Progress per step at global batch ``batch`` in ``epoch``: (var + sqr) / (var / r + sqr), r = batch / M0."""
        sqr, var = self.grad_stats(batch, epoch)
        return gain(batch / self.init_batch, sqr, var)


def gain(scale, sqr: float, var: float):
    """(var + sqr) / (var / scale + sqr), 1 where the denominator is not positive."""
    den = var / np.asarray(scale, dtype=float) + sqr
    return np.where(den > 0, (var + sqr) / np.where(den > 0, den, 1.0), 1.0)


def _rows(path: Path, columns: tuple[str, ...]) -> np.ndarray:
    try:
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None or tuple(h.strip() for h in header[:len(columns)]) != columns:
                raise ApplicationError(f"{path}:1: expected columns {','.join(columns)}, got {header}")
            rows = []
            for line, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) < len(columns):
                    raise ApplicationError(f"{path}:{line}: expected {len(columns)} fields, got {len(row)}")
                try:
                    rows.append([float(row[i]) for i in range(len(columns))])
                except ValueError:
                    bad = next(i for i in range(len(columns)) if not _is_number(row[i]))
                    raise ApplicationError(f"{path}:{line}: column {columns[bad]!r}: not a number: "
                                           f"{row[bad]!r}") from None
    except OSError as exc:
        raise ApplicationError(f"{path}: {exc.strerror}") from None
    if not rows:
        raise ApplicationError(f"{path}: no rows")
    return np.array(rows)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_application(directory: str | os.PathLike, name: str | None = None) -> Application:
    """The application measured in ``directory`` (named after it unless ``name`` is given)."""
    d = Path(directory)
    name = name or d.name
    if not d.is_dir():
        raise ApplicationError(f"{d}: no such application directory")
    validation = sorted((int(m.group(1)), p) for p in d.iterdir() if (m := _VALIDATION.search(p.name)))
    if not validation:
        raise ApplicationError(f"{d}: no validation-<batch>.csv files")
    tables = [_rows(p, ("progress", "iteration", "metric", "grad_sqr", "grad_var")) for _, p in validation]
    epochs = min(len(t) for t in tables)
    max_epochs = MAX_EPOCHS.get(name, epochs)
    if max_epochs > epochs:
        raise ApplicationError(f"{d}: {name} trains {max_epochs} epochs but its validation files have {epochs}")
    stack = np.stack([t[:epochs] for t in tables])
    measured = _rows(d / "placements.csv", ("placement", "local_bsz", "step_time", "sync_time"))
    placements = {}
    for pid in np.unique(measured[:, 0]).astype(np.int64):
        rows = measured[measured[:, 0] == pid]
        rows = rows[np.argsort(rows[:, 1], kind="stable")]
        placements[int(pid)] = (rows[:, 1], rows[:, 2], rows[:, 3])
    scal_path = d / "scalability.csv"
    scalability = (_rows(scal_path, ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"))
                   if scal_path.exists() else np.zeros((0, 5)))
    min_local = int(measured[:, 1].min())
    max_local = MAX_LOCAL_BATCH.get(name, int(measured[:, 1].max()))
    batch_sizes = np.array([b for b, _ in validation], dtype=np.int64)
    if batch_sizes[-1] < min_local:
        raise ApplicationError(f"{d}: largest validated batch {batch_sizes[-1]} is below the smallest per-GPU "
                               f"batch {min_local}")
    return Application(name, batch_sizes, max_local, min_local, max_epochs, stack[:, :, 0], stack[:, :, 1],
                       stack[:, :, 3], stack[:, :, 4], placements, scalability)


def read_applications(root: str | os.PathLike) -> dict[str, Application]:
    """Every application under ``root`` (a folder with one folder per application), by name."""
    r = Path(root)
    apps = {p.name: read_application(p) for p in sorted(r.iterdir()) if p.is_dir()} if r.is_dir() else {}
    if not apps:
        raise ApplicationError(f"{r}: no application folders (expected <app>/placements.csv, validation-*.csv)")
    return apps
