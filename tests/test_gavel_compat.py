"""The published Gavel policies' rules that ``--gavel-compat`` replays (fifo's stale type,
gandiva's pairing and introspection, the makespan bisection's published layout)."""

import numpy as np
import pytest

from allocators import make_policy
from allocators.gavel.finish_time_fairness import FinishTimeFairness
from formulations import (
    AllocationProblem,
    JobPairs,
    allocation_violations,
    finish_time_fairness,
    max_min_fairness,
    max_sum_throughput,
)
from formulations.min_total_duration import build_deadline_published
from formulations.published import published_allocation
from formulations.rates import runnable
from optim import solve


def problem(T, caps, names, ids=None, pairs=None, remaining=None) -> AllocationProblem:
    T = np.asarray(T, dtype=float)
    m = T.shape[0]
    return AllocationProblem(
        worker_types=tuple(names), capacities=np.asarray(caps, dtype=float),
        job_ids=np.arange(m) if ids is None else np.asarray(ids), job_types=tuple(f"m{i}" for i in range(m)),
        scale_factors=np.ones(m), weights=np.ones(m), throughputs=T, remaining_steps=remaining,
        time_since_arrival=np.zeros(m), pairs=pairs)


def test_fifo_compat_puts_an_arrival_on_the_last_type_that_had_free_gpus():
    """Three jobs over-commit v100 (1 GPU); the published policy then lists only the types
    with free GPUs (k80, p100) and puts the arrival on the last of them, p100, whatever its
    random draw; the first call's jobs stay where they are."""
    names, caps = ("v100", "p100", "k80"), (1, 4, 4)
    policy = make_policy("fifo", gavel_compat=True)
    first = policy.allocate(problem(np.ones((3, 3)), caps, names))
    assert first.x[0, 0] == 1.0 and (first.x.sum(axis=1) == 1.0).all()
    second = policy.allocate(problem(np.ones((4, 3)), caps, names))
    np.testing.assert_array_equal(second.x[:3], first.x)
    assert second.x[3].tolist() == [0.0, 1.0, 0.0]
    default = make_policy("fifo").allocate(problem(np.ones((3, 3)), caps, names))
    assert default.x[:, 0].sum() <= 1.0


def _pair_problem(m: int) -> AllocationProblem:
    """m jobs on one GPU of each of two types; every pair shares a type at 0.3 of each
    member's rate: 0.6 normalized on each type, 1.2 summed over both."""
    first, second = np.triu_indices(m, 1)
    rates = np.full((first.size, 2, 2), 0.3)
    return problem(np.ones((m, 2)), (1, 1), ("k80", "v100"), pairs=JobPairs(first, second, rates))


def test_gandiva_compat_keeps_pairs_by_their_gain_summed_over_types():
    """Oversubscribed: the published policy pairs jobs without a throughput check and keeps a
    pair while its normalized throughput summed over the types (1.2) is >= 1; ours never
    pairs jobs that lose on every type (0.6 each)."""
    compat = make_policy("gandiva", gavel_compat=True)
    first = compat.allocate(_pair_problem(3))
    assert first.pair_x.sum() > 0
    again = compat.allocate(_pair_problem(3))
    np.testing.assert_array_equal(np.flatnonzero(again.pair_x.sum(axis=1)), np.flatnonzero(first.pair_x.sum(axis=1)))
    assert not allocation_violations(again)
    default = make_policy("gandiva").allocate(_pair_problem(3))
    assert default.pair_x is None or default.pair_x.sum() == 0


def test_gandiva_compat_shares_every_type_among_the_combinations():
    """Each of the C combinations gets W_j / C of every type, the row scaled to sum <= 1."""
    alloc = make_policy("gandiva", gavel_compat=True).allocate(_pair_problem(3))
    C = 2  # one pair, one job alone
    alone = np.flatnonzero(alloc.x.sum(axis=1))
    np.testing.assert_allclose(alloc.x[alone], 0.5)
    np.testing.assert_allclose(alloc.pair_x[alloc.pair_x.sum(axis=1) > 0], 1.0 / C)


def test_walk_order_is_fixed_for_gavel_packing_policies():
    assert make_policy("gandiva").fixed_type_order
    assert make_policy("max_min_fairness_packed").fixed_type_order
    assert not make_policy("fifo").fixed_type_order
    assert not make_policy("max_min_fairness").fixed_type_order


