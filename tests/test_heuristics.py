import dataclasses

import numpy as np
import pytest
from helpers import problems
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from allocators.gavel.allox import AlloX, first_in_line, match
from allocators.gavel.fifo import Fifo, FifoPacked, FifoPerf
from allocators.gavel.gandiva import Gandiva
from allocators.gavel.isolated import Isolated
from allocators.gavel.proportional import Proportional
from allocators.registry import HEURISTICS, POLICIES
from allocators.shockwave.gandiva_fair import GandivaFair
from formulations import (
    AllocationProblem,
    JobPairs,
    ProblemError,
    allocation_violations,
)

NON_PREEMPTIVE = (Fifo, AlloX)


def tiny(T, caps=(1, 1), scales=None, ages=None, remaining=None, pairs=None) -> AllocationProblem:
    """``pairs``: list of (first, second, rates of shape (n, 2))."""
    T = np.asarray(T, dtype=float)
    m, n = T.shape
    job_pairs = None
    if pairs is not None:
        job_pairs = JobPairs([p[0] for p in pairs], [p[1] for p in pairs],
                             np.array([p[2] for p in pairs], dtype=float).reshape(len(pairs), n, 2))
    return AllocationProblem(
        worker_types=tuple(f"t{j}" for j in range(n)),
        capacities=caps,
        job_ids=np.arange(m),
        job_types=tuple(f"m{i}" for i in range(m)),
        scale_factors=np.ones(m) if scales is None else scales,
        weights=np.ones(m),
        throughputs=T,
        time_since_arrival=ages,
        remaining_steps=remaining,
        pairs=job_pairs,
    )


def subset(problem: AllocationProblem, rows) -> AllocationProblem:
    """The problem restricted to (and reordered as) ``rows``; job ids and pairs follow."""
    rows = np.asarray(rows, dtype=np.int64)

    def pick(v):
        return None if v is None else v[rows]

    pairs = problem.pairs
    if pairs is not None:
        new = np.full(problem.num_jobs, -1)
        new[rows] = np.arange(rows.size)
        keep = (new[pairs.first] >= 0) & (new[pairs.second] >= 0)
        pairs = JobPairs(new[pairs.first[keep]], new[pairs.second[keep]], pairs.rates[keep])
    return dataclasses.replace(
        problem, job_ids=problem.job_ids[rows], job_types=tuple(problem.job_types[i] for i in rows),
        scale_factors=problem.scale_factors[rows], weights=problem.weights[rows],
        throughputs=problem.throughputs[rows], remaining_steps=pick(problem.remaining_steps),
        time_since_arrival=pick(problem.time_since_arrival), pairs=pairs)


@st.composite
def annotated(draw, multi_gpu: bool = True):
    """``problems()`` plus remaining steps, arrival ages (with ties) and, usually, random pairs."""
    problem = draw(problems(multi_gpu=multi_gpu))
    m, n = problem.num_jobs, problem.num_types
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pairs = None
    if draw(st.booleans()) or draw(st.booleans()):
        a, b = np.triu_indices(m, k=1)
        keep = (problem.scale_factors[a] == problem.scale_factors[b]) & (rng.random(a.size) < 0.6)
        rates = rng.uniform(0.0, 1.5, (int(keep.sum()), n, 2)) * (rng.random((int(keep.sum()), n, 1)) < 0.8)
        pairs = JobPairs(a[keep], b[keep], rates * problem.throughputs[b[keep]][:, :, None])
    return dataclasses.replace(problem, remaining_steps=rng.uniform(1.0, 1e4, m),
                               time_since_arrival=rng.integers(0, 4, m).astype(float), pairs=pairs)


def time_on_type(alloc) -> np.ndarray:
    """(m, n): fraction of time each job runs on each type, alone or in a pair."""
    out = alloc.x.copy()
    if alloc.pair_x is not None:
        pairs = alloc.problem.job_pairs()
        np.add.at(out, pairs.first, alloc.pair_x)
        np.add.at(out, pairs.second, alloc.pair_x)
    return out


# --- hand-computed allocations ------------------------------------------------------------

