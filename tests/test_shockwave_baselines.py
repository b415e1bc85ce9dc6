"""Shockwave's baselines: ``gandiva_fair`` and AlloX with multi-GPU jobs (``multi_gpu=True``)."""

import dataclasses

import numpy as np
import pytest
from helpers import problems, tiny
from hypothesis import given
from hypothesis import strategies as st

from allocators import POLICIES, make_policy
from allocators.gavel.allox import AlloX
from allocators.gavel.isolated import Isolated
from allocators.registry import HEURISTICS
from allocators.shockwave.gandiva_fair import GandivaFair
from formulations import AllocationProblem, ProblemError, allocation_violations


def capacity_lines(violations: list[str]) -> list[str]:
    return [v for v in violations if "GPUs allocated, capacity" in v]


def over_capacity_noted(alloc) -> bool:
    return any("exceed the capacity" in n and "round mechanism arbitrates" in n for n in alloc.notes)


def keep_rows(problem: AllocationProblem, rows) -> AllocationProblem:
    """The problem restricted to ``rows`` (jobs left; no pairs)."""
    rows = np.asarray(rows, dtype=np.int64)

    def pick(v):
        return None if v is None else v[rows]

    return dataclasses.replace(
        problem, job_ids=problem.job_ids[rows], job_types=tuple(problem.job_types[i] for i in rows),
        scale_factors=problem.scale_factors[rows], weights=problem.weights[rows],
        throughputs=problem.throughputs[rows], remaining_steps=pick(problem.remaining_steps),
        time_since_arrival=pick(problem.time_since_arrival), pairs=None)


# --- gandiva_fair: hand-computed ----------------------------------------------------------------

def test_gandiva_fair_is_registered_as_an_agnostic_heuristic():
    assert "gandiva_fair" in HEURISTICS and POLICIES["gandiva_fair"] is GandivaFair
    policy = make_policy("gandiva_fair")
    assert isinstance(policy, GandivaFair) and not policy.fixed_type_order


@pytest.mark.parametrize(
    "m, W, share",
    [
        (3, 4, 1.0),    # m < G: min(1, 4/3) = 1
        (4, 4, 1.0),    # m = G
        (6, 4, 2 / 3),  # m > G: 4/6
        (5, 2, 0.4),
    ],
)
def test_gandiva_fair_single_type_is_min_one_g_over_m(m, W, share):
    alloc = GandivaFair().allocate(tiny(np.ones((m, 1)), caps=(W,)))
    np.testing.assert_allclose(alloc.x, np.full((m, 1), share))
    assert alloc.policy == "gandiva_fair" and alloc.objective is None and alloc.result is None
    assert alloc.notes == [] and allocation_violations(alloc) == []


@pytest.mark.parametrize(
    "caps, m, expected_row",
    [
        # raw W_j / m = (1/2, 1/4): row sum 3/4 <= 1, kept (m = 4 > G = 3)
        ((2, 1), 4, [0.5, 0.25]),
        # raw (2, 1): row sum 3 -> scaled to (2/3, 1/3) (m = 2 < G = 6)
        ((4, 2), 2, [2 / 3, 1 / 3]),
        # raw (1, 1/2, 1/4): sum 7/4 -> (4/7, 2/7, 1/7)
        ((4, 2, 1), 4, [4 / 7, 2 / 7, 1 / 7]),
    ],
)
def test_gandiva_fair_several_types(caps, m, expected_row):
    alloc = GandivaFair().allocate(tiny(np.ones((m, len(caps))), caps=caps))
    np.testing.assert_allclose(alloc.x, np.tile(expected_row, (m, 1)))
    assert allocation_violations(alloc) == []


def test_gandiva_fair_is_zero_where_a_job_cannot_run():
    # job 0 has no throughput on t1: raw (3/3, 0) -> (1, 0); job 1 needs 2 GPUs, t1 has 1:
    # raw (1, 0) -> (1, 0); job 2 runs everywhere: raw (1, 1/3) -> (3/4, 1/4)
    T = [[5, 0], [1, 1], [2, 7]]
    alloc = GandivaFair().allocate(tiny(T, caps=(3, 1), scales=[1, 2, 1]))
    np.testing.assert_allclose(alloc.x, [[1, 0], [1, 0], [0.75, 0.25]])
    # t0: 1 + 2 + 3/4 GPUs > 3
    assert capacity_lines(allocation_violations(alloc)) == ["t0: 3.75 GPUs allocated, capacity 3"]
    assert over_capacity_noted(alloc) and "t0" in alloc.notes[0] and "t1" not in alloc.notes[0]


