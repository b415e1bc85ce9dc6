"""`schedopt run` on a multi-node Ray cluster of emulated heterogeneous GPUs: a head (with 4
untyped ``slot`` resources, the single-node way) and three worker nodes started as separate
raylets on this machine (``ray.cluster_utils.Cluster``), one advertising 2 ``v100`` slots and two
advertising 1 ``p100`` slot each."""

import contextlib
import io
import json
import logging
import os
import signal
import threading
import time

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from runtime_bridge.placement import Node, labelled_gpus, place, typed_nodes

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")

from ray.cluster_utils import Cluster  # noqa: E402

from runtime_bridge.checkpoint import load_checkpoint  # noqa: E402
from runtime_bridge.ray_executor import RayExecutor, task_resources  # noqa: E402
from schedopt import output  # noqa: E402
from schedopt.cli import app  # noqa: E402
from simulator.executor import MAX_FAILED_LEASES, SimulatedExecutor  # noqa: E402
from simulator.readers.traces import read_trace  # noqa: E402
from simulator.simulate import simulate  # noqa: E402
from simulator.throughputs import ThroughputTable, write_gavel_json  # noqa: E402

#: a 300 s round is a lease of at most 3 s of wall clock planning 3 steps at 0.01 steps/s, of which
#: the tiny models train the ceil(3 x 0.01) = 1 that earns the plan (see test_runtime_ray.py)
ROUND, SCALE, RATE = 300.0, 0.01, 0.01
TYPES = ("v100", "p100")
NODES = ({"v100": 2}, {"p100": 1}, {"p100": 1})

#: (job type, scale factor, total steps, arrival)
JOBS = [("ResNet-18 (batch size 8)", 1, 6, 0.0), ("Transformer (batch size 4)", 1, 9, 0.0),
        ("Recommendation (batch size 64)", 1, 6, 150.0), ("LM (batch size 4)", 1, 9, 300.0)]


def test_place_puts_each_lease_on_one_node_of_its_type_largest_first_best_fit():
    nodes = [Node("a", {"v100": 2}), Node("b", {"p100": 1}), Node("c", {"p100": 2, "v100": 1})]
    assert place(["v100", "v100", "p100", "p100"], [2, 1, 1, 2], nodes) == [("a", ""), ("c", ""), ("b", ""),
                                                                             ("c", "")]
    (_, big), (_, full) = place(["p100", "p100"], [3, 1], nodes[1:2])
    assert big == "3 p100 GPUs on one node: the largest live p100 node has 1 (a lease is never split over nodes)"
    assert full == ""
    assert place(["p100", "p100"], [1, 1], nodes[1:2])[1] == ("", "no live p100 node has 1 free GPUs (a node was "
                                                                 "lost)")
    assert labelled_gpus(TYPES, nodes) == {"v100": 3, "p100": 3}
    listed = [{"NodeID": "h", "Alive": True, "Resources": {"CPU": 1.0, "slot": 4.0}},
              {"NodeID": "a", "Alive": True, "Resources": {"v100": 2.0}},
              {"NodeID": "d", "Alive": False, "Resources": {"p100": 1.0}}]
    assert typed_nodes(TYPES, listed) == [Node("a", {"v100": 2})]


def test_gpu_nodes_without_labels_serve_the_type_their_gpu_model_names():
    listed = [{"NodeID": "a", "Alive": True, "Resources": {"GPU": 8.0, "accelerator_type:V100": 1.0}},
              {"NodeID": "b", "Alive": True, "Resources": {"GPU": 4.0, "accelerator_type:A100-80G": 1.0}},
              {"NodeID": "c", "Alive": True, "Resources": {"GPU": 2.0, "accelerator_type:V100": 1.0, "p100": 2.0}},
              {"NodeID": "d", "Alive": True, "Resources": {"GPU": 1.0, "accelerator_type:T4": 1.0}},
              {"NodeID": "e", "Alive": True, "Resources": {"CPU": 4.0, "accelerator_type:V100": 1.0}}]
    nodes = typed_nodes(("v100", "a100", "p100"), listed)
    assert nodes == [Node("a", {"v100": 8}, detected=True), Node("b", {"a100": 4}, detected=True),
                     Node("c", {"p100": 2})]  # a label wins over the model; no GPU count, no type
    assert place(["a100", "v100"], [4, 8], nodes) == [("b", ""), ("a", "")]
    assert task_resources("v100", 2, "a", uses_gpus=True, detected=True) == {"num_gpus": 2, "node": "a"}
    assert task_resources("p100", 2, "c", uses_gpus=True) == {"num_gpus": 2, "resources": {"p100": 2}, "node": "c"}
    assert task_resources("p100", 1, "c", uses_gpus=False) == {"num_cpus": 0, "resources": {"p100": 1}, "node": "c"}
    assert task_resources("", 3, None, uses_gpus=False) == {"num_cpus": 0, "resources": {"slot": 3}}
    assert task_resources("", 3, None, uses_gpus=True) == {"num_gpus": 3}