@pytest.mark.parametrize("variant", ["perf", "agnostic"])
def test_published_layout_gives_the_point_of_gavels_own_program(variant):
    """ECOS stops inside the feasible set of a constant-objective program; on the published
    layout it stops where it does on Gavel's own cvxpy program (jobs by id, types by name)."""
    import cvxpy as cp

    rng = np.random.default_rng(3)
    T = rng.uniform(0.5, 3.0, (6, 3))
    p = problem(T, (2, 2, 3), ("v100", "p100", "k80"), ids=np.array([5, 1, 4, 0, 3, 2]),
                remaining=rng.uniform(1e3, 1e4, 6))
    deadline = 20000.0
    result = solve(build_deadline_published(p, variant, deadline), "ecos")
    ours = published_allocation(p, result)

    jobs, types = np.argsort(p.job_ids), np.argsort(p.worker_types)
    rates = T[np.ix_(jobs, types)]
    if variant == "agnostic":
        rates = np.repeat(T[jobs][:, [0]], 3, axis=1)
    x = cp.Variable(rates.shape)
    sf = np.ones(rates.shape)
    constraints = [x >= 0, cp.sum(cp.multiply(sf, x), axis=0) <= p.capacities[types],
                   cp.sum(x, axis=1) <= 1, cp.sum(cp.multiply(rates, x), axis=1) >= p.remaining_steps[jobs] / deadline]
    cp.Problem(cp.Maximize(1), constraints).solve(solver="ECOS")
    theirs = np.zeros(T.shape)
    theirs[np.ix_(jobs, types)] = x.value.clip(0, 1)
    np.testing.assert_allclose(ours, theirs, atol=1e-9)
    assert 0.05 < ours.max() and not np.allclose(ours, ours.round())


def _gavel_program(kind: str, T: np.ndarray, p: AllocationProblem, deadline: float = 0.0):
    """Gavel's own cvxpy program (jobs by id, types by name), written from its math: (problem, x)."""
    import cvxpy as cp

    jobs, types = np.argsort(p.job_ids), np.argsort(p.worker_types)
    m, n = jobs.size, types.size
    rates = T[np.ix_(jobs, types)] if kind != "agnostic" else np.ones((m, n))
    W = p.capacities[types]
    sfa = np.repeat(p.scale_factors[jobs].astype(float)[:, None], n, axis=1)
    x = cp.Variable((m, n))
    base = [x >= 0, cp.sum(cp.multiply(sfa, x), axis=0) <= W, cp.sum(x, axis=1) <= 1]
    if kind == "throughput":
        return cp.Problem(cp.Maximize(cp.sum(cp.sum(cp.multiply(rates / np.ones((1, n)), x), axis=1))), base), x
    if kind == "deadline":
        finish = [cp.sum(cp.multiply(rates, x), axis=1) >= p.remaining_steps[jobs] / deadline]
        return cp.Problem(cp.Maximize(1), base + finish), x
    if kind == "ftf":  # a first call: no cumulative isolated time
        isolated = np.array([[w / m for w in W.tolist()] for _ in range(m)]) / sfa
        isolated = isolated / np.maximum(np.sum(isolated, axis=1), np.ones(m))[:, None]
        isolated = np.sum(np.multiply(rates, isolated), axis=1).reshape((m, 1))
        R, since = p.remaining_steps[jobs], p.time_since_arrival[jobs]
        ratios = [(since[i] + R[i] * cp.inv_pos(cp.sum(cp.multiply(rates[i], x[i])))) / (0 + R[i] / isolated[i])
                  for i in range(m)]
        return cp.Problem(cp.Minimize(cp.maximum(*ratios)), base), x
    shares = np.array([[w / m for w in W.tolist()] for _ in range(m)])
    shares = shares / np.sum(shares, axis=1).max()
    proportional = np.sum(np.multiply(rates, shares), axis=1).reshape((m, 1))
    weights = np.multiply(np.array([1.0 / w for w in p.weights[jobs]]).reshape((m, 1)), 1.0 / proportional)
    coef = np.multiply(rates * weights.reshape((m, 1)), sfa)
    return cp.Problem(cp.Maximize(cp.min(cp.sum(cp.multiply(coef, x), axis=1))), base), x


def _ours(kind: str, p: AllocationProblem, deadline: float = 0.0):
    if kind == "throughput":
        return max_sum_throughput.build_published(p)
    if kind == "ftf":
        return finish_time_fairness.build_published(p, FinishTimeFairness._published_isolated(p), np.zeros(p.num_jobs))
    if kind == "deadline":
        return build_deadline_published(p, "perf", deadline)
    return max_min_fairness.build_published(p, kind)


