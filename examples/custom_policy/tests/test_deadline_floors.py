"""The deadline_floors policy tested with schedopt.testing: hypothesis snapshots (problems()) and
the invariants every allocation must keep, plus small snapshots whose optimum is known by hand.

Run: ``pytest examples/custom_policy/tests`` (installed or not: without the package the class is
loaded from ../deadline_floors/__init__.py by file reference)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import schedopt
from schedopt.testing import invariants, problems

try:
    from deadline_floors import DeadlineFloors  # pip install -e examples/custom_policy
except ImportError:  # not installed: the file next door, as `schedopt check` would load it
    DeadlineFloors = schedopt.load_policy(
        f"{Path(__file__).resolve().parents[1] / 'deadline_floors' / '__init__.py'}:DeadlineFloors")

FALLBACK = "the deadlines do not all fit"


def snapshot(capacity: float, rates: list[float], steps: list[float], slo: list[float] | None):
    """One type (v100, ``capacity`` GPUs), one-GPU jobs of equal weight at ``rates`` steps/s."""
    m = len(rates)
    return schedopt.AllocationProblem(
        worker_types=("v100",), capacities=np.array([capacity]), job_ids=np.arange(m),
        job_types=tuple(f"job{i}" for i in range(m)), scale_factors=np.ones(m, dtype=int), weights=np.ones(m),
        throughputs=np.array(rates, dtype=float)[:, None], remaining_steps=np.array(steps, dtype=float),
        slo_remaining=None if slo is None else np.array(slo, dtype=float))


def gavel_level(problem) -> float:
    return schedopt.make_policy("max_min_fairness_perf", "highs").allocate(problem).objective


@settings(max_examples=40, deadline=None)
@given(problems())
def test_every_allocation_keeps_the_invariants(problem):
    allocation = DeadlineFloors().allocate(problem)
    assert invariants(allocation) is None
    assert np.isfinite(allocation.objective)


@settings(max_examples=40, deadline=None)
@given(problems())
def test_without_deadlines_it_is_gavels_max_min_fairness(problem):
    for plain in (dataclasses.replace(problem, slo_remaining=np.full(problem.num_jobs, np.inf)),
                  dataclasses.replace(problem, slo_remaining=None)):
        level = DeadlineFloors().allocate(plain).objective  # the level z: the optimal shares may differ
        assert level == pytest.approx(gavel_level(plain), rel=1e-6, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(problems())
def test_floors_are_met_or_the_allocation_says_they_were_scaled(problem):
    policy = DeadlineFloors()
    need = policy.floors(problem)
    allocation = policy.allocate(problem)
    got = allocation.effective_throughput()
    scaled = [n for n in allocation.notes if FALLBACK in n]
    floor = need * (policy.alpha if scaled else 1.0)
    assert (got >= floor * (1 - 1e-6) - 1e-7).all()
    assert bool(scaled) == (policy.alpha < 1.0)


def test_a_floor_that_fits_is_met_and_the_others_share_the_rest():
    # 1 GPU; job 0 needs 800 steps in 100 s = 8 steps/s of its 10: 0.8 of the GPU, job 1 gets 0.2
    problem = snapshot(1, [10.0, 10.0], [800.0, 1e6], [100.0, np.inf])
    allocation = DeadlineFloors().allocate(problem)
    assert allocation.effective_throughput() == pytest.approx([8.0, 2.0], rel=1e-6)
    assert allocation.objective == pytest.approx(0.2, rel=1e-6)  # k_1 thr_1 = 2 / 10
    assert gavel_level(problem) == pytest.approx(0.5, rel=1e-6)  # without the floor: half each
    assert not [n for n in allocation.notes if FALLBACK in n]


def test_when_every_job_has_a_deadline_the_max_min_is_over_all_of_them():
    # floors 7 and 1 steps/s fit in 1 GPU; the level is then min(0.7, 0.3) at best: job 1 gets 3
    problem = snapshot(1, [10.0, 10.0], [700.0, 100.0], [100.0, 100.0])
    allocation = DeadlineFloors().allocate(problem)
    assert allocation.objective == pytest.approx(0.3, rel=1e-6)
    assert allocation.effective_throughput() == pytest.approx([7.0, 3.0], rel=1e-6)


def test_floors_that_do_not_fit_are_scaled_and_the_allocation_says_so():
    # two jobs each need a whole GPU (10 steps/s) of the one there is: alpha* = 1/2
    problem = snapshot(1, [10.0, 10.0, 10.0], [1000.0, 1000.0, 1e6], [100.0, 100.0, np.inf])
    policy = DeadlineFloors()
    allocation = policy.allocate(problem)
    assert policy.alpha == pytest.approx(0.5, rel=1e-6)
    assert "floors scaled to alpha=0.50: the deadlines do not all fit" in allocation.notes
    assert allocation.effective_throughput()[:2] == pytest.approx([5.0, 5.0], rel=1e-5)


def test_a_deadline_out_of_reach_gets_no_floor():
    # job 0 would need 20 steps/s, twice its best rate: it is treated as a job without a deadline
    problem = snapshot(1, [10.0, 10.0], [2000.0, 1e6], [100.0, np.inf])
    policy = DeadlineFloors()
    assert policy.floors(problem).tolist() == [0.0, 0.0]
    assert policy.allocate(problem).objective == pytest.approx(gavel_level(problem), rel=1e-6)
