"""Synthetic job traces drawn from Gavel's workload generator.

All draws come from one ``np.random.default_rng(seed)`` and are vectorized, so a seed
fixes the whole trace. Per job:

* scale factor: 1, or with ``multi_gpu`` 1/2/4/8 w.p. 0.7/0.1/0.15/0.05, restricted to
  the scales the table lists (probabilities renormalized);
* job type: uniform over the table's models listed at that scale (for ``s > 1`` these
  are the distributed-capable types);
* duration: ``60·10^U(1.5, 3)`` s w.p. 0.8, else ``60·10^U(3, 4)`` s;
  ``total_steps = ceil(duration × rate on the reference type)`` (see
  :func:`simulator.jobs.reference_rates`);
* priority weight 5 w.p. ``priority_fraction``, else 1;
* SLO: ``factor × duration`` with ``factor`` uniform over ``slo_factors``; none (inf)
  when ``slo_factors`` is None;
* arrival: with ``lam > 0`` a Poisson process of mean gap ``lam`` s — the first job at
  ``first_arrival``, each later one an Exp(mean ``lam``) gap after the previous (as in
  Gavel's trace generator); with ``lam == 0`` every job at ``first_arrival``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from simulator.jobs import draw_job_mix, reference_rates
from simulator.readers.traces import Trace
from simulator.throughputs import ThroughputTable


def _slug(model: str) -> str:
    """``'ResNet-18 (batch size 128)'`` -> ``'resnet_18_batch_size_128'``."""
    return re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_") or "job"


def _fraction(name: str, value: float) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return value


def generate_trace(
    table: ThroughputTable,
    num_jobs: int,
    *,
    seed: int = 0,
    lam: float = 0.0,
    multi_gpu: bool = False,
    priority_fraction: float = 0.0,
    slo_factors: Sequence[float] | None = None,
    first_arrival: float = 0.0,
) -> Trace:
    """``num_jobs`` synthetic jobs from Gavel's distributions (see the module doc).

    ``lam`` is the mean inter-arrival gap in seconds (``3600 / jobs per hour``; 0 = all
    jobs arrive at ``first_arrival``). Raises ValueError on invalid arguments.
    """
    if isinstance(num_jobs, bool) or int(num_jobs) != num_jobs or num_jobs < 1:
        raise ValueError(f"number of jobs must be an integer >= 1, got {num_jobs!r}")
    num_jobs = int(num_jobs)
    lam = float(lam)
    if not math.isfinite(lam) or lam < 0:
        raise ValueError(f"lam (mean inter-arrival gap, s) must be finite and >= 0, got {lam!r}")
    first_arrival = float(first_arrival)
    if not math.isfinite(first_arrival) or first_arrival < 0:
        raise ValueError(f"first_arrival must be finite and >= 0, got {first_arrival!r}")
    priority_fraction = _fraction("priority_fraction", priority_fraction)
    factors = None
    if slo_factors is not None:
        factors = np.asarray(list(slo_factors), dtype=float)
        if factors.ndim != 1 or factors.size == 0:
            raise ValueError("slo_factors must be a non-empty sequence of numbers (or None)")
        if not (np.isfinite(factors) & (factors > 0)).all():
            raise ValueError(f"slo_factors must be finite and > 0, got {factors.tolist()}")
    if not table.keys:
        raise ValueError(f"{table.source}: the throughput table has no job types")

    rng = np.random.default_rng(seed)
    mix = draw_job_mix(rng, table, num_jobs, multi_gpu=multi_gpu, priority_fraction=priority_fraction)
    keys, scale, weights, duration = mix.keys, mix.scale_factors, mix.weights, mix.durations
    rates = reference_rates(table, keys)
    if not (rates > 0).all():
        bad = table.keys[int(keys[np.flatnonzero(rates <= 0)[0]])]
        raise ValueError(f"{table.source}: job type {bad!r} has no positive rate on any worker type")
    total_steps = np.maximum(np.ceil(duration * rates), 1).astype(np.int64)

    if factors is None:
        slo = np.full(num_jobs, np.inf)
    else:
        slo = factors[rng.integers(0, factors.size, size=num_jobs)] * duration

    if lam > 0:
        gaps = rng.exponential(lam, size=num_jobs)
        gaps[0] = 0.0
        arrivals = first_arrival + np.cumsum(gaps)
    else:
        arrivals = np.full(num_jobs, first_arrival)

    models = tuple(table.keys[k][0] for k in keys)
    slugs = {m: _slug(m) for m in set(models)}
    return Trace(
        job_types=models,
        commands=tuple(f"python3 train.py --model {slugs[m]}" for m in models),
        working_dirs=tuple(f"workloads/{slugs[m]}" for m in models),
        num_steps_args=("--num_steps",) * num_jobs,
        needs_data_dir=np.zeros(num_jobs, dtype=np.int64),
        total_steps=total_steps,
        scale_factors=scale.astype(np.int64),
        weights=weights.astype(float),
        slo=slo.astype(float),
        arrival_times=arrivals.astype(float),
        source=f"<generated seed={seed}>",
    )
