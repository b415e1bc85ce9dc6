"""Virtual clusters on the slot clock and Helios' FIFO (``fifo-helios``): jobs never leave their VC,
the schedule equals a hand-computed one and the published simulators' per-second loop, and the
Philly week runs end to end."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from allocators.helios.fifo import HeliosFifo
from allocators.helios.placement import consolidate
from allocators.slot_plans import NodePlan
from simulator.buddy import place_in_vcs
from simulator.cluster import ClusterSpecError
from simulator.engine import Engine, SlotConfig
from simulator.engine.clock import SimulationError
from simulator.readers.helios_logs import read_job_log
from simulator.request import SimulateRequest, run_request
from simulator.simulate import job_log_workload, simulate_job_log
from simulator.views import slot_view
from simulator.workload import Jobs

PER_NODE = 8


def write_log(path, jobs, layout):
    """``jobs``: (arrival s, duration s, GPUs, VC) rows as a Philly CSV; ``layout``: VC -> nodes."""
    log, config = path / "log.csv", path / "vc.csv"
    log.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n"
                   + "".join(f"{a},{d},{g},{d * g},{vc}\n" for a, d, g, vc in jobs))
    config.write_text("vc,node num\n" + "".join(f"{vc},{n}\n" for vc, n in layout.items()))
    return log, config


class Recording(HeliosFifo):
    """fifo-helios, keeping every plan it returns with its decision time."""

    def __init__(self):
        super().__init__()
        self.plans: list[tuple[float, NodePlan]] = []

    def allocate(self, view):
        plan = super().allocate(view)
        self.plans.append((view.now, plan))
        return plan


def run_recorded(log, config):
    workload = job_log_workload(log, config)
    view = slot_view(workload, None, "fifo-helios")
    policy = Recording()
    result = Engine(view, policy, SlotConfig(slot=1.0, preset="helios")).run()
    return view, policy, result


def reference(jobs, layout, key=None):
    """The published simulators' loop, restated independently: one VC at a time, time in 1 s steps;
    ends release, arrivals queue (stably sorted by ``key(job index)`` each step where given: SJF),
    the queue head starts while it can be placed (consolidated)."""
    start, end = {}, {}
    for vc, count in layout.items():
        free = [PER_NODE] * count
        mine = sorted((i for i, job in enumerate(jobs) if job[3] == vc and job[2] <= count * PER_NODE),
                      key=lambda i: jobs[i][0])
        queue, running, t, arrived = [], {}, 0, 0
        while arrived < len(mine) or queue or running:
            for i, nodes in list(running.items()):
                if end[i] == t:
                    for node, g in nodes:
                        free[node] += g
                    del running[i]
            while arrived < len(mine) and jobs[mine[arrived]][0] == t:
                queue.append(mine[arrived])
                arrived += 1
            if key is not None:
                queue.sort(key=key)
            while queue:
                where = reference_place(free, jobs[queue[0]][2])
                if where is None:
                    break
                i = queue.pop(0)
                for node, g in where:
                    free[node] -= g
                start[i], end[i] = t, t + jobs[i][1]
                running[i] = where
            t += 1
    return start, end


def reference_place(free, n):
    """ConsolidatePlacement as the artifacts write it, on a list of free GPUs per node."""
    if sum(free) < n:
        return None
    avail = [k for k in range(len(free)) if free[k] > 0]
    if n <= PER_NODE:
        for k in sorted(avail, key=lambda k: free[k]):
            if free[k] >= n:
                return [(k, n)]
        return None
    nodes, out = sorted(avail, key=lambda k: -free[k]), []
    if n % PER_NODE == 0:
        need = n // PER_NODE
        for k in nodes:
            if free[k] < PER_NODE:
                return None
            out.append((k, PER_NODE))
            if len(out) == need:
                return out
        return None
    need = n // PER_NODE + 1
    for k in nodes:
        if free[k] == PER_NODE and need > 1:
            out.append((k, PER_NODE))
            need -= 1
        elif free[k] >= n % PER_NODE and need == 1:
            return [*out, (k, n % PER_NODE)]
        else:
            return None
    return None


def check_inside_vcs(view, policy):
    """Every plan puts each job on its VC's nodes only, no node and no VC over its GPUs."""
    bounds, job_vc = view.vcs.bounds, view.job_vc
    node_vc = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    for _, plan in policy.plans:
        assert (node_vc[plan.nodes] == job_vc[plan.jobs]).all()
        assert (np.bincount(plan.nodes, weights=plan.gpus, minlength=node_vc.size) <= PER_NODE).all()
        per_vc = np.bincount(job_vc[plan.jobs], weights=plan.gpus, minlength=len(bounds) - 1)
        assert (per_vc <= np.diff(bounds) * PER_NODE).all()
        held = plan.per_job(len(job_vc))
        assert ((held == 0) | (held == view.requested)).all()  # gang-scheduled: all requested GPUs or none