def test_isolated_splits_each_type_evenly_and_scales_rows():
    # job 0: (4/2, 1/2) -> row 2.5 -> (0.8, 0.2); job 1 (2 GPUs) fits only t0: (4/2)/2 = 1
    alloc = Isolated().allocate(tiny(np.ones((2, 2)), caps=(4, 1), scales=[1, 2]))
    np.testing.assert_allclose(alloc.x, [[0.8, 0.2], [1.0, 0.0]])
    assert alloc.policy == "isolated" and alloc.objective is None and alloc.result is None


@pytest.mark.parametrize(
    "T, caps, expected",
    [
        # q = (2/3, 1/3) masked; loads (4/3, 1/3), rows (1, 2/3) -> a = min(1.5, 3, 1, 1.5) = 1
        ([[1, 1], [1, 0]], (2, 1), [[2 / 3, 1 / 3], [2 / 3, 0]]),
        # three jobs, q = 1/2 everywhere, load 3/2 per 1-GPU type -> a = 2/3
        (np.ones((3, 2)), (1, 1), np.full((3, 2), 1 / 3)),
        # a lone job restricted to t0: q = 1/2, a = min(2, 2) -> runs full time there
        ([[1, 0]], (1, 1), [[1.0, 0.0]]),
    ],
)
def test_proportional_common_factor(T, caps, expected):
    np.testing.assert_allclose(Proportional().allocate(tiny(T, caps=caps)).x, expected)


def test_fifo_perf_serves_oldest_first_on_its_fastest_free_type():
    # order: job 1 (age 10) -> t0 (3), job 0 (age 5) -> t1 (2, t0 taken), job 2 waits
    problem = tiny([[1, 2], [3, 1], [1, 1]], ages=[5, 10, 0])
    np.testing.assert_array_equal(FifoPerf().allocate(problem).x, [[0, 1], [1, 0], [0, 0]])


def test_fifo_queue_is_strict():
    # job 0 takes t0 (tie -> first type); job 1 needs 2 GPUs and blocks job 2, which would fit t1
    alloc = FifoPerf().allocate(tiny(np.ones((3, 2)), caps=(2, 1), scales=[1, 2, 1]))
    np.testing.assert_array_equal(alloc.x, [[1, 0], [0, 0], [0, 0]])


def test_fifo_agnostic_picks_a_random_runnable_type():
    problem = tiny([[1, 0], [1, 1]])
    np.testing.assert_array_equal(Fifo(seed=5).allocate(problem).x, [[1, 0], [0, 1]])
    firsts = {int(Fifo(seed=s).allocate(tiny(np.ones((2, 2)))).x[0].argmax()) for s in range(20)}
    assert firsts == {0, 1}


def test_fifo_packed_picks_the_best_partner_above_threshold():
    # A -> t0, B -> t1, C waits; gains: (A, C) on t0 = 1.6/2 + 0.8/1 = 1.6, (B, C) on t1 = 1.8
    pairs = [(0, 2, [[1.6, 0.8], [0, 0]]), (1, 2, [[0, 0], [1.8, 0.9]])]
    problem = tiny([[2, 1], [1, 2], [1, 1]], ages=[3, 2, 1], pairs=pairs)
    policy = FifoPacked()
    alloc = policy.allocate(problem)
    np.testing.assert_array_equal(alloc.x, [[1, 0], [0, 0], [0, 0]])
    np.testing.assert_array_equal(alloc.pair_x, [[0, 0], [0, 1]])
    # B leaves: C keeps t1, alone
    later = policy.allocate(subset(problem, [0, 2]))
    np.testing.assert_array_equal(later.x, [[1, 0], [0, 1]])


def test_fifo_packed_threshold_and_no_pairs():
    below = [(0, 1, [[0.7, 0.7]])]  # gain 1.4 <= 1.5
    alloc = FifoPacked().allocate(tiny([[1], [1]], caps=(1,), pairs=below))
    np.testing.assert_array_equal(alloc.x, [[1], [0]])
    np.testing.assert_array_equal(alloc.pair_x, [[0]])
    alloc = FifoPacked().allocate(tiny([[1], [1]], caps=(1,)))
    assert alloc.pair_x is None and any("no candidate pairs" in n for n in alloc.notes)


def test_gandiva_isolated_when_demand_fits():
    alloc = Gandiva().allocate(tiny(np.ones((2, 2)), caps=(2, 1)))
    np.testing.assert_allclose(alloc.x, [[2 / 3, 1 / 3], [2 / 3, 1 / 3]])


