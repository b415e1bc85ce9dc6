"""Helios' baselines after FIFO on the slot clock: ``sjf`` (hand schedule, the published per-second
loop), ``qssf`` (its estimator never sees the future), ``tiresias-helios`` (a preemption by hand);
every one keeps jobs in their VC, gang-scheduled, no node or VC over its GPUs; the Philly week runs."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_helios_fifo import PER_NODE, check_inside_vcs, reference, vc_workloads, write_log

from allocators.helios.estimator import HistoryEstimator
from allocators.helios.qssf import HeliosQssf
from allocators.helios.sjf import HeliosSjf
from allocators.helios.tiresias import INTERVAL, HeliosTiresias
from simulator.engine import Engine, SlotConfig
from simulator.simulate import job_log_workload, simulate_job_log
from simulator.views import slot_view

#: the artifact's Philly week's first two days (fifo-helios runs the whole week: tests/test_helios_fifo.py)
PHILLY_DAYS = ("2017-10-01 00:00:00", "2017-10-02 23:59:00")


def recording(cls, **params):
    """An instance of policy ``cls`` keeping every plan it returns with its decision time."""

    class Recording(cls):
        def allocate(self, view):
            plan = super().allocate(view)
            self.plans.append((view.now, plan))
            return plan

    policy = Recording(**params)
    policy.plans = []
    return policy


def run_recorded(log, config, cls, **params):
    view = slot_view(job_log_workload(log, config), None, cls.name)
    policy = recording(cls, **params)
    result = Engine(view, policy, SlotConfig(slot=1.0, preset="helios")).run()
    return view, policy, result


def schedule(result):
    return list(zip(result.jobs["start"].tolist(), result.jobs["finish"].tolist()))


def sjf_reference(jobs, layout):
    """The published SJF loop restated: the FIFO loop with the queue stably sorted by duration each
    second (appended arrivals included)."""
    return reference(jobs, layout, key=lambda i: jobs[i][1])


SJF_LAYOUT = {"a": 1, "b": 1}
#: (arrival, duration, GPUs, VC). In a, the 8-GPU job 0 runs to 100; then the shortest come first,
#: jobs 2 and 4 (10 s, the tie in arrival order) beside each other, job 3 (30 s, 8 GPUs) blocks job 1.
#: In b, job 7 (5 s, arrived last) overtakes job 6, which does not fit; job 9 (1 s, 8 GPUs) heads the
#: queue at 11 and blocks it until job 5 ends at 20; the tie of jobs 6 and 8 (40 s) keeps arrival order.
SJF_JOBS = [(0, 100, 8, "a"), (0, 20, 6, "b"), (1, 50, 4, "a"), (2, 10, 4, "a"), (3, 30, 8, "a"),
            (4, 10, 2, "a"), (5, 40, 4, "b"), (6, 5, 2, "b"), (7, 40, 8, "b"), (8, 1, 8, "b")]
SJF_SCHEDULE = [(0, 100), (0, 20), (140, 190), (100, 110), (110, 140), (100, 110), (21, 61), (6, 11), (61, 101),
                (20, 21)]


def test_sjf_hand_schedule(tmp_path):
    log, config = write_log(tmp_path, SJF_JOBS, SJF_LAYOUT)
    view, policy, result = run_recorded(log, config, HeliosSjf)
    assert schedule(result) == SJF_SCHEDULE
    start, end = sjf_reference(SJF_JOBS, SJF_LAYOUT)
    assert [(start[i], end[i]) for i in range(len(SJF_JOBS))] == SJF_SCHEDULE
    check_inside_vcs(view, policy)


@settings(max_examples=60, deadline=None)
@given(vc_workloads())
def test_sjf_inside_vcs_and_as_published(tmp_path_factory, case):
    jobs, layout = case
    log, config = write_log(tmp_path_factory.mktemp("vc"), jobs, layout)
    view, policy, result = run_recorded(log, config, HeliosSjf)
    check_inside_vcs(view, policy)
    start, end = sjf_reference(jobs, layout)
    fits = [job[2] <= layout[job[3]] * PER_NODE for job in jobs]
    got = schedule(result)
    assert [got[i] for i in range(len(jobs)) if fits[i]] == [(start[i], end[i]) for i in range(len(jobs)) if fits[i]]


def philly_days(shared_data, policy):
    start = time.perf_counter()
    result = simulate_job_log(shared_data / "pollux/traces/philly.csv", shared_data / "lucid/philly/vc_config.csv",
                              policy=policy, window=PHILLY_DAYS)
    wall = time.perf_counter() - start
    s = result.summary
    assert s["jobs"] == s["jobs_completed"] > 1000 and s["gpus"] == 2816
    assert s["queueing_delay_mean"] >= 0 and s["average_jct"] > s["queueing_delay_mean"]
    print(f"Philly, 2 days, {policy}: {wall:.1f} s, average JCT {s['average_jct']:.0f} s, queueing delay "
          f"{s['queueing_delay_mean']:.0f} s (p99.9 {s['queueing_delay_p999']:.0f} s), {s['decisions']} decisions")
    return result


@pytest.mark.parametrize("policy", ["sjf", "qssf", "tiresias-helios"])
def test_philly_days(shared_data, policy):
    philly_days(shared_data, policy)


def test_sjf_is_not_fifo_on_the_hand_trace(tmp_path):
    log, config = write_log(tmp_path, SJF_JOBS, SJF_LAYOUT)
    fifo = simulate_job_log(log, config, policy="fifo-helios")
    assert np.mean(fifo.jobs["finish"] - fifo.jobs["arrival"]) > np.mean([e - a for (_, e), (a, *_) in
                                                                          zip(SJF_SCHEDULE, SJF_JOBS)])


def test_estimator_learns_history_only():
    est = HistoryEstimator(groups=2, columns=2)
    assert est.estimate(0.0, np.array([0]), np.array([1]), np.array([4])).tolist() == [4.0]  # no history: GPUs
    with pytest.raises(ValueError, match="submitted at 50 s"):
        est.learn(40.0, np.array([50.0]), np.array([40.0]), np.array([0]), np.array([0]), np.array([10.0]))
    with pytest.raises(ValueError, match="ending at 60 s"):
        est.learn(40.0, np.array([0.0]), np.array([60.0]), np.array([0]), np.array([0]), np.array([60.0]))
    est.learn(40.0, np.array([0.0, 5.0, 7.0]), np.array([30.0, 40.0, 40.0]), np.array([0, 0, 1]),
              np.array([0, 0, 1]), np.array([30.0, 10.0, 100.0]))
    # same VC and GPUs: 20 s; same VC only: 20 s; another VC's own history: 100 s
    got = est.estimate(41.0, np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([1, 2, 3]))
    assert got.tolist() == [20.0, 40.0, 300.0]
    with pytest.raises(ValueError, match="after learning the history"):
        est.estimate(39.0, np.array([0]), np.array([0]), np.array([1]))


#: in VC a (one node): job 0 ends at 20 and is the history of the later estimates; job 2 (21, alone
#: in the queue) is estimated a second later from VC a's mean (20 s x 2 GPUs = 40), job 3 (1 GPU: 20)
#: overtakes it; jobs 4 and 5 (8 GPUs, 160 each: VC a's 8-GPU mean 20 s) wait behind job 3's 1000 s,
#: though job 4 runs 1 s (no oracle), and keep their arrival order on the tie
QSSF_JOBS = [(0, 20, 8, "a"), (10, 60, 8, "a"), (21, 30, 2, "a"), (23, 1000, 1, "a"), (24, 1, 8, "a"),
             (25, 5, 8, "a")]
QSSF_SCHEDULE = [(0, 20), (20, 80), (80, 110), (80, 1080), (1080, 1081), (1081, 1086)]


def test_qssf_hand_schedule(tmp_path):
    log, config = write_log(tmp_path, QSSF_JOBS, {"a": 1})
    view, policy, result = run_recorded(log, config, HeliosQssf)
    assert schedule(result) == QSSF_SCHEDULE
    assert policy.priority[1:] == [8.0, 40.0, 20.0, 160.0, 160.0]
    check_inside_vcs(view, policy)
    assert "learning each of the 6 jobs of the run as it ended" in result.summary["notes"][-1]


#: (user, GPUs, submit, duration): slow's and fast's first jobs end early; a whole-node job holds the
#: node while slow's and fast's whole-node jobs arrive, slow's first
USER_JOBS = [("slow", 1, 0, 1000), ("fast", 1, 0, 10), ("x", 8, 1001, 500), ("slow", 8, 1100, 30),
             ("fast", 8, 1200, 20)]


def test_qssf_estimates_by_user_where_the_log_names_users(tmp_path):
    """A Helios log (with users): qssf ranks fast's job by fast's history and starts it first; the
    same jobs all of one user tie and start in submission order."""
    header = "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration\n"
    rows = "".join(f"{i},{u},a,j{i},{g},1,1,COMPLETED,{t},{t},{t + d},{d}\n"
                   for i, (u, g, t, d) in enumerate(USER_JOBS))
    log, config = tmp_path / "cluster_log.csv", tmp_path / "vc.csv"
    log.write_text(header + rows)
    config.write_text("vc,node num\na,1\n")
    view, policy, result = run_recorded(log, config, HeliosQssf)
    assert view.job_user is not None and policy.priority[3] == 8000.0 and policy.priority[4] == 80.0
    assert result.jobs["start"].tolist()[3:] == [1521.0, 1501.0]
    assert "features: user, GPUs" in result.summary["notes"][-1]
    log.write_text(header + rows.replace(",slow,", ",u,").replace(",fast,", ",u,"))
    _, same, result = run_recorded(log, config, HeliosQssf)
    assert same.priority[3] == same.priority[4] and result.jobs["start"].tolist()[3:] == [1501.0, 1531.0]


class QssfRecording(HeliosQssf):
    """qssf keeping each decision's plan and the priorities given so far."""

    def __init__(self):
        super().__init__()
        self.plans, self.given = [], []

    def allocate(self, view):
        plan = super().allocate(view)
        self.plans.append((view.now, plan))
        self.given.append({j: self.priority[j] for j in np.flatnonzero(self.estimated).tolist()})
        return plan


