"""Job sets for allocation snapshots: sampled from Gavel's distributions or read from CSV.

A jobs CSV has a header row and the columns ``job_type`` (the model name as in the
throughput table) and optionally ``job_id``, ``scale_factor`` (default 1) and
``priority_weight`` (default 1).
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass

import numpy as np

from .throughputs import ThroughputTable

#: Gavel's multi-GPU scale-factor distribution
SCALE_PROBABILITIES = {1: 0.7, 2: 0.1, 4: 0.15, 8: 0.05}
HIGH_PRIORITY_WEIGHT = 5.0


class JobsFileError(ValueError):
    pass


@dataclass(frozen=True)
class JobSet:
    """Jobs as parallel arrays; ``keys[i]`` indexes the throughput table's job types."""

    job_ids: np.ndarray
    models: tuple[str, ...]
    scale_factors: np.ndarray
    weights: np.ndarray
    keys: np.ndarray

    def __len__(self) -> int:
        return int(self.job_ids.shape[0])


def sample_jobs(
    table: ThroughputTable,
    num_jobs: int,
    seed: int = 0,
    *,
    multi_gpu: bool = False,
    priority_fraction: float = 0.0,
) -> JobSet:
    """``num_jobs`` jobs: uniform job type; scale 1, or Gavel's 1/2/4/8 mix (restricted to
    scales the table has) with ``multi_gpu``; a ``priority_fraction`` get weight 5."""
    if num_jobs < 1:
        raise ValueError(f"number of jobs must be >= 1, got {num_jobs}")
    rng = np.random.default_rng(seed)
    scales_in_table = sorted({s for _, s in table.keys})
    if multi_gpu:
        scales = [s for s in SCALE_PROBABILITIES if s in scales_in_table]
        probs = np.array([SCALE_PROBABILITIES[s] for s in scales])
        scale = rng.choice(scales, size=num_jobs, p=probs / probs.sum())
    else:
        scale = np.ones(num_jobs, dtype=np.int64)
    keys = np.empty(num_jobs, dtype=np.int64)
    for s in np.unique(scale):
        candidates = np.array([k for k, key in enumerate(table.keys) if key[1] == s])
        sel = np.flatnonzero(scale == s)
        keys[sel] = candidates[rng.integers(0, candidates.size, size=sel.size)]
    weights = np.where(rng.random(num_jobs) < priority_fraction, HIGH_PRIORITY_WEIGHT, 1.0)
    return JobSet(
        job_ids=np.arange(num_jobs, dtype=np.int64),
        models=tuple(table.keys[k][0] for k in keys),
        scale_factors=scale.astype(np.int64),
        weights=weights,
        keys=keys,
    )


def _positive(text: str, kind, where: str):
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise JobsFileError(f"{where}: expected a positive {'integer' if kind is int else 'number'}, got {text!r}")
    return value


def read_jobs_csv(path: str | os.PathLike, table: ThroughputTable) -> JobSet:
    """Read a jobs CSV (see module doc); errors name file, line and column."""
    src = os.fspath(path)
    try:
        fh = open(src, newline="")
    except OSError as exc:
        raise JobsFileError(f"{src}: cannot read: {exc.strerror}") from None
    with fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "job_type" not in reader.fieldnames:
            raise JobsFileError(f"{src}:1: header must name a 'job_type' column")
        ids, models, scales, weights, keys = [], [], [], [], []
        for row in reader:
            line = reader.line_num
            if None in row or any(v is None for v in row.values()):
                raise JobsFileError(f"{src}:{line}: expected {len(reader.fieldnames)} columns")
            model = row["job_type"].strip()
            scale = _positive(row.get("scale_factor") or "1", int, f"{src}:{line}: scale_factor")
            weight = _positive(row.get("priority_weight") or "1", float, f"{src}:{line}: priority_weight")
            job_id = row.get("job_id")
            job_id = _nonnegative_id(job_id, f"{src}:{line}: job_id") if job_id else len(ids)
            try:
                keys.append(table.index_of(model, scale))
            except ValueError:
                raise JobsFileError(
                    f"{src}:{line}: job_type: {model!r} at scale {scale} is not in {table.source}"
                ) from None
            ids.append(job_id)
            models.append(model)
            scales.append(scale)
            weights.append(weight)
    if not ids:
        raise JobsFileError(f"{src}: no jobs")
    if len(set(ids)) != len(ids):
        raise JobsFileError(f"{src}: job_id values are not unique")
    return JobSet(np.array(ids), tuple(models), np.array(scales), np.array(weights, dtype=float), np.array(keys))


def _nonnegative_id(text: str, where: str) -> int:
    if not text.strip().isdigit():
        raise JobsFileError(f"{where}: expected a non-negative integer, got {text!r}")
    return int(text)