def _tied_problem(seed: int) -> AllocationProblem:
    """Jobs of three kinds (ties, so wide optimal faces), one of them unable to run on k80 and one
    on p100, scale factors 1 and 2, ids out of order."""
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 3, 9)
    T = rng.uniform(0.5, 3.0, (3, 3))[kinds]
    T[kinds == 0, 2] = 0.0
    T[kinds == 1, 1] = 0.0
    p = problem(T, (4, 3, 5), ("v100", "p100", "k80"), ids=np.array([5, 1, 4, 0, 3, 2, 6, 8, 7]),
                remaining=rng.uniform(1e3, 1e4, 9))
    return AllocationProblem(**{**p.__dict__, "scale_factors": np.where(kinds == 2, 2, 1),
                                "time_since_arrival": rng.uniform(0.0, 1e4, 9)})


@pytest.mark.parametrize("kind", ["perf", "agnostic", "throughput", "deadline", "ftf"])
def test_the_published_layout_is_gavels_ecos_data_to_the_last_bit(kind):
    """What ``ecos`` gets for a published-layout program is what Gavel's cvxpy code hands ECOS,
    array for array (so both return the same point, bit for bit)."""
    import cvxpy as cp

    from optim.backends.conic import conic_form

    p = _tied_problem(1)
    gavel, _ = _gavel_program(kind, p.throughputs, p, deadline=20000.0)
    data, _, _ = gavel.get_problem_data(cp.ECOS)
    canon = _ours(kind, p, deadline=20000.0).canonical()
    form = conic_form(canon)
    G = data["G"].tocsc()
    assert form.zero == 0 and (data["A"] is None or data["A"].shape[0] == 0)
    assert form.soc == (p.num_jobs if kind == "ftf" else 0) and list(data["dims"].soc) == [3] * form.soc
    np.testing.assert_array_equal(form.A.indptr, G.indptr)
    np.testing.assert_array_equal(form.A.indices, G.indices)
    np.testing.assert_array_equal(form.A.data, G.data)
    np.testing.assert_array_equal(form.b, data["h"])
    np.testing.assert_array_equal((-1.0 if canon.sense == "max" else 1.0) * canon.c, data["c"])


@pytest.mark.parametrize("policy", ["max_min_fairness_perf", "max_min_fairness", "max_sum_throughput_perf",
                                    "finish_time_fairness_perf"])
def test_compat_allocations_are_gavels_own_points(policy):
    """Under compat these policies solve the published program with ECOS: the allocation is the one
    Gavel's own cvxpy + ECOS program returns, bit for bit, clipped to [0, 1] and without the shares
    where a job cannot run. Clarabel on our program stops elsewhere: on max-min's wide optimal
    faces far away, on the throughput program in the shares of order 1e-10."""
    kind = {"max_min_fairness_perf": "perf", "max_min_fairness": "agnostic",
            "finish_time_fairness_perf": "ftf"}.get(policy, "throughput")
    p = _tied_problem(2)
    ours = make_policy(policy, "ecos", gavel_compat=True).allocate(p)
    gavel, x = _gavel_program(kind, p.throughputs, p)
    gavel.solve(solver="ECOS")
    jobs, types = np.argsort(p.job_ids), np.argsort(p.worker_types)
    theirs = np.zeros(p.throughputs.shape)
    theirs[np.ix_(jobs, types)] = x.value.clip(0.0, 1.0)
    np.testing.assert_array_equal(ours.x, np.where(runnable(p), theirs, 0.0))
    assert any("published program" in note for note in ours.notes)
    clarabel = make_policy(policy, "clarabel").allocate(p).x
    assert not np.array_equal(clarabel, ours.x)  # at least the shares of order 1e-10 that rank jobs for spare GPUs
    if kind in ("perf", "agnostic"):  # max-min faces are wide
        assert not np.allclose(clarabel, ours.x, atol=1e-4)


def test_compat_max_min_runs_on_the_published_solver():
    from simulator.simulate import default_solver

    for policy in ("max_min_fairness", "max_min_fairness_perf", "max_min_fairness_packed"):
        assert default_solver(policy, gavel_compat=True) == "ecos"
        assert default_solver(policy) == "block:auto"  # Clarabel below 4,096 blocks: the schedules as before
    assert default_solver("max_sum_throughput_perf", gavel_compat=True) == "ecos"
    assert default_solver("finish_time_fairness_perf", gavel_compat=True) == "ecos"
    assert default_solver("min_total_duration_perf", gavel_compat=True) == "ecos"