@settings(max_examples=40, deadline=None)
@given(vc_workloads(), st.floats(0.0, 1.0))
def test_qssf_never_sees_the_future(tmp_path_factory, case, cut):
    """Jobs submitted after T changed (durations x3 + 7): every decision up to T, its plan and every
    priority given by then, is the same; and every plan keeps the VC rules."""
    jobs, layout = case
    T = int(cut * max(job[0] for job in jobs))
    runs = []
    for variant in (jobs, [(a, d * 3 + 7 if a > T else d, g, vc) for a, d, g, vc in jobs]):
        log, config = write_log(tmp_path_factory.mktemp("vc"), variant, layout)
        view = slot_view(job_log_workload(log, config), None, "qssf")
        policy = QssfRecording()
        Engine(view, policy, SlotConfig(slot=1.0, preset="helios")).run()
        check_inside_vcs(view, policy)
        runs.append([(t, plan.jobs.tolist(), plan.nodes.tolist(), plan.gpus.tolist(), given)
                     for (t, plan), given in zip(policy.plans, policy.given, strict=True) if t <= T])
    assert runs[0] == runs[1]


#: (arrival, duration, GPUs, VC). In a, job 0 (8 GPUs) passes 18,000 GPU·s after 2,250 s and at the
#: decision of 2,280 s job 4 (high queue) preempts it; job 0 resumes when job 4 ends (2,880, a
#: decision time) and pays 40 s: 2,880 + 40 + 720 = 3,640. In b, job 1 (16 GPUs) is low from 1,140 s,
#: preempted by job 2, resumes at the next decision after job 2 ends (1,260) and pays 60 s (over 8
#: GPUs): 1,260 + 60 + 860 = 2,180. In c, job 3 arrives at 70 and starts at the next decision, 120.
TIRESIAS_JOBS = [(0, 3000, 8, "a"), (0, 2000, 16, "b"), (30, 100, 8, "b"), (70, 10, 1, "c"), (100, 600, 4, "a")]
TIRESIAS_LAYOUT = {"a": 1, "b": 2, "c": 1}
TIRESIAS_SCHEDULE = [(0, 3640), (0, 2180), (1140, 1240), (120, 130), (2280, 2880)]


