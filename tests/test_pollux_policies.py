"""Pollux's co-adaptive job model on the one engine, and the baselines of Pollux's artifact against
its published results."""

from __future__ import annotations

import json

import numpy as np
import pytest

from allocators.pollux.placement import PolluxSystemPolicy, fill_most_free
from allocators.slot_plans import JobsView
from simulator.applications import read_application
from simulator.coadaptive import CoAdaptiveJobs
from simulator.simulate import simulate_pollux


def _published(shared_data, policy: str, workload: str) -> float:
    summary = json.loads((shared_data / "pollux" / "results-jobload" / f"{policy}-1.0" / "summary.json").read_text())
    return summary["avgs"][workload]


def test_a_fixed_batch_job_runs_each_epoch_in_its_measured_time_rounded(shared_data):
    bert = read_application(shared_data / "pollux" / "traces" / "bert")
    jobs = CoAdaptiveJobs([bert], np.array([12]))
    jobs.reallocate(0, (1,))
    assert (jobs.atomic[0], jobs.accum[0]) == (12, 0)
    step, _ = bert.step_time((1,), 12)
    epoch = [round(bert.boundaries[1] / (1 / step)), round((bert.boundaries[2] - bert.boundaries[1]) / (1 / step))]
    assert jobs.advance(0, 10 ** 9) == sum(epoch)
    assert jobs.done[0] and jobs.epochs_done(np.array([0]))[0] == 2


def test_an_adaptive_job_profiles_fits_and_may_double_its_gpus(shared_data):
    cifar = read_application(shared_data / "pollux" / "traces" / "cifar10")
    jobs = CoAdaptiveJobs.for_policy([cifar], np.array([2048]), adaptive=True)
    assert jobs.max_replicas(0) == 1 and jobs.perf[0] is None
    jobs.reallocate(0, (2,))
    assert jobs.batch(0) == max(cifar.init_batch, 2 * cifar.min_local)
    jobs.advance(0, 60)
    assert jobs.perf[0] is not None and jobs.max_replicas(0) == 4
    assert np.isfinite(jobs.speedups(0, np.array([1, 2]), np.array([4, 8]), 4)).all()


class _Mover(PolluxSystemPolicy):
    """Runs every active job on one GPU, on another node at each decision."""

    name = "mover"

    def allocate(self, view: JobsView) -> np.ndarray:
        plan = np.zeros_like(view.nodes)
        for j in view.active().tolist():
            plan[j, (view.decisions + j) % plan.shape[1]] = 1
        return plan


def test_a_job_moved_at_every_decision_pays_the_restart_delay_each_time(shared_data, tmp_path, monkeypatch):
    from allocators import registry

    monkeypatch.setitem(registry.SLOT_POLICIES, "mover", _Mover)
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "w.csv").write_text("name,time,application,num_replicas,batch_size\n"
                                                  "bert-0,0,bert,1,12\n")
    (tmp_path / "traces").symlink_to(shared_data / "pollux" / "traces")
    moved = simulate_pollux(tmp_path / "workloads" / "w.csv", policy="mover")
    still = simulate_pollux(tmp_path / "workloads" / "w.csv", policy="tiresias")
    intervals = still.summary["decisions"] - 1
    assert still.jobs["overhead_seconds"][0] == 30.0
    assert moved.jobs["overhead_seconds"][0] >= 30.0 * (intervals + 1)
    assert moved.jobs["jct"][0] > still.jobs["jct"][0] + 30.0 * intervals


def test_fill_most_free_takes_the_emptiest_nodes_first():
    free = np.array([2, 4, 1, 4])
    assert fill_most_free(free, 6).tolist() == [0, 4, 0, 2]
    assert free.tolist() == [2, 0, 1, 2]
    with pytest.raises(ValueError, match="no free GPU"):
        fill_most_free(np.zeros(2, dtype=np.int64), 1)


