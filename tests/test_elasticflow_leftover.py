"""The published leftover-GPU hand-out with all candidates made at once (formulations.elasticflow_leftover)
against the one-job-at-a-time code (formulations.elasticflow_events): the same plans, ends, profile,
replaced ends and ranking, to the last bit."""

import random
import sys

from hypothesis import given
from hypothesis import strategies as st

from formulations.elasticflow_events import PlanJob, _without, align, allocate_free, plan_all
from formulations.elasticflow_kernels import align as compiled_align
from formulations.elasticflow_leftover import BATCH_FROM, Candidates, Steps, batched
from formulations.elasticflow_leftover import allocate_free as dispatched

LEVELS = [1, 2, 4, 8, 16, 32, 64]


def _jobs(rng: random.Random, count: int, now: float, slot: float) -> list[tuple]:
    """Random jobs: allowed levels up to a cap, concave rates, work from a few to many slots, and
    deadlines passed, best effort, near or far."""
    jobs = []
    for _ in range(count):
        cap = rng.choice(LEVELS)
        levels = [q for q in LEVELS if q <= cap and rng.random() < 0.85] or [1]
        base = rng.uniform(0.5, 20)
        rates = sorted(base * q ** rng.uniform(0.3, 1.0) for q in levels)
        need = rng.choice([rng.uniform(1, 5_000), rng.uniform(1, 200_000), float(rng.randint(1, 3_000))])
        kind = rng.random()
        if kind < 0.15:
            deadline = now - rng.uniform(0, 3 * slot)
        elif kind < 0.2:
            deadline = float(sys.maxsize)
        else:
            deadline = now + rng.choice([rng.uniform(0, 5 * slot), rng.uniform(0, 200 * slot),
                                         rng.randint(1, 50) * slot])
        jobs.append((levels, rates, need, deadline))
    return sorted(jobs, key=lambda job: job[3])


def _hand_out(hand_out, total: int, slot: float, now: float, jobs: list[tuple]):
    plans = [PlanJob(levels=q, rates=r, need=need, deadline=deadline) for q, r, need, deadline in jobs]
    profile, _ = plan_all(plans, now, slot, total)
    left = hand_out(plans, profile, now, slot, total)
    return [(p.alloc, p.end, p.real_end, p.gpus) for p in plans], left.profile, left.replaced, left.ranked


def test_all_candidates_at_once_hand_out_as_the_published_code():
    for seed in range(120):
        rng = random.Random(seed)
        total, slot = rng.choice([8, 32, 128, 512]), rng.choice([60.0, 240.0, 37.0])
        now = rng.choice([0.0, 1234.0, 98_765.5])
        jobs = _jobs(rng, rng.randint(0, 40), now, slot)
        assert _hand_out(batched, total, slot, now, jobs) == _hand_out(allocate_free, total, slot, now, jobs), seed


def test_the_grid_outgrowing_its_buffers_changes_nothing(monkeypatch):
    monkeypatch.setattr(Candidates, "spare", 1)
    for seed in range(120, 150):
        rng = random.Random(seed)
        jobs = _jobs(rng, rng.randint(5, 40), 1234.0, 60.0)
        assert _hand_out(batched, 128, 60.0, 1234.0, jobs) == _hand_out(allocate_free, 128, 60.0, 1234.0, jobs), seed


def test_many_jobs_are_handed_out_at_once_few_one_at_a_time(monkeypatch):
    import formulations.elasticflow_leftover as leftover

    calls = []
    monkeypatch.setattr(leftover, "batched", lambda *args: calls.append(len(args[0])) or batched(*args))
    rng = random.Random(7)
    for count in (BATCH_FROM - 1, BATCH_FROM):
        _hand_out(dispatched, 512, 60.0, 0.0, _jobs(rng, count, 0.0, 60.0))
    assert calls == [BATCH_FROM]


_TIMES = st.integers(0, 12).map(lambda i: 60.0 * i)


@given(free=st.dictionaries(_TIMES, st.integers(0, 16), min_size=1, max_size=8),
       alloc=st.dictionaries(_TIMES, st.integers(0, 8), min_size=1, max_size=5), end=_TIMES)
def test_a_row_is_the_profile_with_the_plan_handed_back(free, alloc, end):
    job = PlanJob(levels=[1, 2, 4, 8], rates=[1.0, 2.0, 4.0, 8.0], need=1.0, deadline=end, alloc=alloc, end=end)
    now = min([*free, *alloc, end])
    row = Candidates([job], Steps.of(free), now, 60.0, 16).handed_back(0)
    assert row.as_dict() == _without(free, job, 16)


@given(start=st.floats(0, 1e7), t=st.lists(st.floats(-1e4, 1e8), min_size=1, max_size=20),
       slot=st.sampled_from([37.0, 60.0, 240.0]))
def test_compiled_slot_alignment_is_the_published_one(start, t, slot):
    assert [compiled_align(start, x, slot) for x in t] == [align(start, x, slot) for x in t]
