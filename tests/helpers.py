"""Shared test helpers: backend lists and random problem strategies."""

import dataclasses

import numpy as np
from hypothesis import strategies as st

from formulations import AllocationProblem
from optim import available_backends

#: backends whose answers are exact to ~1e-6, and first-order ones with looser tolerances
EXACT = {"highs", "clarabel", "ecos", "gurobi", "cvxpy:CLARABEL", "cvxpy:HIGHS", "cvxpy:SCIPY", "cvxpy:GUROBI",
         "pyomo:highs", "pyomo:gurobi"}
LOOSE = {"cvxpy:SCS": 2e-3, "cvxpy:OSQP": 2e-3}


def lp_backends() -> list[str]:
    return [b.spec for b in available_backends()]


def tolerance(spec: str) -> float:
    return LOOSE.get(spec, 1e-6)


@st.composite
def problems(draw, max_jobs: int = 12, max_types: int = 3, multi_gpu: bool = True):
    """Random clusters, jobs and throughput matrices (some combinations unsupported)."""
    n = draw(st.integers(1, max_types))
    m = draw(st.integers(1, max_jobs))
    caps = np.array(draw(st.lists(st.integers(1, 8), min_size=n, max_size=n)), dtype=float)
    scales = draw(st.lists(st.sampled_from([1, 2, 4] if multi_gpu else [1]), min_size=m, max_size=m))
    scales = np.minimum(np.array(scales), int(caps.max()))
    weights = np.array(draw(st.lists(st.sampled_from([1.0, 1.0, 2.0, 5.0]), min_size=m, max_size=m)))
    rates = draw(st.lists(st.floats(0.1, 100.0), min_size=m * n, max_size=m * n))
    T = np.array(rates).reshape(m, n)
    mask = np.array(draw(st.lists(st.booleans(), min_size=m * n, max_size=m * n))).reshape(m, n)
    fits = scales[:, None] <= caps[None, :]
    mask[np.arange(m), np.argmax(np.where(fits, T, 0.0), axis=1)] = True  # every job runs where it fits
    T = np.where(mask, T, 0.0)
    return AllocationProblem(
        worker_types=tuple(f"gpu{j}" for j in range(n)),
        capacities=caps,
        job_ids=np.arange(m),
        job_types=tuple(f"model{i}" for i in range(m)),
        scale_factors=scales,
        weights=weights,
        throughputs=T,
    )


def tiny(T, caps=(1, 1), *, weights=None, scales=None, **fields) -> AllocationProblem:
    """A hand-sized problem: types t0.., jobs m0.. with throughputs ``T`` (m, n)."""
    T = np.asarray(T, dtype=float)
    m = T.shape[0]
    return AllocationProblem(
        worker_types=tuple(f"t{j}" for j in range(T.shape[1])), capacities=caps, job_ids=np.arange(m),
        job_types=tuple(f"m{i}" for i in range(m)), scale_factors=np.ones(m) if scales is None else scales,
        weights=np.ones(m) if weights is None else weights, throughputs=T, **fields,
    )


@st.composite
def many_equal_jobs(draw):
    """40-150 jobs of 2-6 kinds (throughputs, scale factor, weight, steps) on 2-3 worker types."""
    n = draw(st.integers(2, 3))
    kinds = draw(st.integers(2, 6))
    T = np.array(draw(st.lists(st.floats(0.5, 50.0), min_size=kinds * n, max_size=kinds * n))).reshape(kinds, n)
    T[:, 1:] *= np.array(draw(st.lists(st.booleans(), min_size=kinds * (n - 1), max_size=kinds * (n - 1)))).reshape(
        kinds, n - 1)
    scale = np.array(draw(st.lists(st.sampled_from([1, 2, 4]), min_size=kinds, max_size=kinds)))
    weight = np.array(draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=kinds, max_size=kinds)))
    steps = np.array(draw(st.lists(st.floats(1e3, 1e5), min_size=kinds, max_size=kinds)))
    m = draw(st.integers(40, 150))
    kind = np.array(draw(st.lists(st.integers(0, kinds - 1), min_size=m, max_size=m)))
    caps = np.array(draw(st.lists(st.integers(4, 60), min_size=n, max_size=n)), dtype=float)
    return AllocationProblem(worker_types=tuple(f"t{j}" for j in range(n)), capacities=caps, job_ids=np.arange(m),
                             job_types=tuple(f"k{k}" for k in kind), scale_factors=scale[kind], weights=weight[kind],
                             throughputs=T[kind], remaining_steps=steps[kind])


@st.composite
def jobs_equal_but_for_steps(draw):
    """30-150 jobs of 1-5 kinds (throughputs, scale factor) on 2-3 worker types, each with its own
    remaining steps (some repeated), clusters from roomy to tight."""
    problem = draw(many_equal_jobs())
    m = problem.num_jobs
    steps = np.array(draw(st.lists(st.floats(1e3, 1e6), min_size=m, max_size=m)))
    repeats = np.array(draw(st.lists(st.booleans(), min_size=m, max_size=m)))
    steps = np.where(repeats, steps[0], steps)
    return dataclasses.replace(problem, weights=np.ones(m), remaining_steps=steps)


@st.composite
def distinct_jobs(draw, min_jobs: int = 60, max_jobs: int = 120, per_job=(0.3, 0.75, 1.5, 3.0)):
    """``min_jobs``-``max_jobs`` jobs with their own throughputs (some cells 0), scale factors
    1/2/4, weights 1/2/4 and steps on 2-10 worker types, from oversubscribed (``per_job[0]`` GPUs a
    job) to roomy."""
    n = draw(st.integers(2, 10))
    m = draw(st.integers(min_jobs, max_jobs))
    seed = draw(st.integers(0, 2**32 - 1))
    share = draw(st.sampled_from(list(per_job)))
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.5, 50.0, (m, n)) * (rng.random((m, n)) > 0.1)
    T[np.arange(m), rng.integers(0, n, m)] = rng.uniform(0.5, 50.0, m)  # every job runs somewhere
    caps = np.maximum(4, np.round(rng.dirichlet(np.ones(n)) * share * m))
    return AllocationProblem(worker_types=tuple(f"t{j}" for j in range(n)), capacities=caps, job_ids=np.arange(m),
                             job_types=tuple(f"j{i}" for i in range(m)),
                             scale_factors=rng.choice([1, 2, 4], m), weights=rng.choice([1.0, 2.0, 4.0], m),
                             throughputs=T, remaining_steps=rng.uniform(1e3, 1e6, m))
