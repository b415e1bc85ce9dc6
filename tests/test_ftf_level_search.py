"""Finish-time fairness by the level search (formulations.finish_time_fairness._descend): the same
level as the conic program and the demand-class bisection on jobs no two alike, in a few LPs; the
level LP assembled as arrays is the Model path's; the default solver's conic program below 256
jobs is Clarabel's, unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import distinct_jobs
from hypothesis import given, settings
from hypothesis import strategies as st

from allocators import make_policy
from formulations import AllocationProblem, combinations, finish_time_fairness
from optim import Model
from optim.backends.block import AUTO_MIN_BLOCKS
from simulator.simulate import default_solver


def with_history(problem, seed: int, started: bool):
    """Seconds since arrival (0 on a first call) and steps left, per job."""
    rng = np.random.default_rng(seed)
    elapsed = rng.uniform(0.0, 1e5, problem.num_jobs) * started
    return dataclasses.replace(problem, time_since_arrival=elapsed)


@settings(max_examples=30)
@given(distinct_jobs(min_jobs=2, max_jobs=120, per_job=(0.2, 0.75, 1.5, 3.0)), st.integers(0, 2**16),
       st.booleans(), st.sampled_from(["finish_time_fairness", "finish_time_fairness_perf"]))
def test_the_level_search_reaches_the_conic_and_bisection_level(problem, seed, started, name):
    problem = with_history(problem, seed, started)
    searched = make_policy(name, "block", method="bisection").allocate(problem)
    assert searched.notes[-1].startswith("level search"), searched.notes
    solves = int(searched.notes[-1].split(": ")[1].split(" ")[0])
    assert solves <= finish_time_fairness.MAX_DESCENT
    conic = make_policy(name, "clarabel", method="conic").allocate(problem)
    bisected = make_policy(name, "highs").allocate(problem)
    assert searched.objective == pytest.approx(conic.objective, rel=1e-6)
    assert searched.objective == pytest.approx(bisected.objective, rel=2e-7)
    lv = finish_time_fairness.levels(problem, "perf" if name.endswith("perf") else "agnostic",
                                     np.zeros(problem.num_jobs))
    lo, hi = finish_time_fairness.bounds(lv)
    assert lo * (1 - 1e-12) <= searched.objective <= hi * (1 + 1e-9)


def distinct(m: int, gpus_per_job: float, seed: int = 5) -> AllocationProblem:
    """m jobs of their own rates on two types with ``gpus_per_job`` GPUs a job in all."""
    rng = np.random.default_rng(seed)
    return AllocationProblem(worker_types=("a", "b"), capacities=np.full(2, gpus_per_job * m / 2),
                             job_ids=np.arange(m), job_types=tuple(f"j{i}" for i in range(m)),
                             scale_factors=rng.choice([1, 2, 4], m), weights=np.ones(m),
                             throughputs=rng.uniform(1.0, 9.0, (m, 2)), remaining_steps=rng.uniform(1e3, 1e5, m))


def test_the_level_search_stops_at_once_where_every_job_has_its_best_rate():
    m = 40
    problem = distinct(m, 10.0)
    alloc = make_policy("finish_time_fairness_perf", "block", method="bisection").allocate(problem)
    assert alloc.notes[-1] == "level search: 1 LP, each job's best rate reachable"
    lv = finish_time_fairness.levels(problem, "perf", np.zeros(m))
    assert alloc.objective == pytest.approx(finish_time_fairness.bounds(lv)[0], rel=1e-12)


@settings(max_examples=25)
@given(distinct_jobs(min_jobs=1, max_jobs=12), st.floats(1.0, 50.0), st.sampled_from(["perf", "agnostic"]))
def test_the_level_lp_as_arrays_is_the_model_paths(problem, r, variant):
    lv = finish_time_fairness.levels(problem, variant, np.zeros(problem.num_jobs))
    ours = finish_time_fairness.build_level_lp(lv, r).canonical()
    model = Model(f"finish_time_fairness[level {r:.6g}]")
    combos = combinations.singles(problem, finish_time_fairness.rates(problem, variant))
    x = combos.add_allocation(model)
    u = model.add_variables("u", 1, lb=0.0)
    slack = (r * lv.denominator - lv.elapsed) / lv.remaining
    model.add_rows("finish", {x: combos.throughput_map(slack), u: -np.ones((slack.size, 1))}, lo=0.0,
                   keys=problem.job_ids)
    model.set_objective({u: 1.0}, sense="max")
    reference = model.canonical()
    for name in ("c", "row_lo", "row_hi", "col_lo", "col_hi"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(reference, name), err_msg=name)
    np.testing.assert_array_equal(ours.A.scipy().toarray(), reference.A.scipy().toarray())


def test_the_default_solver_runs_the_conic_program_on_clarabel_below_256_jobs_and_the_search_from_there():
    assert default_solver("finish_time_fairness_perf") == "block:auto"
    assert default_solver("finish_time_fairness_packed") == "clarabel"
    for m, program in ((AUTO_MIN_BLOCKS - 1, "conic"), (AUTO_MIN_BLOCKS, "level search")):
        problem = with_history(distinct(m, 0.75), 3, True)
        ours = make_policy("finish_time_fairness_perf", "block:auto").allocate(problem)
        conic = make_policy("finish_time_fairness_perf", "clarabel").allocate(problem)
        assert ours.notes[-1].startswith(program)
        if program == "conic":
            np.testing.assert_array_equal(ours.x, conic.x)
        assert ours.objective == pytest.approx(conic.objective, rel=1e-6)