def test_gandiva_packs_good_pairs_and_drops_bad_ones():
    # 3 jobs on 1 GPU; the only candidate pair (0, 1) has gain 1.2 -> 2 combinations, 1/2 each
    alloc = Gandiva().allocate(tiny(np.ones((3, 1)), caps=(1,), pairs=[(0, 1, [[0.6, 0.6]])]))
    np.testing.assert_allclose(alloc.x, [[0], [0], [0.5]])
    np.testing.assert_allclose(alloc.pair_x, [[0.5]])
    # gain 0.8 < 1: dropped, three singles with 1/3 each
    alloc = Gandiva().allocate(tiny(np.ones((3, 1)), caps=(1,), pairs=[(0, 1, [[0.4, 0.4]])]))
    np.testing.assert_allclose(alloc.x, np.full((3, 1), 1 / 3))
    assert any("dropped" in n for n in alloc.notes)


def test_allox_matches_jobs_to_positions():
    # p = R / T: job 0 (10, 5), job 1 (20, 20), job 2 (10, 30). Optimum 40: t0 runs job 2,
    # t1 runs job 0 then job 1 (1*20 + 2*5 + 10); the first job on each GPU starts.
    problem = tiny([[1, 2], [1, 1], [3, 1]], remaining=[10, 20, 30])
    np.testing.assert_array_equal(AlloX(alpha=1.0).allocate(problem).x, [[0, 1], [0, 0], [1, 0]])
    # default window: max(2 free GPUs, int(0.3 * 3)) = the 2 oldest -> job 0 on t1, job 1 on t0
    alloc = AlloX().allocate(problem)
    np.testing.assert_array_equal(alloc.x, [[0, 1], [1, 0], [0, 0]])
    assert any("2 longest-waiting of 3" in n for n in alloc.notes)


# --- state ----------------------------------------------------------------------------------

def test_fifo_perf_places_every_job_afresh_on_each_call():
    # A (older) takes t1 (its fastest), B the remaining t0; after A leaves B moves to t1,
    # as in the published policy
    problem = tiny([[1, 2], [1, 3]], ages=[10, 5])
    policy = FifoPerf()
    np.testing.assert_array_equal(policy.allocate(problem).x, [[0, 1], [1, 0]])
    np.testing.assert_array_equal(policy.allocate(subset(problem, [1])).x, [[0, 1]])


def test_fifo_keeps_a_jobs_type_across_calls():
    problem = tiny([[1, 2], [1, 3]], ages=[10, 5])
    policy = Fifo(seed=3)
    first = policy.allocate(problem).x
    np.testing.assert_array_equal(policy.allocate(subset(problem, [1])).x, first[1:])


def test_allox_does_not_preempt():
    policy = AlloX()
    first = tiny([[2, 1]], remaining=[10])
    np.testing.assert_array_equal(policy.allocate(first).x, [[1, 0]])
    # B would rather have t0 (p = 1 vs 10), but A keeps it
    second = tiny([[2, 1], [10, 1]], remaining=[10, 10])
    np.testing.assert_array_equal(policy.allocate(second).x, [[1, 0], [0, 1]])


def _overloaded_with_pairs(m=6) -> AllocationProblem:
    a, b = np.triu_indices(m, k=1)
    pairs = [(int(i), int(k), [[0.6, 0.6]]) for i, k in zip(a, b)]
    return tiny(np.ones((m, 1)), caps=(2,), pairs=pairs)


def test_gandiva_is_reproducible_and_keeps_its_pairs():
    problem = _overloaded_with_pairs()
    runs = []
    for _ in range(2):
        policy = Gandiva(seed=3)
        runs.append([policy.allocate(problem).pair_x, policy.allocate(problem).pair_x])
    for one, two in zip(*runs):
        np.testing.assert_array_equal(one, two)
    first, second = runs[0]
    np.testing.assert_array_equal(first > 0, second > 0)  # introspection keeps the good pairs
    assert (first > 0).sum() == 3  # 6 jobs -> 3 random pairs, each 2/3 GPU
    np.testing.assert_allclose(first[first > 0], 2 / 3)
    pairings = {tuple(np.flatnonzero(Gandiva(seed=s).allocate(problem).pair_x[:, 0])) for s in range(10)}
    assert len(pairings) > 1