@pytest.fixture(scope="module")
def cluster():
    # a lost node is declared dead within about a second (health checks every 0.3 s)
    checks = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 300, "health_check_failure_threshold": 3}
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"slot": 4},
                                                          "include_dashboard": False, "_system_config": checks})
    try:
        for resources in NODES:
            nodes.add_node(num_cpus=1, resources=resources)
        ray.init(address=nodes.address, log_to_driver=False, logging_level=logging.ERROR)
        nodes.wait_for_nodes()
        yield nodes
    finally:
        ray.shutdown()
        nodes.shutdown()


def node_types():
    """Worker types each Ray node advertises, by node id."""
    return {node["NodeID"]: {t for t in TYPES if node["Resources"].get(t)} for node in ray.nodes() if node["Alive"]}


def write_jobs(folder, jobs):
    """A Gavel trace and a table giving every job RATE steps/s on both types."""
    trace = folder / "jobs.trace"
    trace.write_text("".join(f"{t}\tcmd\t\t--n\t0\t{steps}\t{s}\t1\t-1\t{arrival}\n" for t, s, steps, arrival in jobs))
    keys = tuple(dict.fromkeys((t, s) for t, s, _, _ in jobs))
    rates = np.full((len(keys), len(TYPES)), RATE)
    return read_trace(trace), ThroughputTable(TYPES, keys, rates, np.full(rates.shape, np.nan))


def schedule(log):
    """Per lease: (round, job, worker type, planned, credited), in order (an executor not given the
    worker types records their index)."""
    return sorted((lease.round, lease.job, TYPES[int(lease.worker_type)] if lease.worker_type.isdigit()
                   else lease.worker_type, lease.planned, lease.credited) for lease in log)


def round_run(trace, table, executor, cluster="v100=2,p100=2", policy="max_min_fairness_perf"):
    return simulate(trace, policy=policy, cluster=cluster, throughputs=table, round_length=ROUND, executor=executor)


def test_a_round_policy_runs_each_lease_on_a_node_of_its_type_as_on_one_node(cluster, tmp_path):
    trace, table = write_jobs(tmp_path, JOBS)
    simulated = round_run(trace, table, SimulatedExecutor())
    with RayExecutor(trace.job_types, tmp_path / "one", time_scale=SCALE) as one_node:
        single = round_run(trace, table, one_node)
    assert not one_node.typed and one_node.capacity == 4
    with RayExecutor(trace.job_types, tmp_path / "many", time_scale=SCALE, worker_types=TYPES) as executor:
        real = round_run(trace, table, executor)
    assert executor.typed and executor.capacities == {"v100": 2, "p100": 2}
    failures = [lease.reason for lease in executor.log if lease.reason]
    assert real.summary["jobs_completed"] == 4 and real.summary["failed_leases"] == 0, failures
    types = node_types()
    assert {lease.node for lease in one_node.log} == {cluster.head_node.node_id}
    assert all(lease.worker_type in types[lease.node] for lease in executor.log)
    assert len({lease.node for lease in executor.log}) == 3  # both p100 nodes and the v100 one
    assert schedule(executor.log) == schedule(one_node.log)
    assert all(lease.credited == lease.planned for lease in executor.log)
    for key in ("state", "work_done"):
        assert real.jobs[key].tolist() == single.jobs[key].tolist() == simulated.jobs[key].tolist()
    assert (real.jobs["finish"] <= simulated.jobs["finish"]).all()  # the models outrun the table
    for job in range(len(JOBS)):
        leases = [lease for lease in executor.log if lease.job == job]
        assert load_checkpoint(executor.checkpoint(job))["step"] == sum(lease.trained for lease in leases)
    table = executor.lease_table()
    assert table["node"].tolist() == [lease.node for lease in executor.log]
    assert set(table["worker_type"].tolist()) == set(TYPES)