@pytest.mark.parametrize("policy, rel", [("tiresias", 1e-9), ("optimus", 1e-3)])
def test_the_baselines_reproduce_the_published_simulator_on_workload_6(shared_data, policy, rel):
    result = simulate_pollux(shared_data / "pollux" / "workloads" / "workload-6.csv", policy=policy)
    assert result.summary["jobs_completed"] == 160
    assert result.summary["average_jct"] == pytest.approx(_published(shared_data, policy, "workload-6"), rel=rel)
    assert (result.timeline["busy_gpus"] <= 64).all()


def test_pollux_runs_a_small_workload_within_the_cluster_and_logs_its_programs(shared_data, tmp_path):
    (tmp_path / "workloads").mkdir()
    rows = ["cifar10-0,0,cifar10,4,2048", "ncf-1,30,ncf,1,32768", "bert-2,200,bert,4,384",
            "cifar10-3,400,cifar10,2,1024", "deepspeech2-4,500,deepspeech2,4,320"]
    (tmp_path / "workloads" / "w.csv").write_text("name,time,application,num_replicas,batch_size\n"
                                                  + "\n".join(rows) + "\n")
    (tmp_path / "traces").symlink_to(shared_data / "pollux" / "traces")
    result = simulate_pollux(tmp_path / "workloads" / "w.csv", policy="pollux", nodes=2, gpus_per_node=4)
    assert result.summary["jobs_completed"] == 5
    assert (result.timeline["busy_gpus"] <= 8).all()
    assert result.summary["programs_solved"] == len(result.solves["objective"]) > 0
    assert set(result.solves["status"]) <= {"optimal", "feasible"}
    alloc = result.allocations
    starts, per_interval = np.unique(alloc["start"], return_inverse=True)
    assert (np.bincount(per_interval, weights=alloc["gpus"]) <= 8).all() and (alloc["end"] > alloc["start"]).all()
    assert ((alloc["nodes"] >= 1) & (alloc["nodes"] <= np.minimum(alloc["gpus"], 2))).all()
    held = {job: float(((alloc["end"] - alloc["start"]) * alloc["gpus"])[alloc["job_id"] == job].sum())
            for job in result.jobs["job_id"]}
    for job, used in zip(result.jobs["job_id"], result.jobs["gpu_seconds_gpu"]):  # held to the interval's end
        assert used - 1e-6 <= held[job] < used + 8 * 60
    ncf = alloc["job_id"] == "ncf-1"
    assert set(alloc["batch_size"][ncf]) == {32768}  # pinned at its largest batch, as published
    cifar = alloc["batch_size"][alloc["job_id"] == "cifar10-0"]
    assert cifar.min() >= 128 and np.unique(cifar).size > 1  # co-adapted as it runs
    written = result.write(tmp_path / "out")
    assert (tmp_path / "out" / "allocations.csv") in written
    header = (tmp_path / "out" / "allocations.csv").read_text().splitlines()[0]
    assert header == "start,end,job_id,gpus,nodes,batch_size"


def test_a_policy_reading_goodput_models_on_a_workload_without_them_is_one_clear_error():
    from simulator.example_table import example_table
    from simulator.generator import generate_trace
    from simulator.simulate import simulate

    trace = generate_trace(example_table(), 4, seed=0)
    with pytest.raises(ValueError, match="policy 'pollux' reads the jobs' goodput models"):
        simulate(trace, policy="pollux", cluster="v100=8", gpus_per_server=4, deadlines="uniform:0.5:1.5")


def test_other_systems_policies_run_on_a_pollux_workload(shared_data, tmp_path):
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "w.csv").write_text("name,time,application,num_replicas,batch_size\n"
                                                  "cifar10-0,0,cifar10,4,2048\nbert-1,100,bert,2,384\n")
    (tmp_path / "traces").symlink_to(shared_data / "pollux" / "traces")
    for policy in ("dlas-gpu", "themis", "max_min_fairness_perf"):
        result = simulate_pollux(tmp_path / "workloads" / "w.csv", policy=policy, nodes=2, gpus_per_node=4)
        assert result.summary["jobs_completed"] == 2, policy