def test_tiresias_hand_preemption(tmp_path):
    log, config = write_log(tmp_path, TIRESIAS_JOBS, TIRESIAS_LAYOUT)
    view, policy, result = run_recorded(log, config, HeliosTiresias)
    assert schedule(result) == TIRESIAS_SCHEDULE
    assert result.jobs["overhead_seconds"].tolist() == [40.0, 60.0, 0.0, 0.0, 0.0]
    assert policy.preemptions == 2
    check_inside_vcs(view, policy)
    # jobs start (and resume) on the 60 s grid only
    starts = [t for t, plan in policy.plans if t % INTERVAL]
    assert starts and all(set(plan.jobs.tolist()) <= set(before.jobs.tolist())
                          for (_, before), (t, plan) in zip(policy.plans, policy.plans[1:]) if t % INTERVAL)


@settings(max_examples=40, deadline=None)
@given(vc_workloads())
def test_qssf_and_tiresias_inside_vcs(tmp_path_factory, case):
    jobs, layout = case
    log, config = write_log(tmp_path_factory.mktemp("vc"), jobs, layout)
    fits = np.array([job[2] <= layout[job[3]] * PER_NODE for job in jobs])
    for cls in (HeliosQssf, HeliosTiresias):
        view, policy, result = run_recorded(log, config, cls)
        check_inside_vcs(view, policy)
        finished = result.jobs["state"] == "finished"
        assert (finished == fits).all()
        duration = np.array([job[1] for job in jobs], dtype=float)
        assert (result.jobs["finish"][fits] >= result.jobs["arrival"][fits] + duration[fits] - 1e-9).all()
