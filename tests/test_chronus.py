"""Chronus' lease MIP, its published greedies and helpers."""

from dataclasses import replace
from functools import lru_cache
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulations import chronus
from formulations.chronus import (
    LeaseProblem,
    adaptive_sigma,
    build,
    estimated_duration,
    gpu_bin,
    greedy_admission,
    greedy_schedule,
    last_lease,
    leases_needed,
    plan_violations,
    preemption_overhead,
    solve_leases,
)
from formulations.problem import ProblemError
from optim import Capability, Result, Status, available_backends

OTHER_MILP = [b.spec for b in available_backends() if Capability.MILP in b.capabilities() and b.spec != "highs"]


def lease_problem(capacity, rows, *, num_jobs=None, must=None, sigma=1.0, c_max=None):
    """rows: (job, gpus, leases needed, last lease, value) tuples."""
    job, g, need, last, value = (np.array(c) for c in zip(*rows)) if rows else ([],) * 5
    J = num_jobs if num_jobs is not None else int(max(job, default=-1)) + 1
    return LeaseProblem(capacity=capacity, row_job=job, gpus=g, leases_needed=need, last_lease=last, value=value,
                        num_jobs=J, sigma=sigma, c_max=c_max, must_accept=must)


def brute_force(p: LeaseProblem) -> float:
    """Exact optimum by enumeration over jobs (memoized on free capacity); -inf if the
    must-accept jobs cannot all be placed."""
    rows_of = [np.flatnonzero(p.row_job == j).tolist() for j in range(p.num_jobs)]

    @lru_cache(maxsize=None)
    def best(j: int, free: tuple) -> float:
        if j == p.num_jobs:
            return 0.0
        out = -np.inf if p.must_accept[j] else best(j + 1, free)
        for r in rows_of[j]:
            g, need, last = int(p.gpus[r]), int(p.leases_needed[r]), int(p.last_lease[r])
            for leases in combinations(range(last), need):
                if any(free[lease] < g for lease in leases):
                    continue
                left = list(free)
                for lease in leases:
                    left[lease] -= g
                now = p.sigma * g / p.c_max if 0 in leases else 0.0
                out = max(out, p.value[r] + now + best(j + 1, tuple(left)))
        return out

    return best(0, tuple(float(c) for c in p.capacity))


@st.composite
def lease_problems(draw, max_jobs: int = 4, max_leases: int = 5):
    L = draw(st.integers(1, max_leases))
    capacity = draw(st.lists(st.sampled_from([0, 1, 2, 4, 4, 8]), min_size=L, max_size=L))
    J = draw(st.integers(1, max_jobs))
    rows = []
    for j in range(J):
        g = draw(st.sampled_from([1, 2, 4]))
        need = draw(st.integers(1, L))
        k = draw(st.integers(1, 3))
        lasts = sorted(draw(st.lists(st.integers(0, L), min_size=k, max_size=k)))
        values = chronus.SOFT_VALUES[:k] if k > 1 else (chronus.STRICT_VALUE,)
        rows += [(j, g, need, m, v) for m, v in zip(lasts, values)]
    must = draw(st.lists(st.booleans(), min_size=J, max_size=J))
    sigma = draw(st.sampled_from([-1.0, 1.0]))
    return lease_problem(capacity, rows, must=must, sigma=sigma)


# ---- hand-checked instances ------------------------------------------------------------------


def test_one_job_that_just_fits():
    p = lease_problem([4, 4, 4], [(0, 4, 3, 3, 10.0)], must=[True])
    plan = solve_leases(p)
    assert plan.fell_back is None and plan.status is Status.OPTIMAL
    assert plan.chosen.tolist() == [0]
    assert plan.schedule.tolist() == [[True, True, True]]
    assert plan.first_lease_gpus.tolist() == [4]
    assert plan.objective == pytest.approx(10.0 + 4 / 4)