def test_gandiva_fair_ignores_scale_factors_unlike_isolated():
    problem = tiny(np.ones((3, 1)), caps=(2,), scales=[2, 2, 1])
    alloc = GandivaFair().allocate(problem)
    np.testing.assert_allclose(alloc.x, np.full((3, 1), 2 / 3))
    np.testing.assert_allclose(Isolated().allocate(problem).x, [[1 / 3], [1 / 3], [2 / 3]])
    # 2·2/3 + 2·2/3 + 2/3 = 10/3 GPUs on a 2-GPU type: over capacity, and said so
    np.testing.assert_allclose(alloc.gpus_used(), [10 / 3])
    assert allocation_violations(alloc) == ["t0: 3.33333 GPUs allocated, capacity 2"]
    assert len(alloc.notes) == 1 and over_capacity_noted(alloc)


def test_gandiva_fair_multi_gpu_jobs_within_capacity_get_no_note():
    # m < G: every job runs full time; 1 + 2 = 3 <= 4 GPUs
    alloc = GandivaFair().allocate(tiny(np.ones((2, 1)), caps=(4,), scales=[1, 2]))
    np.testing.assert_allclose(alloc.x, [[1], [1]])
    assert alloc.notes == [] and allocation_violations(alloc) == []


def test_gandiva_fair_with_no_jobs():
    empty = tiny(np.zeros((0, 2)), caps=(2, 1))
    alloc = GandivaFair().allocate(empty)
    assert alloc.x.shape == (0, 2) and alloc.notes == []


# --- gandiva_fair: properties -------------------------------------------------------------------

@given(problems())
def test_gandiva_fair_formula_and_honest_notes(problem):
    alloc = GandivaFair().allocate(problem)
    W, m = problem.capacities, problem.num_jobs
    runs = (problem.throughputs > 0) & (problem.scale_factors[:, None] <= W[None, :])
    raw = np.where(runs, W / m, 0.0)
    np.testing.assert_allclose(alloc.x, raw / np.maximum(raw.sum(axis=1, keepdims=True), 1.0), rtol=1e-12)
    assert (alloc.x.sum(axis=1) <= 1 + 1e-12).all()
    violations = allocation_violations(alloc)
    # the only base constraint it may break is capacity, and only with multi-GPU jobs
    assert capacity_lines(violations) == violations
    if (problem.scale_factors == 1).all():
        assert violations == [] and alloc.notes == []
    if violations:
        assert over_capacity_noted(alloc)
    assert over_capacity_noted(alloc) == bool((alloc.gpus_used() > W * (1 + 1e-9)).any())


# --- allox with multi-GPU jobs ------------------------------------------------------------------

def _mixed() -> AllocationProblem:
    # one 4-GPU type; processing p = R / T = (1, 2, 3, 5, 4); oldest first = job order
    return tiny(np.ones((5, 1)), caps=(4,), scales=[1, 2, 4, 1, 2], remaining_steps=[1.0, 2, 3, 5, 4],
                time_since_arrival=[50.0, 40, 30, 20, 10])


def test_allox_default_still_rejects_multi_gpu_jobs_and_names_the_flag():
    with pytest.raises(ProblemError, match=r"'allox' schedules single-GPU jobs only; job 1 .* needs 2 GPUs "
                                           r"\(multi_gpu=True"):
        AlloX(alpha=0.2).allocate(_mixed())
    with pytest.raises(ProblemError, match="multi_gpu=True"):
        make_policy("allox").allocate(_mixed())


def test_allox_multi_gpu_gives_one_over_s_to_the_chosen_jobs():
    policy = make_policy("allox", alpha=0.2, multi_gpu=True)
    assert isinstance(policy, AlloX) and policy.multi_gpu and policy.alpha == 0.2
    problem = _mixed()
    # 4 free GPUs, counted 1 per job -> window max(4, int(0.2·5)) = 4 oldest (jobs 0-3), all
    # four start; job 4 is outside the window
    alloc = policy.allocate(problem)
    np.testing.assert_allclose(alloc.x, [[1], [1 / 2], [1 / 4], [1], [0]])
    np.testing.assert_allclose(alloc.gpus_used(), [4])  # s·x = 1 per chosen job
    assert allocation_violations(alloc) == []
    # second call: jobs 0 and 3 (allocation 1.0) keep their GPUs; jobs 1, 2 (1/s) and 4 wait
    # again for 2 free GPUs: window max(2, int(0.2·3)) = jobs 1, 2 -> same shares
    again = policy.allocate(problem)
    np.testing.assert_allclose(again.x, alloc.x)
    assert any("2 longest-waiting of 3" in n for n in again.notes)