HAND_LAYOUT = {"a": 1, "b": 2, "c": 1, "d": 2}
#: (arrival, duration, GPUs, VC) in submission order (the reader's job order), and the hand-computed
#: (start, end) of each: a's head (8 GPUs) blocks the 2-GPU jobs behind it though 4 GPUs are free; in
#: b, the 12-GPU job takes the free node and 4 GPUs beside the 1-GPU job; in d, 2 + 2 free GPUs on
#: two nodes do not hold a 4-GPU job
HAND_JOBS = [(0, 100, 4, "a"), (0, 50, 6, "d"), (1, 50, 6, "d"), (2, 10, 4, "d"), (5, 30, 16, "b"),
             (6, 20, 1, "b"), (10, 50, 8, "a"), (20, 10, 2, "a"), (40, 100, 12, "b"), (41, 5, 4, "b"),
             (42, 1, 2, "a")]
HAND_SCHEDULE = [(0, 100), (0, 50), (1, 51), (50, 60), (5, 35), (35, 55), (100, 150), (150, 160), (40, 140),
                 (55, 60), (150, 151)]


def test_consolidate_rules():
    # one node: best fit, ties to the lowest node; free GPUs spread over nodes do not count
    assert consolidate(np.array([8, 3, 5, 3]), 3, 8)[0].tolist() == [1]
    assert consolidate(np.array([2, 2, 2]), 4, 8) is None
    # whole nodes: the lowest entirely free ones
    nodes, gpus = consolidate(np.array([7, 8, 8, 8]), 16, 8)
    assert nodes.tolist() == [1, 2] and gpus.tolist() == [8, 8]
    assert consolidate(np.array([8, 7, 8]), 24, 8) is None
    # whole nodes and a rest: the next free node, else the partial node with the most free GPUs
    nodes, gpus = consolidate(np.array([8, 5, 8, 8]), 12, 8)
    assert nodes.tolist() == [0, 2] and gpus.tolist() == [8, 4]
    nodes, gpus = consolidate(np.array([3, 8, 6, 6]), 12, 8)
    assert nodes.tolist() == [1, 2] and gpus.tolist() == [8, 4]
    assert consolidate(np.array([3, 8, 3, 3]), 12, 8) is None


def test_hand_trace_schedule(tmp_path):
    log, config = write_log(tmp_path, HAND_JOBS, HAND_LAYOUT)
    view, policy, result = run_recorded(log, config)
    jobs = result.jobs
    assert list(zip(jobs["start"].tolist(), jobs["finish"].tolist())) == HAND_SCHEDULE
    start, end = reference(HAND_JOBS, HAND_LAYOUT)
    assert [(start[i], end[i]) for i in range(len(HAND_JOBS))] == HAND_SCHEDULE
    check_inside_vcs(view, policy)
    # placements: job 8 (12 GPUs in b at t=40) on b's free node 2 and 4 GPUs of node 1 beside job 5
    t, plan = next((t, p) for t, p in policy.plans if 8 in p.jobs)
    mine = plan.jobs == 8
    assert t == 40 and sorted(zip(plan.nodes[mine].tolist(), plan.gpus[mine].tolist())) == [(1, 4), (2, 8)]
    assert result.summary["jobs_completed"] == len(HAND_JOBS)


@st.composite
def vc_workloads(draw):
    layout = {f"v{k}": draw(st.integers(1, 3)) for k in range(draw(st.integers(1, 3)))}
    n = draw(st.integers(1, 25))
    sizes = st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 20, 32])
    jobs = [(draw(st.integers(0, 120)), draw(st.integers(1, 60)), draw(sizes), draw(st.sampled_from(sorted(layout))))
            for _ in range(n)]
    first = min(job[0] for job in jobs)  # arrivals count from the first submission
    return sorted(((a - first, *rest) for a, *rest in jobs), key=lambda job: job[0]), layout