@pytest.mark.parametrize("capacity, last", [([4, 4, 4], 2), ([4, 2, 4], 3)])
def test_one_job_that_cannot_fit(capacity, last):
    p = lease_problem(capacity, [(0, 4, 3, last, 10.0)])
    plan = solve_leases(p)
    assert plan.fell_back is None
    assert plan.chosen.tolist() == [-1] and not plan.schedule.any()
    assert plan.objective == pytest.approx(0.0)
    forced = solve_leases(lease_problem(capacity, [(0, 4, 3, last, 10.0)], must=[True]))
    assert forced.fell_back is not None and "infeasible" in forced.fell_back
    assert "must-accept jobs [0]" in forced.fell_back
    assert forced.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    assert forced.chosen.tolist() == [-1]


def test_values_decide_between_jobs_competing_for_one_lease():
    big, small, small2 = (0, 4, 1, 1, 10.0), (1, 2, 1, 1, 8.0), (2, 2, 1, 1, 8.0)
    plan = solve_leases(lease_problem([4], [big, small, small2]))
    assert plan.chosen.tolist() == [-1, 1, 2]  # 8 + 8 beats 10
    assert plan.objective == pytest.approx(16.0 + 4 / 4)
    plan = solve_leases(lease_problem([4], [big, small]))
    assert plan.chosen.tolist() == [0, -1]
    assert plan.objective == pytest.approx(10.0 + 1.0)
    plan = solve_leases(lease_problem([4], [(0, 4, 1, 1, 5.0), small]))
    assert plan.chosen.tolist() == [-1, 1]


def test_soft_job_takes_its_later_option_when_the_earlier_cannot_fit():
    strict = (0, 2, 2, 2, 10.0)
    soft = [(1, 2, 1, 2, 10.0), (1, 2, 1, 3, 8.0)]
    p = lease_problem([2, 2, 2], [strict, *soft], must=[True, True])
    plan = solve_leases(p)
    assert plan.chosen.tolist() == [0, 2]
    assert plan.schedule.tolist() == [[True, True, False], [False, False, False], [False, False, True]]
    assert plan.objective == pytest.approx(10 + 8 + 2 / 2)
    # with room, the soft job keeps its first (more valuable) option
    plan = solve_leases(lease_problem([4, 4, 4], [strict, *soft], must=[True, True]))
    assert plan.chosen.tolist() == [0, 1]


def test_sigma_packs_or_defers_lease_zero():
    rows = [(0, 2, 1, 2, 10.0), (1, 1, 2, 3, 10.0)]
    pack = solve_leases(lease_problem([3, 3, 3], rows, sigma=1.0))
    defer = solve_leases(lease_problem([3, 3, 3], rows, sigma=-1.0))
    assert pack.schedule[:, 0].tolist() == [True, True]
    assert pack.first_lease_gpus.tolist() == [2, 1]
    assert not defer.schedule[:, 0].any()
    assert defer.first_lease_gpus.tolist() == [0, 0]
    assert defer.schedule.tolist() == [[False, True, False], [False, True, True]]
    assert pack.objective == pytest.approx(20 + 3 / 3)
    assert defer.objective == pytest.approx(20.0)
    assert solve_leases(lease_problem([3, 3, 3], rows, sigma=0.0)).objective == pytest.approx(20.0)


def test_c_max_scales_the_lease_zero_term():
    rows = [(0, 2, 1, 2, 10.0)]
    assert solve_leases(lease_problem([2, 8], rows)).objective == pytest.approx(10 + 2 / 8)
    assert solve_leases(lease_problem([2, 8], rows, c_max=4.0)).objective == pytest.approx(10 + 2 / 4)


def test_no_forced_zero_variables_are_created():
    rows = [(0, 1, 1, 0, 10.0), (1, 2, 2, 3, 10.0), (1, 2, 2, 5, 8.0), (2, 4, 1, 1, 10.0)]
    p = lease_problem([8] * 5, rows)
    canon = build(p).canonical()
    assert canon.num_integers == 0 + 3 + 5 + 1 + 4
    assert canon.blocks["X"].size == 9
    assert canon.num_rows == 4 + 5 + 3  # lease counts, capacities, one option per job
    assert canon.col_hi[canon.blocks["S"].columns].tolist() == [0.0, 1.0, 1.0, 1.0]
    plan = solve_leases(p)
    assert plan.num_binaries == 13 and plan.chosen.tolist() == [-1, 1, 3]