def test_allox_multi_gpu_rematches_multi_gpu_jobs_every_call():
    policy = AlloX(alpha=1.0, multi_gpu=True)
    problem = _mixed()
    # whole window, 4 slots for 5 jobs: the 4 shortest (p = 1, 2, 3, 4) start, job 3 (p = 5) waits
    np.testing.assert_allclose(policy.allocate(problem).x, [[1], [1 / 2], [1 / 4], [0], [1 / 2]])
    # a short single-GPU job arrives (p = 0.5): job 0 keeps its GPU; of jobs 1, 2, 3, 4, 5 the
    # 3 shortest (5, 1, 2) take the 3 free slots, so the 2-GPU job 4 loses its share
    newcomer = dataclasses.replace(
        problem, job_ids=np.arange(6), job_types=problem.job_types + ("m5",),
        scale_factors=np.append(problem.scale_factors, 1), weights=np.ones(6),
        throughputs=np.ones((6, 1)), remaining_steps=np.append(problem.remaining_steps, 0.5),
        time_since_arrival=np.append(problem.time_since_arrival, 0.0))
    np.testing.assert_allclose(policy.allocate(newcomer).x, [[1], [1 / 2], [1 / 4], [0], [0], [1]])


def test_allox_multi_gpu_counts_one_unit_per_job_on_each_type():
    # t0 has 2 GPUs, t1 has 4; all jobs need 2 GPUs, jobs 0-2 run only on t0, job 3 on both.
    # Free units (1 per job): t0 2, t1 4 -> on t0 the 2 shortest of jobs 0-2 start (2 · 1/2 ·
    # 2 GPUs = 2), job 3 takes t1
    T = [[1, 0], [1, 0], [1, 0], [1, 1]]
    problem = tiny(T, caps=(2, 4), scales=[2, 2, 2, 2], remaining_steps=[1.0, 2, 3, 4])
    alloc = AlloX(alpha=1.0, multi_gpu=True).allocate(problem)
    np.testing.assert_allclose(alloc.x, [[0.5, 0], [0.5, 0], [0, 0], [0, 0.5]])
    assert ((alloc.x > 0).sum(axis=0) <= problem.capacities).all()
    assert allocation_violations(alloc) == []


@st.composite
def annotated(draw):
    problem = draw(problems())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return dataclasses.replace(problem, remaining_steps=rng.uniform(1.0, 1e4, problem.num_jobs),
                               time_since_arrival=rng.integers(0, 4, problem.num_jobs).astype(float))


@given(annotated(), st.sampled_from([0.0, 0.2, 1.0]), st.data())
def test_allox_multi_gpu_shares_are_one_over_s_and_fit(problem, alpha, data):
    rows = data.draw(st.permutations(range(problem.num_jobs)))
    later = keep_rows(problem, rows[:data.draw(st.integers(0, problem.num_jobs))])
    policy = AlloX(alpha=alpha, multi_gpu=True)
    whole: dict[int, int] = {}
    for p in (problem, later, problem):
        alloc = policy.allocate(p)
        x, s = alloc.x, p.scale_factors
        assert allocation_violations(alloc) == []
        assert ((x >= 0) & (x <= 1)).all()
        chosen = x > 0
        assert (chosen.sum(axis=1) <= 1).all()  # one type per job
        np.testing.assert_array_equal(x[chosen], np.broadcast_to(1.0 / s[:, None], x.shape)[chosen])
        # 1 unit per running or chosen job on each type
        assert (chosen.sum(axis=0) <= p.capacities).all()
        np.testing.assert_allclose(alloc.gpus_used(), chosen.sum(axis=0))
        # single-GPU jobs started on the previous call keep their type (non-preemptive)
        for i, jid in enumerate(p.job_ids.tolist()):
            if jid in whole:
                assert x[i, whole[jid]] == 1.0
        whole = {int(p.job_ids[i]): int(j) for i, j in zip(*np.nonzero(x == 1.0))}