def test_a_slot_policy_runs_on_the_nodes_of_its_one_type(cluster, tmp_path):
    trace, table = write_jobs(tmp_path, JOBS)

    def slot_run(executor):
        return simulate(trace, policy="edf", cluster="p100=2", throughputs=table, deadlines="uniform:2:3", slot=ROUND,
                        executor=executor)

    simulated = slot_run(None)
    with RayExecutor(trace.job_types, tmp_path / "ckpt", time_scale=SCALE, worker_types=("p100",)) as executor:
        real = slot_run(executor)
    failures = [lease.reason for lease in executor.log if lease.reason]
    assert real.summary["failed_leases"] == 0, failures
    assert real.jobs["state"].tolist() == simulated.jobs["state"].tolist()
    assert real.summary["jobs_completed"] == simulated.summary["jobs_completed"] >= 3
    types = node_types()
    assert {lease.worker_type for lease in executor.log} == {"p100"}
    assert all("p100" in types[lease.node] for lease in executor.log)
    assert len({lease.node for lease in executor.log}) == 2


def test_a_gang_runs_on_one_node_of_its_type_or_is_refused_with_the_reason(cluster, tmp_path):
    trace, table = write_jobs(tmp_path, [("Recommendation (batch size 64)", 2, 3, 0.0)])
    with RayExecutor(trace.job_types, tmp_path / "v100", time_scale=SCALE, worker_types=("v100",)) as executor:
        fits = round_run(trace, table, executor, cluster="v100=2", policy="fifo_perf")
    assert fits.summary["jobs_completed"] == 1, [lease.reason for lease in executor.log]
    (lease,) = executor.log
    assert lease.gpus == 2 and node_types()[lease.node] == {"v100"}
    with RayExecutor(trace.job_types, tmp_path / "p100", time_scale=SCALE, worker_types=("p100",)) as executor:
        refused = round_run(trace, table, executor, cluster="p100=2", policy="fifo_perf")
    assert refused.summary["jobs_failed"] == 1 and len(executor.log) == MAX_FAILED_LEASES
    assert all(lease.node == "" and lease.reason.startswith("2 p100 GPUs on one node: the largest live p100 node "
                                                            "has 1") for lease in executor.log)
    assert not executor.checkpoint(0).exists()  # no task ran
    assert any("a lease is never split over nodes" in note for note in refused.summary["notes"])


def test_worker_types_the_nodes_do_not_advertise_are_refused(cluster, tmp_path):
    with pytest.raises(ValueError, match="advertise worker types v100 but not k80"):
        RayExecutor(["LM (batch size 4)"], tmp_path, worker_types=("v100", "k80"))
    with RayExecutor(["LM (batch size 4)"], tmp_path, worker_types=TYPES) as executor:
        executor.check_fits({"v100": 2, "p100": 1})
        with pytest.raises(ValueError, match="the cluster has 3 p100 GPUs; the Ray cluster holds 2 slots of that"):
            executor.check_fits({"v100": 1, "p100": 3})


def test_cli_runs_on_the_cluster_with_the_expected_wall_time_a_progress_bar_and_shared_checkpoints(
        cluster, tmp_path, monkeypatch):
    trace, table = write_jobs(tmp_path, JOBS[:2])
    write_gavel_json(table, tmp_path / "table.json")
    out, shared = tmp_path / "out", tmp_path / "shared"
    bar = Console(file=io.StringIO(), force_terminal=True, width=200)
    monkeypatch.setattr(output, "err", bar)
    result = CliRunner().invoke(app, ["run", "--trace", trace.source, "--throughputs", str(tmp_path / "table.json"),
                                      "--policy", "fifo_perf", "--solver", "highs", "--cluster", "v100=1,p100=1",
                                      "--round", str(ROUND), "--time-scale", str(SCALE), "--out", str(out),
                                      "--address", cluster.address, "--checkpoint-dir", str(shared)])
    assert result.exit_code == 0, result.output
    simulated = round_run(trace, table, SimulatedExecutor(), cluster="v100=1,p100=1", policy="fifo_perf")
    expected = simulated.summary["makespan"] * SCALE
    assert f"expected wall time: {expected:,.1f} s (simulated makespan x time scale)" in result.output
    assert "running" in bar.file.getvalue()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_completed"] == 2 and summary["failed_leases"] == 0
    assert {p.name for p in shared.glob("job-*.pt")} == {"job-0.pt", "job-1.pt"}
    assert not (out / "checkpoints").exists()
    header, *rows = (out / "leases.csv").read_text().splitlines()
    columns = header.split(",")
    types = node_types()
    for row in rows:
        cells = dict(zip(columns, row.split(",")))
        assert cells["worker_type"] in types[cells["node"]]