def test_empty_problem():
    plan = solve_leases(lease_problem([4, 4], [], num_jobs=2))
    assert plan.chosen.tolist() == [-1, -1] and plan.schedule.shape == (0, 2) and plan.objective == 0.0


def test_fallback_is_reported_on_time_limit_without_incumbent(monkeypatch):
    def no_incumbent(model, backend, options, check=True):
        assert options.time_limit == 0.5 and options.mip_gap == 0.01
        return Result(Status.TIME_LIMIT, backend, message="time limit reached")

    monkeypatch.setattr(chronus, "solve", no_incumbent)
    p = lease_problem([2, 2], [(0, 2, 1, 2, 10.0), (1, 2, 2, 2, 8.0)], must=[True, False])
    plan = solve_leases(p, time_limit=0.5, mip_gap=0.01)
    assert plan.status is Status.TIME_LIMIT
    assert plan.fell_back is not None and "time_limit" in plan.fell_back and "greedy" in plan.fell_back
    assert plan.chosen.tolist() == [0, -1] and plan.schedule[0].tolist() == [False, True]  # latest lease first
    assert plan.objective == pytest.approx(10.0)
    assert plan_violations(p, plan.chosen, plan.schedule) == []


def test_validation():
    good = dict(capacity=[4, 4], row_job=[0], gpus=[2], leases_needed=[1], last_lease=[2], value=[10.0], num_jobs=1)
    LeaseProblem(**good)
    for change, match in [
        (dict(gpus=[2, 2]), "gpus has 2 entries"),
        (dict(last_lease=[3]), "last_lease must lie"),
        (dict(row_job=[1]), "row_job must lie"),
        (dict(leases_needed=[0]), "leases_needed >= 1"),
        (dict(gpus=[1.5]), "integers"),
        (dict(sigma=0.5), "sigma"),
        (dict(capacity=[4, -1]), "capacity"),
        (dict(num_jobs=2, must_accept=[False, True]), r"must-accept jobs \[1\] have no option rows"),
        (dict(must_accept=[True, True]), "must_accept has 2 entries"),
        (dict(capacity=[]), "at least one lease"),
    ]:
        with pytest.raises(ProblemError, match=match):
            LeaseProblem(**{**good, **change})


# ---- the published greedies --------------------------------------------------------------------


def test_greedy_admission_packs_latest_first():
    accepted = (0, 2, 1, 3, 10.0)
    p = lease_problem([2, 2, 2], [accepted, (1, 2, 2, 2, 10.0)], must=[True, False])
    admit = greedy_admission(p, 1)
    assert admit.feasible and admit.chosen.tolist() == [0, 1]
    assert admit.schedule.tolist() == [[False, False, True], [True, True, False]]
    assert admit.free.tolist() == [0, 0, 0]
    # one GPU more per lease for the new job and it cannot fit
    p = lease_problem([2, 2, 2], [accepted, (1, 2, 3, 3, 10.0)], must=[True, False])
    assert not greedy_admission(p, 1).feasible


def test_greedy_admission_packs_the_largest_job_first():
    # largest job first: it takes lease 1, the 2-GPU job (slack 0) then gets lease 0
    p = lease_problem([4, 4], [(0, 2, 1, 1, 10.0), (1, 4, 1, 2, 10.0)], must=[True, False])
    admit = greedy_admission(p, 1)
    assert admit.feasible and admit.schedule.tolist() == [[True, False], [False, True]]
    # smallest first would put the 1-GPU job into lease 1, the only lease with room for 4
    p = lease_problem([2, 4, 2], [(0, 1, 1, 2, 10.0), (1, 4, 1, 3, 10.0)], must=[True, False])
    admit = greedy_admission(p, 1)
    assert admit.feasible and admit.schedule.tolist() == [[True, False, False], [False, True, False]]
    # equal GPUs: least slack first, so the tight job is not crowded out by the loose one
    p = lease_problem([2, 2], [(0, 2, 1, 2, 10.0), (1, 2, 2, 2, 10.0)], must=[True, False])
    assert not greedy_admission(p, 1).feasible  # truly infeasible: 3 leases of work in 2
    p = lease_problem([2, 2, 2], [(0, 2, 1, 3, 10.0), (1, 2, 2, 2, 10.0)], must=[True, False])
    assert greedy_admission(p, 1).feasible
    # equal GPUs: least slack M - L first (loosest first would starve the new, tight job)
    rows = [(0, 2, 3, 4, 10.0), (1, 2, 2, 2, 10.0), (2, 2, 1, 3, 10.0)]
    admit = greedy_admission(lease_problem([4, 2, 4, 2], rows, must=[True, False, True]), 1)
    assert admit.feasible
    assert admit.schedule.astype(int).tolist() == [[1, 0, 1, 1], [1, 1, 0, 0], [0, 0, 1, 0]]


