"""Job sets for allocation snapshots: sampled from Gavel's distributions or read from CSV.

A jobs CSV has a header row and the columns ``job_type`` (the model name as in the
throughput table) and optionally ``job_id``, ``scale_factor`` (default 1),
``priority_weight`` (default 1), ``total_steps`` (steps remaining) and ``slo`` (seconds
left to the job's deadline; empty = none).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from simulator.readers.csv_rows import read_csv_rows
from simulator.readers.fields import parse_numbers, shown
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
    """A malformed jobs CSV; the message names the file, the line and the column."""


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


def read_jobs_csv(path: str | os.PathLike, table: ThroughputTable) -> JobSet:
    """Read a jobs CSV (see module doc) with :mod:`simulator.readers.csv_rows`; errors name file, line and
    column."""
    rows = read_csv_rows(path, "jobs", JobsFileError)
    if "job_type" not in rows.header:
        raise JobsFileError(f"{rows.source}:{rows.header_line}: header must name a 'job_type' column")
    if not rows.rows:
        raise JobsFileError(f"{rows.source}: no jobs")
    n = len(rows.rows)

    def texts(name: str, default: str = "") -> list[str]:
        return [text or default for text in rows.column(name)] if name in rows.header else [default] * n

    def column(name: str, default: str, **checks) -> np.ndarray:
        return parse_numbers(texts(name, default), lambda i, problem: rows.error(i, name, problem), **checks)

    def optional(name: str, missing: float) -> np.ndarray:
        """A positive number where the cell is not empty, else ``missing``."""
        cells = texts(name)
        given = [i for i, text in enumerate(cells) if text]
        values = np.full(n, missing)
        values[given] = parse_numbers([cells[i] for i in given], lambda k, problem: rows.error(given[k], name, problem),
                                      minimum=0, strict=True)
        return values

    ids = column("job_id", "", minimum=0, integer=True) if "job_id" in rows.header else np.arange(n)
    models = tuple(rows.names("job_type"))
    scales = column("scale_factor", "1", minimum=0, strict=True, integer=True)
    weights = column("priority_weight", "1", minimum=0, strict=True)
    steps, slos = optional("total_steps", np.nan), optional("slo", np.inf)
    keys = np.empty(n, dtype=np.int64)
    for i, (model, scale) in enumerate(zip(models, scales.tolist())):
        try:
            keys[i] = table.index_of(model, scale)
        except ValueError:
            raise rows.error(i, "job_type", f"{shown(model)} at scale_factor {texts('scale_factor', '1')[i]} is not in "
                                            f"{table.source}") from None
    if (repeat := _first_repeat(ids)) is not None:
        raise rows.error(repeat, "job_id", f"{texts('job_id')[repeat]} repeats an earlier job's id")
    given = ~np.isnan(steps)
    if given.any() and not given.all():
        raise rows.error(int(np.argmin(given)), "total_steps", "missing (give it for every job or none)")
    return JobSet(ids, models, scales, weights, keys, total_steps=steps if given.all() else None,
                  slo=slos if np.isfinite(slos).any() else None)


def _first_repeat(values: np.ndarray) -> int | None:
    """The first index whose value appeared before it, or None."""
    _, first = np.unique(values, return_index=True)
    if len(first) == len(values):
        return None
    return int(np.flatnonzero(~np.isin(np.arange(len(values)), first))[0])
