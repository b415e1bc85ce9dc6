"""Hypothesis strategies for the inputs of policies: allocation snapshots that any time-share
policy can take.

:func:`problems` draws a cluster (1-3 worker types of 1-8 GPUs), jobs (scale factors 1/2/4 no
larger than the cluster's largest type, weights 1/2/4, throughputs in tenths of steps/s with some
types unsupported, every job runnable somewhere), and every optional field a policy may read:
steps left, seconds since arrival, seconds left to an SLO (most jobs without one), prices per GPU-hour
and, with ``pairs=True``, candidate co-located pairs of equal scale factors whose rates are
fractions of the jobs' isolated ones. Values are drawn on coarse grids so a shrunk counterexample
reads well."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from formulations import AllocationProblem, JobPairs

#: worker type names as Gavel's tables spell them (the agnostic variants read "v100")
WORKER_TYPES = ("v100", "p100", "k80")


def _grid(low: int, high: int, step: float):
    """Numbers ``low*step .. high*step`` on a grid of ``step``."""
    return st.integers(low, high).map(lambda v: v * step)


@st.composite
def problems(draw, *, max_jobs: int = 8, max_types: int = 3, pairs: bool = False,
             multi_gpu: bool = True) -> AllocationProblem:
    """An :class:`AllocationProblem` (see the module docstring)."""
    n = draw(st.integers(1, min(max_types, len(WORKER_TYPES))))
    m = draw(st.integers(1, max_jobs))
    caps = np.array(draw(st.lists(st.integers(1, 8), min_size=n, max_size=n)), dtype=float)
    scales = np.array(draw(st.lists(st.sampled_from((1, 2, 4) if multi_gpu else (1,)), min_size=m, max_size=m)))
    scales = np.minimum(scales, 2 ** int(np.log2(caps.max())))
    weights = np.array(draw(st.lists(st.sampled_from((1.0, 2.0, 4.0)), min_size=m, max_size=m)))
    T = np.array(draw(st.lists(_grid(1, 1000, 0.1), min_size=m * n, max_size=m * n))).reshape(m, n)
    supported = np.array(draw(st.lists(st.booleans(), min_size=m * n, max_size=m * n))).reshape(m, n)
    fits = scales[:, None] <= caps[None, :]
    supported[np.arange(m), np.argmax(np.where(fits, T, -1.0), axis=1)] = True
    T = np.where(supported, T, 0.0)
    steps = np.array(draw(st.lists(_grid(1, 1000, 1000.0), min_size=m, max_size=m)))
    elapsed = np.array(draw(st.lists(_grid(0, 1000, 100.0), min_size=m, max_size=m)))
    slo = np.array(draw(st.lists(st.one_of(st.just(np.inf), _grid(1, 1000, 100.0)), min_size=m, max_size=m)))
    prices = np.array(draw(st.lists(_grid(1, 50, 0.1), min_size=n, max_size=n)))
    return AllocationProblem(
        worker_types=WORKER_TYPES[:n], capacities=caps, job_ids=np.arange(m),
        job_types=tuple(f"job{i}" for i in range(m)), scale_factors=scales, weights=weights, throughputs=T,
        remaining_steps=steps, time_since_arrival=elapsed, slo_remaining=slo, prices=prices,
        pairs=draw(job_pairs(T, scales)) if pairs else None)


@st.composite
def job_pairs(draw, throughputs: np.ndarray, scales: np.ndarray) -> JobPairs:
    """Candidate co-located pairs among jobs of equal scale factor: each member at a fraction
    (0.1-1.0) of its isolated rate on every type both can run on."""
    m, n = throughputs.shape
    first, second = np.triu_indices(m, k=1)
    same = scales[first] == scales[second]
    first, second = first[same], second[same]
    if first.size == 0:
        return JobPairs.empty(n)
    keep = np.array(draw(st.lists(st.booleans(), min_size=first.size, max_size=first.size)), dtype=bool)
    first, second = first[keep], second[keep]
    factors = np.array(draw(st.lists(_grid(1, 10, 0.1), min_size=first.size * n * 2,
                                     max_size=first.size * n * 2))).reshape(first.size, n, 2)
    both = (throughputs[first] > 0) & (throughputs[second] > 0)
    rates = np.stack([throughputs[first], throughputs[second]], axis=2) * factors * both[:, :, None]
    return JobPairs(first, second, rates)


@st.composite
def misreports(draw, problem: AllocationProblem) -> tuple[int, np.ndarray]:
    """A job and the factors (0.25-4, per worker type) by which it misstates its throughputs."""
    job = draw(st.integers(0, problem.num_jobs - 1))
    factors = np.array(draw(st.lists(st.sampled_from((0.25, 0.5, 0.8, 1.0, 1.25, 2.0, 4.0)),
                                     min_size=problem.num_types, max_size=problem.num_types)))
    return job, factors