def test_greedy_admission_tries_only_the_tightest_option():
    strict = (0, 2, 2, 2, 10.0)
    soft = [(1, 2, 1, 2, 10.0), (1, 2, 1, 3, 8.0)]
    p = lease_problem([2, 2, 2], [strict, *soft], must=[True, False])
    assert not greedy_admission(p, 1).feasible  # published: the 10-valued option must fit
    both = lease_problem([2, 2, 2], [strict, *soft], must=[True, True])
    assert solve_leases(both).chosen.tolist() == [0, 2]  # while the MIP keeps the 8-valued one


def test_greedy_admission_reserved_and_errors():
    p = lease_problem([4, 4], [(0, 4, 2, 2, 10.0)])
    assert greedy_admission(p, 0).feasible
    assert not greedy_admission(p, 0, reserved=[0, 2]).feasible
    with pytest.raises(ProblemError, match="no option rows"):
        greedy_admission(lease_problem([4], [(0, 1, 1, 1, 10.0)], num_jobs=2), 1)
    with pytest.raises(ProblemError, match="reserved"):
        greedy_admission(p, 0, reserved=[1, 1, 1])


def test_greedy_schedule_goes_by_value_and_falls_back_to_next_option():
    rows = [(0, 2, 2, 2, 8.0), (1, 2, 1, 2, 10.0), (1, 2, 1, 3, 8.0)]
    packing = greedy_schedule(lease_problem([2, 2, 2], rows))
    # job 1's 10-row goes first (latest lease: 1); job 0 then cannot get leases 0 and 1
    assert packing.chosen.tolist() == [-1, 1]
    assert packing.schedule[1].tolist() == [False, True, False]
    # job 0 must be accepted: it goes first and job 1 takes its 8-valued option
    packing = greedy_schedule(lease_problem([2, 2, 2], rows, must=[True, False]))
    assert packing.feasible and packing.chosen.tolist() == [0, 2]
    assert packing.schedule.tolist() == [[True, True, False], [False, False, False], [False, False, True]]


# ---- published helpers ---------------------------------------------------------------------------


def test_published_helpers():
    assert preemption_overhead(2, 4) == pytest.approx(2 * 0.5 * 3)
    assert preemption_overhead(np.array([0, 1, 3]), np.array([1, 8, 2])).tolist() == pytest.approx([0, 2.0, 3.0])
    assert gpu_bin([1, 2, 3, 4, 5, 7, 8, 12, 16]).tolist() == [1, 2, 4, 4, 8, 8, 8, 12, 16]
    assert estimated_duration(1000, 1, 240).tolist() == int(1000 * (1 + 0.5 / 240) * 1.1)
    assert estimated_duration([1000], [4], 240).tolist() == [int(1000 * (1 + 3 * 0.5 / 240) * 1.1)]
    assert leases_needed([1, 240, 241], 240).tolist() == [1, 1, 2]
    assert last_lease([959, 960, 1199], 240, 2).tolist() == [1, 2, 2]
    assert adaptive_sigma(0) == 1.0 and adaptive_sigma(3) == -1.0


# ---- properties ------------------------------------------------------------------------------------