class Rejoining(RayExecutor):
    """A run whose round 2 loses a p100 node (its raylet and its lease's worker SIGKILLed, by pid,
    once that lease trains: its worker's pid marker is written; a worker left alive could finish
    its lease before it sees its raylet gone) and whose round 3 finds a new p100 node started
    (from this thread, as Ray wants; the jobs may all be done by round 4)."""

    def __init__(self, cluster, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cluster, self.lost, self.rejoined, self.on_p100 = cluster, [], [], {}

    def execute(self, leases):
        self.on_p100.clear()
        if self.rounds == 1:
            threading.Thread(target=self.kill).start()
        if self.rounds == 2:
            self.rejoined.append(self.cluster.add_node(num_cpus=1, resources={"p100": 1}).node_id)
            self.cluster.wait_for_nodes()  # registered before this round's placement reads the nodes
        return super().execute(leases)

    def _submit(self, job, worker_type, gpus, node, steps, seconds):
        if worker_type == "p100":
            self.on_p100[job] = node
        return super()._submit(job, worker_type, gpus, node, steps, seconds)

    def kill(self):
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            running = [job for job in list(self.on_p100) if self.marker(job).exists()]
            if running:
                break
            time.sleep(0.005)
        else:
            return
        worker = int(self.marker(running[0]).read_text())
        node = next(n for n in self.cluster.worker_nodes if n.node_id == self.on_p100[running[0]])
        os.kill(node.all_processes["raylet"][0].process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):  # a machine's loss takes its workers with it
            os.kill(worker, signal.SIGKILL)
        self.lost.append(node.node_id)
        self.cluster.remove_node(node, allow_graceful=False)


def test_a_killed_node_fails_its_leases_whose_jobs_resume_elsewhere_and_a_rejoined_node_is_used(cluster, tmp_path):
    # rounds of 150 s at 20 steps/s: leases train for most of their 1.5 s budgets (a tiny ResNet does
    # 15-40 steps/s here), so the kill lands mid-lease; every job needs 3 rounds or more
    steps, round_length = 9000, 150.0
    trace, table = write_jobs(tmp_path, [("ResNet-18 (batch size 8)", 1, steps, 0.0)] * 4)
    table = ThroughputTable(TYPES, table.keys, table.isolated * 20 / RATE, table.unconsolidated)
    with Rejoining(cluster, trace.job_types, tmp_path / "ckpt", time_scale=SCALE, worker_types=TYPES) as executor:
        result = simulate(trace, policy="max_min_fairness_perf", cluster="v100=2,p100=2", throughputs=table,
                          round_length=round_length, executor=executor)
    lost, rejoined = executor.lost, executor.rejoined
    failed = [lease for lease in executor.log if lease.failed]
    assert failed and all(lease.credited == 0 for lease in failed)
    # Ray names the loss NodeDiedError, or (where the worker's death is seen first) WorkerCrashedError
    died = [lease.reason for lease in failed if lease.node == lost[0]]
    assert died and all("Error" in why for why in died), died
    assert rejoined[0] in {lease.node for lease in executor.log if not lease.failed}  # a new raylet, used since
    assert set(result.jobs["state"].tolist()) <= {"finished", "failed"}  # none lost
    assert result.summary["jobs_completed"] + result.summary["jobs_failed"] == 4
    assert result.summary["redone_gpu_seconds"] == pytest.approx(sum(lease.planned_seconds * lease.gpus
                                                                     for lease in failed))
    for job in np.flatnonzero(result.jobs["state"] == "finished"):
        done = [lease for lease in executor.log if lease.job == job and not lease.failed]
        assert [lease.start_step for lease in done] == list(np.cumsum([0] + [le.trained for le in done[:-1]]))
        assert sum(lease.credited for lease in done) == steps
