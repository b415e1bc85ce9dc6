"""The published ElasticFlow planner replayed on its event-time profile (formulations.elasticflow_events),
on cases worked by hand from the module's rules."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from formulations.elasticflow_events import (
    PlanJob,
    _without,
    align,
    allocate_free,
    gpu_seconds,
    merged,
    plan_all,
    plan_job,
    value_at,
)

LINEAR = dict(levels=np.array([1, 2, 4, 8]), rates=np.array([1.0, 2.0, 4.0, 8.0]))


def test_align_and_merge_follow_the_published_helpers():
    assert align(0, 100, 60) == 120 and align(0, 120, 60) == 120 and align(30, 20, 60) == 30
    assert merged({5: 1, 0: 2, 3: 2, 9: 1}) == {0: 2, 5: 1}
    assert gpu_seconds({0: 2, 100: 4}, 150) == 2 * 100 + 4 * 50


def test_the_smallest_level_whose_backward_walk_reaches_the_work_wins():
    # 600 iterations by t = 300: 1 GPU makes 300, 2 GPUs make 600; the job ends at 300 (aligned)
    job = PlanJob(**LINEAR, need=600, deadline=300)
    out = plan_job({0: 8}, 0, job, 60, 8)
    assert (out.alloc, out.end, out.real_end, out.on_time) == ({0: 2}, 300, 300, True)
    assert out.profile == {0: 6, 300: 8}


def test_leftover_gpus_go_level_by_level_with_the_plan_remade():
    # 2 GPUs planned; the 6 free go 2 -> 4 (ends at align(150) = 180) -> 8 (ends at align(75) = 120)
    job = PlanJob(**LINEAR, need=600, deadline=300)
    profile, ok = plan_all([job], 0, 60, 8)
    assert ok and job.gpus == 2
    left = allocate_free([job], profile, 0, 60, 8)
    assert (job.gpus, job.end, job.real_end) == (8, 120, 75)
    assert left.profile == {0: 0, 120: 8}


def test_a_job_that_cannot_make_its_deadline_takes_its_cap_past_the_profile():
    # 10,000 iterations by t = 60 at 8 it/s at most: it runs 8 GPUs to the deadline, then (no more
    # breakpoints) the published fallback: its cap until done, ending at 60 + 9,520 / 8 = 1,250 s
    job = PlanJob(**LINEAR, need=10_000, deadline=60)
    out = plan_job({0: 8}, 0, job, 60, 8)
    assert (out.alloc, out.real_end, out.end, out.on_time) == ({0: 8}, 1250, 1260, False)
    assert out.profile == {0: 0, 1260: 8}


def test_periods_run_between_breakpoints_and_a_job_without_gpus_is_served_first():
    # b (deadline 600) is planned first: one period [0, 600), 1 GPU from now, ends at 240. a's
    # periods are [0, 240) and [240, deadline): its 1-GPU walk reaches 1,000 iterations in the
    # second, so it runs 0 GPUs before 240 and ends at 240 + align(1,000) = 1,260. The leftover
    # goes to a first (+inf: it holds none).
    a = PlanJob(**LINEAR, need=1_000, deadline=10_000)
    b = PlanJob(**LINEAR, need=240, deadline=600)
    profile, ok = plan_all([b, a], 0, 60, 4)
    assert ok and (b.alloc, b.end) == ({0: 1}, 240) and (a.alloc, a.end) == ({0: 0, 240: 1}, 1260)
    assert profile == {0: 3, 1260: 4}  # b ends where a starts: equal neighbours merged
    allocate_free([b, a], profile, 0, 60, 4)
    assert a.gpus > 0 and a.gpus + b.gpus <= 4
    assert b.real_end <= 600 and a.real_end <= 10_000


@pytest.mark.parametrize("need", [1.0, 599.0, 5_000.0])
def test_plans_never_overdraw_the_profile(need):
    jobs = [PlanJob(**LINEAR, need=need * (k + 1), deadline=600 * (k + 1)) for k in range(3)]
    profile, _ = plan_all(jobs, 0, 60, 8)
    allocate_free(jobs, profile, 0, 60, 8)
    assert sum(j.gpus for j in jobs) <= 8
    assert all(v >= 0 for v in profile.values())


def test_leftover_scale_ups_report_the_ends_they_replace():
    job = PlanJob(**LINEAR, need=600, deadline=300)
    profile, _ = plan_all([job], 0, 60, 8)
    assert allocate_free([job], profile, 0, 60, 8).replaced == {300, 180} and job.end == 120


def test_a_scale_event_goes_when_the_end_event_at_its_time_moves_away():
    from allocators.elasticflow.published import due_events, first_changes

    a = PlanJob(**LINEAR, need=1, deadline=1, gpus=2, alloc={0: 2, 300: 4}, end=620)
    b = PlanJob(**LINEAR, need=1, deadline=1, gpus=0, alloc={0: 0}, end=900)
    assert first_changes([a, b], 0) == [300, np.inf]
    # 500 was a's release: it moved to 620, so the event at 500 goes; 700 stays; 300 joins
    assert due_events({500, 700}, [a, b], moved={500}, now=0, joining={300}) == {300, 700}
    # an event where another plan still ends stays; one at the plan end of a running job goes
    assert due_events({900, 620}, [a, b], moved={900}, now=0, joining={300}) == {300, 900}


def test_a_job_past_its_deadline_takes_the_largest_level_the_free_gpus_hold():
    # deadline 10 < now 100: 6 GPUs free until 1,000 -> 4 GPUs, 80 iterations in 20 s; the
    # empty period at now does not hold GPUs back (it once halved the level to 2)
    job = PlanJob(**LINEAR, need=80, deadline=10)
    out = plan_job({100: 6, 1000: 8}, 100, job, 60, 8)
    assert (out.alloc, out.real_end, out.end, out.on_time) == ({100: 4}, 120, 160, False)


def _without_change_by_change(profile: dict, job: PlanJob, total: int) -> dict:
    """The published ``get_marginal``'s first half as written there: each change of the plan adds
    its difference to every breakpoint from it to the plan's end, one change at a time."""
    tmp = dict(profile)
    if job.end not in tmp:
        tmp[job.end] = value_at(tmp, job.end, total)
    last = 0
    for t in sorted(job.alloc):
        if t not in tmp:
            tmp[t] = value_at(tmp, t, total)
        for k in tmp:
            if t <= k < job.end:
                tmp[k] += job.alloc[t] - last
        last = job.alloc[t]
    return merged(tmp)


_TIMES = st.integers(0, 12).map(lambda i: 60.0 * i)


@given(profile=st.dictionaries(_TIMES, st.integers(0, 16), min_size=1, max_size=8),
       alloc=st.dictionaries(_TIMES, st.integers(0, 8), min_size=1, max_size=5), end=_TIMES)
def test_handing_a_plan_back_equals_the_published_change_by_change_rule(profile, alloc, end):
    job = PlanJob(**LINEAR, need=1.0, deadline=end, alloc=alloc, end=end)
    assert _without(profile, job, 16) == _without_change_by_change(profile, job, 16)