@given(lease_problems())
def test_milp_plans_are_valid_and_optimal(p):
    plan = solve_leases(p, time_limit=30.0)
    best = brute_force(p)
    if best == -np.inf:  # must-accept jobs cannot all be placed: the greedy answers, and says so
        assert plan.fell_back is not None
        assert all(v.startswith("must-accept") for v in plan_violations(p, plan.chosen, plan.schedule))
        return
    assert plan.fell_back is None and plan.status is Status.OPTIMAL
    assert plan_violations(p, plan.chosen, plan.schedule) == []
    assert (plan.chosen[p.must_accept] >= 0).all()
    load = (p.gpus[:, None] * plan.schedule).sum(axis=0)
    assert (load <= p.capacity).all()
    kept = plan.chosen[plan.chosen >= 0]
    assert (plan.schedule[kept].sum(axis=1) == p.leases_needed[kept]).all()
    assert not plan.schedule[kept][np.arange(p.num_leases)[None, :] >= p.last_lease[kept][:, None]].any()
    assert plan.objective == pytest.approx(best, abs=1e-6)
    assert p.objective_of(plan.chosen, plan.schedule) == pytest.approx(plan.objective, abs=1e-6)


@given(lease_problems())
def test_greedy_admission_never_accepts_an_infeasible_set(p):
    """Jobs arrive one by one (the published flow); every set the greedy admits is one
    the MILP can place in full."""
    members = np.zeros(p.num_jobs, dtype=bool)
    for new in np.unique(p.row_job).tolist():
        admit = greedy_admission(replace(p, must_accept=members), new)
        if not admit.feasible:
            continue
        members = members.copy()
        members[new] = True
        assert (admit.chosen[members] >= 0).all() and (admit.chosen[~members] < 0).all()
        accepted = replace(p, must_accept=members)
        assert plan_violations(accepted, admit.chosen, admit.schedule) == []
        assert brute_force(accepted) > -np.inf
        plan = solve_leases(accepted, warm_start=False)
        assert plan.fell_back is None and (plan.chosen[members] >= 0).all()


@given(lease_problems())
def test_greedy_schedule_is_always_a_valid_partial_plan(p):
    packing = greedy_schedule(p)
    problems = plan_violations(p, packing.chosen, packing.schedule)
    assert [v for v in problems if not v.startswith("must-accept")] == []
    assert packing.feasible == (not any(v.startswith("must-accept") for v in problems))
    assert packing.free.tolist() == pytest.approx((p.capacity - (p.gpus[:, None] * packing.schedule).sum(0)).tolist())


@pytest.mark.parametrize("backend", OTHER_MILP or [pytest.param("none", marks=pytest.mark.skip("no other MILP"))])
@settings(max_examples=15)
@given(p=lease_problems())
def test_backends_agree_on_the_objective(backend, p):
    ref = solve_leases(p, "highs", time_limit=30.0)
    other = solve_leases(p, backend, time_limit=30.0)
    assert (ref.fell_back is None) == (other.fell_back is None), (ref.fell_back, other.fell_back)
    assert other.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-6)
    if other.fell_back is None:
        assert plan_violations(p, other.chosen, other.schedule) == []


def test_a_200_row_30_lease_instance():
    rng = np.random.default_rng(0)
    J, L = 100, 30
    g = rng.choice([1, 2, 4, 8], size=J)
    need = rng.integers(1, 12, size=J)
    first = np.minimum(need + rng.integers(0, 10, size=J), L)
    rows = [(j, g[j], need[j], first[j], 10.0) for j in range(J)]
    rows += [(j, g[j], need[j], min(first[j] + 8, L), 5.0) for j in range(J)]
    p = lease_problem(np.full(L, 64), rows, sigma=-1.0)
    plan = solve_leases(p, time_limit=chronus.MIP_SECONDS, mip_gap=1e-2)
    assert plan.num_binaries == int(p.last_lease.sum()) + 200
    assert plan.num_rows == 200 + L + J
    assert plan.fell_back is None and plan.status in (Status.OPTIMAL, Status.TIME_LIMIT, Status.FEASIBLE)
    assert plan_violations(p, plan.chosen, plan.schedule) == []
    greedy = greedy_schedule(p)
    assert plan.objective >= p.objective_of(greedy.chosen, greedy.schedule) - 1e-6
