"""The Pollux allocation MILP against brute force on tiny instances, and the ``pollux`` policy's plans."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulations.pollux import PolluxProblem, bound_and_pack, build, objective, p_mean, solve_allocation, utility
from optim import SolveOptions, solve


def _rows(r: int, spread: bool, cap: np.ndarray):
    """Every GPUs-per-node row of r GPUs on one node (or, spread, on two and more)."""
    for row in itertools.product(*(range(int(c) + 1) for c in cap)):
        used = sum(1 for g in row if g)
        if sum(row) == r and (used >= 2 if spread else used == 1):
            yield np.array(row)


def _brute_force(p: PolluxProblem) -> float:
    best = -np.inf
    per_job = [[-1, *np.flatnonzero(p.job == j).tolist()] for j in range(p.num_jobs)]
    for choice in itertools.product(*per_job):
        rows = []
        for j, o in enumerate(choice):
            if o < 0:
                rows.append([np.zeros(p.num_nodes, dtype=np.int64)])
            elif p.keep[o]:
                rows.append([p.current[j]])
            else:
                rows.append(list(_rows(int(p.replicas[o]), bool(p.spread[o]), p.capacity)))
        spread = np.array([o >= 0 and bool(p.spread[o]) for o in choice])
        for x in itertools.product(*rows):
            x = np.array(x)
            if (x.sum(axis=0) <= p.capacity).all() and ((x[spread] > 0).sum(axis=0) <= 1).all():
                best = max(best, objective(p, np.array(choice)))
                break
    return best


@st.composite
def problems(draw):
    K = draw(st.integers(1, 3))
    capacity = np.array(draw(st.lists(st.integers(1, 3), min_size=K, max_size=K)))
    J = draw(st.integers(1, 3))
    current = np.zeros((J, K), dtype=np.int64)
    free = capacity.copy()
    job, replicas, spread, speedup, keep = [], [], [], [], []
    for j in range(J):
        for r in range(1, draw(st.integers(1, 4)) + 1):
            for s in ((False, True) if r >= 2 else (False,)):
                job.append(j), replicas.append(r), spread.append(s), keep.append(False)
                speedup.append(draw(st.floats(0.05, 2.0)))
        if draw(st.booleans()) and free.max() > 0:
            wide = (free > 0).sum() >= 2 and draw(st.booleans())
            for n in np.argsort(-free, kind="stable")[:2 if wide else 1].tolist():
                current[j, n] = draw(st.integers(1, int(free[n])))
                free[n] -= current[j, n]
            job.append(j), replicas.append(int(current[j].sum())), spread.append(wide), keep.append(True)
            speedup.append(draw(st.floats(0.05, 2.0)))
    return PolluxProblem(capacity, np.array(job), np.array(replicas), np.array(spread), np.array(speedup),
                         np.array(keep), current)


@settings(max_examples=30)
@given(problems())
def test_the_program_finds_the_best_allocation_brute_force_finds(problem):
    plan = solve_allocation(problem)
    best = _brute_force(problem)
    assert plan.objective == pytest.approx(best, rel=1e-9, abs=1e-9)
    milp = solve(build(problem), "highs", SolveOptions(mip_gap=1e-9))  # the MILP alone, without the bound
    assert milp.objective + problem.num_jobs * utility(0.0) == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert plan.by_bound == (bound_and_pack(problem) is not None) and (plan.num_integers == 0) == plan.by_bound
    gpus = plan.gpus
    assert (gpus.sum(axis=0) <= problem.capacity).all()
    chosen = plan.option >= 0
    assert (gpus.sum(axis=1)[chosen] == problem.replicas[plan.option[chosen]]).all()
    assert (gpus.sum(axis=1)[~chosen] == 0).all()
    spread = np.zeros(problem.num_jobs, dtype=bool)
    spread[chosen] = problem.spread[plan.option[chosen]]
    assert ((gpus[spread] > 0).sum(axis=0) <= 1).all()
    assert ((gpus[chosen & ~spread] > 0).sum(axis=1) == 1).all()
    kept = chosen & problem.keep[np.maximum(plan.option, 0)]
    assert (gpus[kept] == problem.current[kept]).all()


def test_the_p_mean_is_harmonic_by_default_and_the_objective_is_monotone_in_it():
    s = np.array([0.5, 1.0, 2.0])
    assert p_mean(s) == pytest.approx(3 / (1 / 0.501 + 1 / 1.001 + 1 / 2.001))
    assert p_mean(s, p=0) == pytest.approx(np.exp(np.log(s + 1e-3).mean()))
    assert utility(1.0) > utility(0.5) > utility(0.0)


@st.composite
def decisions(draw):
    from allocators.pollux.pollux import Decision

    K = draw(st.integers(1, 3))
    J = draw(st.integers(1, 4))
    G = 4 * K
    speedup = np.zeros((J, 2, G + 1))
    for j in range(J):
        rates = np.cumsum(draw(st.lists(st.floats(0.0, 0.5), min_size=G, max_size=G)))
        speedup[j, 0, 1:] = rates
        speedup[j, 1, 1:] = rates * draw(st.floats(0.6, 1.0))
    current = np.zeros((J, K), dtype=np.int64)
    free = np.full(K, 4)
    for j in range(J):
        if draw(st.booleans()):
            n = draw(st.integers(0, K - 1))
            if free[n]:
                current[j, n] = draw(st.integers(1, int(free[n])))
                free[n] -= current[j, n]
    most = np.array(draw(st.lists(st.integers(1, G), min_size=J, max_size=J)))
    most = np.maximum(most, current.sum(axis=1))
    penalty = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=J, max_size=J)))
    return Decision(np.arange(J), speedup, penalty, most, current, np.full(K, 4), K / G, -1.0)


@settings(max_examples=25)
@given(decisions(), st.integers(0, 3))
def test_the_genetic_algorithm_never_beats_the_exact_program_and_its_plans_are_feasible(terms, seed):
    from allocators.pollux.pollux_ga import PolluxGA

    ga = PolluxGA(seed=seed, population=20, generations=10)
    state, value = ga.evolve(terms)
    problem = terms.problem()
    exact = solve_allocation(problem)
    chosen = exact.option >= 0
    program = p_mean(np.where(chosen, problem.speedup[np.maximum(exact.option, 0)], 0.0))
    assert program >= value - 1e-9
    assert (state.sum(axis=0) <= 4).all() and (state.sum(axis=1) <= terms.most).all()
    spread = (state > 0).sum(axis=1) > 1
    assert ((state[spread] > 0).sum(axis=0) <= 1).all()
    again, _ = PolluxGA(seed=seed, population=20, generations=10).evolve(terms)
    assert (again == state).all()


@settings(max_examples=15)
@given(problems())
def test_a_decision_scaled_k_times_is_worth_at_least_k_copies_of_its_plan(problem):
    from benchmarks.pollux_scale import scaled

    double = scaled(problem, 2)
    assert double.num_jobs == 2 * problem.num_jobs and double.num_nodes == 2 * problem.num_nodes
    J, K = problem.num_jobs, problem.num_nodes
    assert (double.current[J:, K:] == problem.current).all() and not double.current[:J, K:].any()
    assert solve_allocation(double).objective >= 2 * solve_allocation(problem).objective - 1e-9