def test_allox_rejects_multi_gpu_jobs_and_needs_remaining_steps():
    with pytest.raises(ProblemError, match=r"'allox' schedules single-GPU jobs only; job 1 .* needs 2 GPUs"):
        AlloX().allocate(tiny(np.ones((2, 2)), caps=(2, 2), scales=[1, 2], remaining=[1, 1]))
    with pytest.raises(ProblemError, match="needs remaining steps"):
        AlloX().allocate(tiny(np.ones((1, 2))))


def test_allox_alpha_is_validated():
    with pytest.raises(ValueError, match="alpha"):
        AlloX(alpha=1.5)


# --- properties -----------------------------------------------------------------------------

@given(annotated(), st.data())
@settings(max_examples=60)
def test_every_heuristic_is_feasible_across_calls(problem, data):
    rows = data.draw(st.permutations(range(problem.num_jobs)))
    later = subset(problem, rows[:data.draw(st.integers(0, problem.num_jobs))])
    single_gpu = bool((problem.scale_factors == 1).all())
    for cls in (POLICIES[name] for name in HEURISTICS):
        if cls is AlloX and not single_gpu:
            continue
        policy = cls()
        for p in (problem, later, problem):
            alloc = policy.allocate(p)
            assert alloc.policy == cls.name
            assert cls.uses_pairs or alloc.pair_x is None
            violations = allocation_violations(alloc)
            if cls is GandivaFair and violations:
                # equal time shares ignore scale factors: only capacity may break, and it is noted
                assert not single_gpu and alloc.notes
                assert all("GPUs allocated, capacity" in v for v in violations)
                continue
            assert violations == [], cls.name


@given(annotated(multi_gpu=False), st.data())
def test_allox_is_feasible_and_whole(problem, data):
    alloc = AlloX(alpha=data.draw(st.sampled_from([0.0, 0.3, 1.0]))).allocate(problem)
    assert allocation_violations(alloc) == []
    assert set(np.unique(alloc.x)) <= {0.0, 1.0}
    assert (alloc.x.sum(axis=0) <= problem.capacities).all()


@given(annotated(), st.data())
def test_non_preemptive_policies_keep_running_jobs_on_their_type(problem, data):
    rows = data.draw(st.permutations(range(problem.num_jobs)))
    later = subset(problem, rows[:data.draw(st.integers(0, problem.num_jobs))])
    for cls in NON_PREEMPTIVE:
        if cls is AlloX and (problem.scale_factors != 1).any():
            continue
        policy = cls()
        before = dict(zip(problem.job_ids, time_on_type(policy.allocate(problem))))
        after = time_on_type(policy.allocate(later))
        for jid, row in zip(later.job_ids, after):
            running = np.flatnonzero(before[jid] == 1.0)
            if running.size:
                assert row[running[0]] == 1.0, cls.name


@given(st.integers(1, 6), st.integers(1, 3), st.integers(0, 2**32 - 1))
@settings(max_examples=60)
def test_allox_compressed_matching_is_exact(M, n, seed):
    """Same optimal cost as Gavel's full matrix over (GPU, position 1..M) slots."""
    rng = np.random.default_rng(seed)
    processing = np.where(rng.random((M, n)) < 0.8, rng.uniform(1, 50, (M, n)), np.inf)
    free = rng.integers(0, 4, n)
    rows, types, cost = match(processing, free)
    gpu_type = np.repeat(np.arange(n), free)
    if gpu_type.size == 0:
        assert rows.size == 0
        return
    full = np.arange(1, M + 1)[None, :, None] * processing[:, gpu_type][:, None, :]  # (M, position, GPU)
    full = full.reshape(M, -1)
    finite = np.isfinite(full)
    big = 2.0 * M * full[finite].max() + 1.0 if finite.any() else 1.0
    r, c = linear_sum_assignment(np.where(finite, full, big))
    ok = finite[r, c]
    assert rows.size == ok.sum()
    assert cost == pytest.approx(full[r[ok], c[ok]].sum(), rel=1e-9)
    start = first_in_line(processing, rows, types, free)
    assert (np.bincount(types[start], minlength=n) <= free).all()
    assert np.bincount(types[start], minlength=n).sum() == np.minimum(np.bincount(types, minlength=n), free).sum()
