"""The compiled published plan (formulations.elasticflow_compiled_plan) against the Python one
(formulations.elasticflow_events.plan_job): the same plans, ends, GPU·s and profiles, to the last
bit, for whole decisions (plan_all) and for the leftover hand-out's trials with a level fixed now."""

import copy
import random

import numpy as np
from test_elasticflow_leftover import _jobs

from formulations.elasticflow_compiled_plan import plan, plan_all
from formulations.elasticflow_events import PlanJob, _without, gpu_seconds, plan_job
from formulations.elasticflow_events import plan_all as published_plan_all


def _state(jobs: list[PlanJob]) -> list[tuple]:
    return [(job.alloc, job.end, job.real_end, job.gpus) for job in jobs]


def test_compiled_plans_are_the_published_ones():
    trials = 0
    for seed in range(80):
        rng = random.Random(seed)
        total, slot = rng.choice([8, 32, 128, 512]), rng.choice([60.0, 240.0, 37.0])
        now = rng.choice([0.0, 1234.0, 98_765.5])
        jobs = [PlanJob(levels=q, rates=r, need=need, deadline=deadline)
                for q, r, need, deadline in _jobs(rng, rng.randint(0, 40), now, slot)]
        compiled = copy.deepcopy(jobs)
        profile, ok = published_plan_all(jobs, now, slot, total)
        assert plan_all(compiled, now, slot, total) == (profile, ok), seed
        assert _state(compiled) == _state(jobs), seed
        for job in jobs:
            up = job.next_level()
            if up == job.gpus:
                continue
            row = _without(profile, job, total)
            out = plan_job(row, now, job, slot, total, assigned=up)
            keys = np.array(sorted(row))
            levels = np.array(job.levels, dtype=np.int64)
            times, gpus, end, real_end, cost, left_times, left_free = plan(
                keys, np.array([row[k] for k in keys.tolist()], dtype=np.int64), now, levels, levels.size,
                np.array(job.rates), job.need, job.deadline, slot, total, up)
            assert (dict(zip(times.tolist(), gpus.tolist())), end, real_end, cost) == \
                (out.alloc, out.end, out.real_end, gpu_seconds(out.alloc, out.end)), seed
            assert dict(zip(left_times.tolist(), left_free.tolist())) == out.profile, seed
            trials += 1
    assert trials > 1000