@given(vc_workloads())
def test_fifo_inside_vcs_and_as_published(tmp_path_factory, case):
    jobs, layout = case
    log, config = write_log(tmp_path_factory.mktemp("vc"), jobs, layout)
    view, policy, result = run_recorded(log, config)
    check_inside_vcs(view, policy)
    start, end = reference(jobs, layout)
    fits = [job[2] <= layout[job[3]] * PER_NODE for job in jobs]
    got = list(zip(result.jobs["start"].tolist(), result.jobs["finish"].tolist()))
    assert [got[i] for i in range(len(jobs)) if fits[i]] == [(start[i], end[i]) for i in range(len(jobs)) if fits[i]]
    assert (result.jobs["state"][~np.array(fits)] == "declined").all()


def test_vc_constraint_binds_every_policy(tmp_path):
    # dlas-gpu fills the cluster, not a VC: the engine stops it, naming the policy and the VC
    log, config = write_log(tmp_path, [(0, 10, 8, "a"), (0, 10, 8, "a")], {"a": 1, "b": 1})
    with pytest.raises(SimulationError, match=r"dlas-gpu allocated 16 GPUs in VC a of 8"):
        simulate_job_log(log, config, policy="dlas-gpu")

    class Elsewhere(HeliosFifo):
        name = "elsewhere"

        def allocate(self, view):
            plan = super().allocate(view)
            return NodePlan(plan.jobs, 1 - plan.nodes, plan.gpus)

    view = slot_view(job_log_workload(log, config), None, "elsewhere")
    with pytest.raises(SimulationError, match=r"elsewhere put job 0 of VC a on node 1 of VC b"):
        Engine(view, Elsewhere(), SlotConfig(slot=1.0)).run()


def test_counts_placed_inside_vcs():
    first, placed = place_in_vcs(np.array([8, 4, 4, 4]), np.array([0, 3, 1, 2]), 8, np.array([1, 0, 1, 0]),
                                 np.array([0, 1, 3]))
    assert placed.all() and first.tolist() == [8, 4, 16, 0]


def test_unknown_vc_is_one_line(tmp_path):
    log, config = write_log(tmp_path, [(0, 10, 1, "a"), (3, 10, 1, "zz")], {"a": 1})
    workload = job_log_workload(log, config)
    stray = replace(workload, jobs=Jobs.from_job_log(read_job_log(log)))  # the log read without the VC filter
    with pytest.raises(ClusterSpecError, match=r"job 1 is in VC 'zz', which the cluster does not have \(VCs: a\)$"):
        slot_view(stray, None, "fifo-helios")


def test_run_time_jobs_are_gang_scheduled(tmp_path):
    log, config = write_log(tmp_path, [(0, 10, 4, "a")], {"a": 1})
    view = slot_view(job_log_workload(log, config), None, "fifo-helios")
    assert view.gpu_counts.tolist() == [4] and view.rates.tolist() == [[1.0]]
    assert view.caps("table").tolist() == [4]


def test_cli_request_runs_a_job_log(tmp_path):
    log, config = write_log(tmp_path, HAND_JOBS, HAND_LAYOUT)
    result = run_request(SimulateRequest(trace=str(log), vc_config=str(config), submitted="0,41"))
    assert result.summary["policy"] == "fifo-helios" and result.summary["jobs"] == 10
    with pytest.raises(ValueError, match="--vc-config"):
        run_request(SimulateRequest(trace=str(log), submitted="0,41"))


def test_philly_week(shared_data):
    start = time.perf_counter()
    result = simulate_job_log(shared_data / "pollux/traces/philly.csv", shared_data / "lucid/philly/vc_config.csv",
                              window=("2017-10-01 00:00:00", "2017-10-07 23:59:00"))
    wall = time.perf_counter() - start
    s = result.summary
    assert s["jobs"] == s["jobs_completed"] == 10_650 and s["gpus"] == 2816
    assert s["queueing_delay_mean"] > 0 and s["average_jct"] > s["queueing_delay_mean"]
    print(f"Philly week, fifo-helios: {wall:.1f} s, average JCT {s['average_jct']:.0f} s, "
          f"queueing delay {s['queueing_delay_mean']:.0f} s (p99.9 {s['queueing_delay_p999']:.0f} s)")
