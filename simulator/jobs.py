"""Job sets for allocation snapshots: sampled from Gavel's distributions or read from CSV.

A jobs CSV has a header row and the columns ``job_type`` (the model name as in the
throughput table) and optionally ``job_id``, ``scale_factor`` (default 1),
``priority_weight`` (default 1), ``total_steps`` (steps remaining) and ``slo`` (seconds
left to the job's deadline; empty = none).
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass

import numpy as np

from simulator.throughputs import ThroughputTable

#: Gavel's multi-GPU scale-factor distribution
SCALE_PROBABILITIES = {1: 0.7, 2: 0.1, 4: 0.15, 8: 0.05}
HIGH_PRIORITY_WEIGHT = 5.0
#: Gavel's durations: 60·10^U(1.5, 3) s w.p. 0.8, else 60·10^U(3, 4) s
SHORT_PROBABILITY = 0.8
SHORT_LOG10_MINUTES = (1.5, 3.0)
LONG_LOG10_MINUTES = (3.0, 4.0)
#: the worker type whose rate turns a sampled duration into steps (Gavel's choice)
REFERENCE_TYPE = "v100"


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
    total_steps: np.ndarray | None = None
    slo: np.ndarray | None = None

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
    scales the table has) with ``multi_gpu``; a ``priority_fraction`` get weight 5.

    Durations follow Gavel's generator: ``60·10^U(1.5, 3)`` s w.p. 0.8, else
    ``60·10^U(3, 4)`` s; ``total_steps`` = duration × rate on the reference type (v100, or
    the job's fastest type when the table has no v100 or the job cannot run there)."""
    if num_jobs < 1:
        raise ValueError(f"number of jobs must be >= 1, got {num_jobs}")
    mix = draw_job_mix(np.random.default_rng(seed), table, num_jobs, multi_gpu=multi_gpu,
                       priority_fraction=priority_fraction)
    keys, scale, weights, duration = mix.keys, mix.scale_factors, mix.weights, mix.durations
    return JobSet(
        job_ids=np.arange(num_jobs, dtype=np.int64),
        models=tuple(table.keys[k][0] for k in keys),
        scale_factors=scale.astype(np.int64),
        weights=weights,
        keys=keys,
        total_steps=np.ceil(duration * reference_rates(table, keys)),
    )


@dataclass(frozen=True)
class JobMix:
    """Gavel's per-job draws: job type (table key index), scale factor, weight, duration (s)."""

    keys: np.ndarray
    scale_factors: np.ndarray
    weights: np.ndarray
    durations: np.ndarray


def draw_job_mix(rng: np.random.Generator, table: ThroughputTable, num_jobs: int, *, multi_gpu: bool,
                 priority_fraction: float) -> JobMix:
    """Scale 1, or Gavel's 1/2/4/8 mix restricted to the table's scales (renormalized);
    job type uniform among the table's types at that scale; weight 5 w.p.
    ``priority_fraction``; duration ``60·10^U(1.5, 3)`` s w.p. 0.8, else ``60·10^U(3, 4)`` s.
    Drawn in that order from ``rng``, vectorized over jobs."""
    table_scales = {s for _, s in table.keys}
    if multi_gpu:
        scales = [s for s in SCALE_PROBABILITIES if s in table_scales]
        if not scales:
            raise ValueError(f"{table.source}: no job types at scales {sorted(SCALE_PROBABILITIES)}")
        probs = np.array([SCALE_PROBABILITIES[s] for s in scales])
        scale = rng.choice(np.array(scales, dtype=np.int64), size=num_jobs, p=probs / probs.sum())
    else:
        if 1 not in table_scales:
            raise ValueError(f"{table.source}: no single-GPU job types")
        scale = np.ones(num_jobs, dtype=np.int64)
    keys = np.empty(num_jobs, dtype=np.int64)
    for s in np.unique(scale):
        candidates = np.array([k for k, key in enumerate(table.keys) if key[1] == s])
        sel = np.flatnonzero(scale == s)
        keys[sel] = candidates[rng.integers(0, candidates.size, size=sel.size)]
    weights = np.where(rng.random(num_jobs) < priority_fraction, HIGH_PRIORITY_WEIGHT, 1.0)
    short = rng.random(num_jobs) < SHORT_PROBABILITY
    exponent = np.where(short, rng.uniform(*SHORT_LOG10_MINUTES, num_jobs), rng.uniform(*LONG_LOG10_MINUTES, num_jobs))
    return JobMix(keys, scale.astype(np.int64), weights, 60.0 * 10.0 ** exponent)


def reference_rates(table: ThroughputTable, keys: np.ndarray) -> np.ndarray:
    """Each job type's rate on the reference type (its fastest type where that is 0)."""
    rates = table.isolated[keys]
    fastest = rates.max(axis=1)
    if REFERENCE_TYPE not in table.worker_types:
        return fastest
    ref = rates[:, table.worker_types.index(REFERENCE_TYPE)]
    return np.where(ref > 0, ref, fastest)


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
        ids, models, scales, weights, keys, steps, slos = [], [], [], [], [], [], []
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
            text = (row.get("total_steps") or "").strip()
            steps.append(_positive(text, float, f"{src}:{line}: total_steps") if text else math.nan)
            text = (row.get("slo") or "").strip()
            slos.append(_positive(text, float, f"{src}:{line}: slo") if text else math.inf)
    if not ids:
        raise JobsFileError(f"{src}: no jobs")
    if len(set(ids)) != len(ids):
        raise JobsFileError(f"{src}: job_id values are not unique")
    steps_given = [not math.isnan(v) for v in steps]
    if any(steps_given) and not all(steps_given):
        line = steps_given.index(False) + 2
        raise JobsFileError(f"{src}:{line}: total_steps: missing (give it for every job or none)")
    return JobSet(np.array(ids), tuple(models), np.array(scales), np.array(weights, dtype=float), np.array(keys),
                  total_steps=np.array(steps) if all(steps_given) else None,
                  slo=np.array(slos) if np.isfinite(slos).any() else None)


def _nonnegative_id(text: str, where: str) -> int:
    if not text.strip().isdigit():
        raise JobsFileError(f"{where}: expected a non-negative integer, got {text!r}")
    return int(text)
