"""Round plans run for real: Ray tasks training tiny reference models on emulated GPU slots."""

import csv
import dataclasses
import json
import math
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest
from typer.testing import CliRunner

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")

from allocators import make_policy  # noqa: E402
from runtime_bridge.checkpoint import load_checkpoint  # noqa: E402
from runtime_bridge.fidelity import compare  # noqa: E402
from runtime_bridge.job_map import workload_spec  # noqa: E402
from runtime_bridge.journal import Journal, JournalError  # noqa: E402
from runtime_bridge.profiler import threads_per_gpu  # noqa: E402
from runtime_bridge.ray_executor import RayExecutor, _train  # noqa: E402
from schedopt.cli import app  # noqa: E402
from simulator.cluster import parse_cluster  # noqa: E402
from simulator.engine import Engine, SimulationConfig  # noqa: E402
from simulator.executor import MAX_FAILED_LEASES, SimulatedExecutor  # noqa: E402
from simulator.readers.traces import read_trace  # noqa: E402
from simulator.round_view import build_round_view  # noqa: E402
from simulator.simulate import simulate  # noqa: E402
from simulator.throughputs import ThroughputTable, write_gavel_json  # noqa: E402

#: a round of 300 simulated seconds is a lease of at most 3 s; at the table's 0.01 steps/s it plans 3
#: steps, whose ceil(3 x 0.01) = 1 real step the tiny models train in far less, so leases end on their
#: step budget and earn their whole plan
ROUND, SCALE, RATE = 300.0, 0.01, 0.01

#: (job type, scale factor, total steps, arrival)
JOBS = [("ResNet-18 (batch size 8)", 1, 6, 0.0), ("Transformer (batch size 4)", 1, 9, 0.0),
        ("Recommendation (batch size 64)", 2, 6, 150.0), ("LM (batch size 4)", 1, 9, 300.0)]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, num_gpus=0, resources={"slot": 2}, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def write_jobs(folder, jobs, rate=RATE):
    """A Gavel 10-column trace and a one-type (``cpu``) table giving every job ``rate`` steps/s."""
    trace = folder / "jobs.trace"
    trace.write_text("".join(f"{t}\tcmd\t\t--n\t0\t{steps}\t{s}\t1\t-1\t{arrival}\n" for t, s, steps, arrival in jobs))
    keys = tuple(dict.fromkeys((t, s) for t, s, _, _ in jobs))
    rates = np.array([[rate(t) if callable(rate) else rate] for t, _ in keys])
    return read_trace(trace), ThroughputTable(("cpu",), keys, rates, np.full(rates.shape, np.nan))


def run(trace, table, executor, round_length=ROUND):
    w = build_round_view(trace, parse_cluster("cpu=2"), table)
    policy = make_policy("max_min_fairness_perf", "clarabel")
    return Engine(w, policy, SimulationConfig(round_length=round_length), executor=executor).run()


class Recording(SimulatedExecutor):
    def __init__(self):
        self.rounds = []

    def execute(self, leases):
        self.rounds.append((leases.start, leases.jobs.tolist(), leases.steps.tolist()))
        return super().execute(leases)


def by_round(log):
    rounds = {}
    for lease in log:
        start, jobs, steps = rounds.setdefault(lease.round, (lease.start, [], []))
        jobs.append(lease.job)
        steps.append(lease.planned)
    return [rounds[r] for r in sorted(rounds)]


def test_job_types_map_to_reference_workloads():
    assert workload_spec("ResNet-50 (batch size 64)", "tiny", 3) == workload_spec("x (batch size 64)", "tiny", 3)
    assert workload_spec("LM (batch size 80)").name == "transformer"
    assert workload_spec("Transformer (batch size 16)").batch_size == 16
    assert workload_spec("Recommendation (batch size 512)", "small").model_size == "small"
    assert workload_spec("A3C").batch_size == 32 and workload_spec("A3C").name == "resnet"


def test_a_lease_trains_on_the_executors_threads_which_default_to_the_profiles(tmp_path, monkeypatch):
    executor = RayExecutor(["ResNet-18 (batch size 8)"], tmp_path)
    assert executor.threads == threads_per_gpu("cpu") == 1
    assert RayExecutor(["ResNet-18 (batch size 8)"], tmp_path, threads=3).threads == 3
    with pytest.raises(ValueError, match="threads must be >= 1"):
        RayExecutor(["ResNet-18 (batch size 8)"], tmp_path, threads=0)
    seen, previous, real = [], torch.get_num_threads(), torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (seen.append(n), real(n)))
    spec = dataclasses.asdict(executor.specs[0])
    try:
        _train(spec, str(tmp_path / "job-0.pt"), str(tmp_path / "job-0.next-1.pt"), 2, 5.0, "cpu", 1, 3,
               str(tmp_path / "job-0.pid"))
    finally:
        real(previous)
    assert seen == [3]


def test_leases_train_for_real_on_the_simulated_schedule(tmp_path):
    trace, table = write_jobs(tmp_path, JOBS)
    recorder = Recording()
    simulated = run(trace, table, recorder)
    with RayExecutor(trace.job_types, tmp_path / "ckpt", time_scale=SCALE) as executor:
        real = run(trace, table, executor)
    failures = [lease.reason for lease in executor.log if lease.reason]
    assert real.summary["jobs_completed"] == 4 and real.summary["failed_leases"] == 0, failures
    assert by_round(executor.log) == recorder.rounds
    assert all(lease.credited == lease.planned and lease.trained == math.ceil(lease.planned * SCALE)
               and lease.budget_seconds == ROUND * SCALE for lease in executor.log)
    assert (executor.measured_rates() > RATE).all()
    for job in range(4):
        leases = [lease for lease in executor.log if lease.job == job]
        assert [lease.start_step for lease in leases] == list(np.cumsum([0] + [le.trained for le in leases[:-1]]))
        state = load_checkpoint(executor.checkpoint(job))
        assert state["step"] == sum(lease.trained for lease in leases)
        assert state["workload"]["seed"] == job
        # the job ends when its last lease's steps did: sooner than planned, as the models outrun the table
        assert real.jobs["finish"][job] == pytest.approx(leases[-1].start + leases[-1].seconds / SCALE)
        assert leases[-1].start < real.jobs["finish"][job] < simulated.jobs["finish"][job]


def kill_second_lease(executor, job, stop, killed):
    """SIGKILL the worker of ``job``'s lease that starts after its first successful one."""
    marker = executor.marker(job)
    while not stop.is_set():
        if any(lease.job == job and not lease.failed for lease in list(executor.log)) and marker.exists():
            pid = marker.read_text().strip()
            if pid:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
                return
        time.sleep(0.005)


def test_a_killed_worker_fails_its_lease_and_the_job_resumes_from_its_checkpoint(tmp_path):
    # in rounds of 60 s, job 0's leases are bounded by time (600 planned steps in 0.6 s), so
    # it is still training when killed
    jobs = [("ResNet-18 (batch size 16)", 1, 1800, 0.0), ("LM (batch size 4)", 1, 12, 0.0)]
    trace, table = write_jobs(tmp_path, jobs, rate=lambda t: 10.0 if t.startswith("ResNet") else 0.05)
    stop, killed = threading.Event(), []
    with RayExecutor(trace.job_types, tmp_path / "ckpt", time_scale=SCALE) as executor:
        watcher = threading.Thread(target=kill_second_lease, args=(executor, 0, stop, killed))
        watcher.start()
        try:
            result = run(trace, table, executor, round_length=60.0)
        finally:
            stop.set()
            watcher.join()
    assert len(killed) == 1
    leases = [lease for lease in executor.log if lease.job == 0]
    assert not leases[0].failed and leases[1].failed and not leases[2].failed
    assert "WorkerCrashedError" in leases[1].reason
    assert leases[2].start_step == leases[0].start_step + leases[0].trained
    assert result.summary["jobs_completed"] == 2 and result.jobs["failed_leases"].tolist() == [1, 0]
    assert result.jobs["work_done"][0] == 1800
    assert result.summary["redone_gpu_seconds"] == pytest.approx(60.0)  # the failed lease: 600 steps at 10/s, 1 GPU
    table = executor.lease_table()
    failed = table["reason"] != ""
    assert failed.tolist() == [lease.failed for lease in executor.log] and failed.sum() == 1
    assert table["credited"][failed].tolist() == [0] and np.isnan(table["start_step"][failed]).all()
    assert np.isnan(table["credited_over_planned"]).sum() == 0


@ray.remote(max_retries=0)
def _saves_then_dies(*args):
    _train(*args)
    raise RuntimeError("node lost after the lease's save")


class DiesAfterSave(RayExecutor):
    """Job 0's second lease trains and saves, then fails before its report reaches the driver."""

    def _submit(self, job, worker_type, gpus, node, steps, seconds):
        if job == 0 and sum(lease.job == 0 for lease in self.log) == 1:
            return _saves_then_dies.options(num_cpus=0, resources={"slot": gpus}).remote(
                dataclasses.asdict(self.specs[job]), str(self.checkpoint(job)), str(self.staged(job)), steps,
                seconds, "cpu", gpus, self.threads, str(self.marker(job)))
        return super()._submit(job, worker_type, gpus, node, steps, seconds)


def test_a_lease_that_fails_after_saving_leaves_the_jobs_checkpoint_as_it_was(tmp_path):
    trace, table = write_jobs(tmp_path, [("ResNet-18 (batch size 8)", 1, 9, 0.0)])
    with DiesAfterSave(trace.job_types, tmp_path / "ckpt", time_scale=SCALE) as executor:
        result = run(trace, table, executor)
    leases = executor.log
    assert [lease.failed for lease in leases] == [False, True, False, False]
    assert "node lost after the lease's save" in leases[1].reason
    done = [lease for lease in leases if not lease.failed]
    assert [lease.start_step for lease in done] == [0, 1, 2]  # resumed where the credited leases left it
    assert load_checkpoint(executor.checkpoint(0))["step"] == 3 and result.jobs["work_done"][0] == 9
    assert not list((tmp_path / "ckpt").glob("job-*.next-*"))


class Stops(RayExecutor):
    """A driver that stops (Ctrl-C) in round ``at``: as it starts (``when="starting"``), once its
    leases have reported and saved but before its journal line (``"journaling"``), or after that
    line before its checkpoints are adopted (``"adopting"``); counts the leases it runs."""

    def __init__(self, *args, at=0, when="starting", **kwargs):
        self.at, self.when, self.submitted = at, when, 0
        super().__init__(*args, **kwargs)
        if self.journal is not None and when == "journaling":
            append = self.journal.append

            def stopping(*rest):
                if self.rounds == self.at:
                    raise KeyboardInterrupt
                append(*rest)

            self.journal.append = stopping

    def execute(self, leases):
        if self.rounds + 1 == self.at and self.when == "starting":
            raise KeyboardInterrupt
        return super().execute(leases)

    def _commit(self, job, gpus, missing_ok=False, round=None):
        if self.rounds == self.at and self.when == "adopting" and not missing_ok:
            raise KeyboardInterrupt
        super()._commit(job, gpus, missing_ok, round)

    def _submit(self, *args):
        self.submitted += 1
        return super()._submit(*args)


@pytest.mark.parametrize("when", ["journaling", "adopting"])
def test_a_run_whose_driver_stopped_resumes_from_its_journal_and_checkpoints(tmp_path, when):
    trace, table = write_jobs(tmp_path, JOBS[:2])
    journal, folder = tmp_path / "journal.jsonl", tmp_path / "ckpt"
    with Stops(trace.job_types, folder, time_scale=SCALE, journal=Journal(journal), at=2, when=when) as first:
        with pytest.raises(KeyboardInterrupt):
            run(trace, table, first)
    journaled = [dataclasses.asdict(lease) for lease in first.log]
    assert {lease["round"] for lease in journaled} == {1} and list(folder.glob("job-*.next-2.pt"))  # round 2 saved
    adopting = when == "adopting"  # round 2 journaled, its checkpoints to adopt; else to drop, round 2 run again
    assert len(Journal(journal, resume=True).rounds) == 1 + adopting
    with Stops(trace.job_types, folder, time_scale=SCALE, journal=Journal(journal, resume=True)) as second:
        resumed = run(trace, table, second)
    recorder = Recording()
    run(trace, table, recorder)
    replayed = [lease for lease in second.log if lease.round <= 1 + adopting]
    assert [dataclasses.asdict(lease) for lease in replayed][:len(journaled)] == journaled
    assert second.submitted == len(second.log) - len(replayed)  # journaled rounds are not run again
    assert by_round(second.log) == recorder.rounds  # the plan of a run never stopped
    assert resumed.summary["jobs_completed"] == 2 and not list(folder.glob("job-*.next-*"))
    for job in range(2):
        leases = [lease for lease in second.log if lease.job == job]
        assert [lease.start_step for lease in leases] == list(np.cumsum([0] + [le.trained for le in leases[:-1]]))
        assert load_checkpoint(second.checkpoint(job))["step"] == sum(lease.trained for lease in leases)


def test_resuming_a_run_with_other_inputs_or_without_its_journal_says_so(tmp_path):
    trace, table = write_jobs(tmp_path, JOBS)
    journal, folder = tmp_path / "journal.jsonl", tmp_path / "ckpt"
    with pytest.raises(JournalError, match="no journal to resume from"):
        Journal(journal, resume=True)
    with Stops(trace.job_types, folder, time_scale=SCALE, journal=Journal(journal), at=3) as first:
        with pytest.raises(KeyboardInterrupt):
            run(trace, table, first)
    with RayExecutor(trace.job_types, folder, time_scale=SCALE, journal=Journal(journal, resume=True)) as second:
        with pytest.raises(JournalError, match="round 1 was journaled with other steps than this run plans"):
            run(trace, table, second, round_length=ROUND / 2)
    with pytest.raises(JournalError, match="resuming needs the checkpoints of jobs"):
        RayExecutor(trace.job_types, tmp_path / "elsewhere", time_scale=SCALE, journal=Journal(journal, resume=True))
    journal.write_text(journal.read_text() + '{"start": 0.0, "jobs"')  # a line the stop cut short
    assert len(Journal(journal, resume=True).rounds) == 2
    result = CliRunner().invoke(app, ["run", "--trace", str(tmp_path / "jobs.trace"), "--resume"])
    assert result.exit_code == 2 and "--resume continues the run in --out DIR" in result.output


def test_a_job_whose_leases_keep_failing_ends_failed_with_the_reason(tmp_path):
    trace, table = write_jobs(tmp_path, JOBS[:2])
    with RayExecutor(trace.job_types, tmp_path / "ckpt", time_scale=SCALE) as executor:
        executor.checkpoint(0).write_bytes(b"not a checkpoint")
        result = run(trace, table, executor)
    assert [lease.failed for lease in executor.log if lease.job == 0] == [True] * MAX_FAILED_LEASES
    assert result.summary["jobs_failed"] == 1 and result.summary["jobs_completed"] == 1
    assert (result.jobs["state"] == "failed").tolist() == [True, False]
    note = next(n for n in result.summary["notes"] if n.startswith("job 0 failed"))
    assert f"after {MAX_FAILED_LEASES} failed leases; last: CheckpointError:" in note


def test_cli_run_writes_the_simulate_outputs_with_measured_throughputs(tmp_path):
    trace, table = write_jobs(tmp_path, JOBS[:2])
    write_gavel_json(table, tmp_path / "table.json")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", "--trace", trace.source, "--throughputs", str(tmp_path / "table.json"),
                                      "--policy", "fifo_perf", "--solver", "highs", "--cluster", "cpu=2",
                                      "--round", str(ROUND), "--time-scale", str(SCALE), "--out", str(out),
                                      "--compare-simulation", "--no-progress"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_completed"] == 2 and summary["executor"] == "ray"
    # the tiny models outrun the table: every lease does its plan, and each job's last one ends early
    assert summary["average_jct_difference"] < 0.0
    assert "real run against the simulator" in result.output
    fidelity = (out / "fidelity.csv").read_text().splitlines()
    assert fidelity[0] == "job_id,jct_real,jct_simulated,jct_difference" and len(fidelity) == 3
    header, *rows = (out / "jobs.csv").read_text().splitlines()
    columns = header.split(",")
    assert len(rows) == 2
    for row in rows:
        cells = dict(zip(columns, row.split(",")))
        assert float(cells["table_steps_per_second"]) == RATE
        assert float(cells["measured_steps_per_second"]) > RATE
    assert (out / "checkpoints" / "job-1.pt").exists()
    assert summary["lease_credited_over_planned"] == 1.0
    with open(out / "leases.csv") as f:
        leases = list(csv.DictReader(f))
    assert {lease["job"] for lease in leases} == {"0", "1"}
    for lease in leases:
        assert int(lease["credited"]) == int(lease["planned"]) and lease["reason"] == ""
        assert float(lease["budget_seconds"]) == pytest.approx(ROUND * SCALE)  # the rest of the round
    # resuming the finished run replays every round from its journal: the same leases and jobs
    before = {name: (out / name).read_text() for name in ("leases.csv", "jobs.csv")}
    resumed = CliRunner().invoke(app, ["run", "--trace", trace.source, "--throughputs", str(tmp_path / "table.json"),
                                       "--policy", "fifo_perf", "--solver", "highs", "--cluster", "cpu=2",
                                       "--round", str(ROUND), "--time-scale", str(SCALE), "--out", str(out),
                                       "--no-progress", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert {name: (out / name).read_text() for name in before} == before


def test_cli_run_without_ray_says_what_to_install(tmp_path, monkeypatch):
    trace, _ = write_jobs(tmp_path, JOBS[:1])
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.delitem(sys.modules, "runtime_bridge.ray_executor")
    monkeypatch.delitem(sys.modules, "runtime_bridge.real_run", raising=False)
    result = CliRunner().invoke(app, ["run", "--trace", trace.source])
    assert result.exit_code == 2
    assert 'pip install -e ".[runtime]"' in result.output


def slot_run(trace, table, executor, policy="edf"):
    """``policy`` on the slot clock, deadlines drawn at 2-3x each job's isolated duration."""
    return simulate(trace, policy=policy, cluster="cpu=2", throughputs=table, deadlines="uniform:2:3",
                    slot=ROUND, executor=executor)


@pytest.mark.parametrize("policy", ["edf", "elasticflow"])
def test_slot_policies_train_for_real_on_the_simulated_schedule(tmp_path, policy):
    trace, table = write_jobs(tmp_path, JOBS)
    simulated = slot_run(trace, table, None, policy)
    with RayExecutor(trace.job_types, tmp_path / "ckpt", time_scale=SCALE) as executor:
        real = slot_run(trace, table, executor, policy)
    failures = [lease.reason for lease in executor.log if lease.reason]
    assert real.summary["failed_leases"] == 0, failures
    assert real.jobs["state"].tolist() == simulated.jobs["state"].tolist()
    assert real.summary["jobs_completed"] == simulated.summary["jobs_completed"] >= 3
    finished = real.jobs["state"] == "finished"
    assert (real.jobs["finish"][finished] <= simulated.jobs["finish"][finished]).all()  # the models outrun the table
    assert real.summary["deadline_satisfactory_ratio"] == simulated.summary["deadline_satisfactory_ratio"]
    for job in np.flatnonzero(real.jobs["state"] == "finished"):
        leases = [lease for lease in executor.log if lease.job == job]
        assert load_checkpoint(executor.checkpoint(job))["step"] == sum(lease.trained for lease in leases)
        assert all(lease.trained == math.ceil(lease.planned * SCALE) for lease in leases)
    np.testing.assert_allclose(executor.table_rates()[finished], RATE)


def test_a_slot_policy_job_whose_leases_keep_failing_ends_failed_with_the_reason(tmp_path):
    trace, table = write_jobs(tmp_path, JOBS[:2])
    with RayExecutor(trace.job_types, tmp_path / "ckpt", time_scale=SCALE) as executor:
        executor.checkpoint(0).write_bytes(b"not a checkpoint")
        result = slot_run(trace, table, executor)
    assert [lease.failed for lease in executor.log if lease.job == 0] == [True] * MAX_FAILED_LEASES
    assert result.summary["jobs_failed"] == 1 and result.summary["jobs_completed"] == 1
    assert result.summary["unfinished"] == 0
    assert result.jobs["state"].tolist() == ["failed", "finished"]
    assert any(n.startswith(f"job 0 failed after {MAX_FAILED_LEASES} failed leases; last: CheckpointError")
               for n in result.summary["notes"])


def test_cli_runs_a_slot_policy_for_real(tmp_path):
    trace, table = write_jobs(tmp_path, JOBS[:2])
    write_gavel_json(table, tmp_path / "table.json")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", "--trace", trace.source, "--throughputs", str(tmp_path / "table.json"),
                                      "--policy", "edf", "--deadlines", "uniform:2:3", "--cluster", "cpu=2",
                                      "--slot", str(ROUND), "--time-scale", str(SCALE), "--out", str(out),
                                      "--compare-simulation", "--no-progress"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "edf" and summary["jobs_completed"] == 2 and summary["executor"] == "ray"
    assert summary["average_jct_difference"] <= 0.0
    header = (out / "jobs.csv").read_text().splitlines()[0].split(",")
    assert {"measured_over_table", "state", "met_deadline"} <= set(header)


def test_fidelity_compares_job_by_job_and_on_the_summary(tmp_path):
    trace, table = write_jobs(tmp_path, JOBS)
    fast = run(trace, table, SimulatedExecutor())
    slow_table = ThroughputTable(table.worker_types, table.keys, table.isolated / 2, table.unconsolidated)
    slow = run(trace, slow_table, SimulatedExecutor())
    fidelity = compare(slow, fast)
    assert np.all(fidelity.jobs["jct_difference"] > 0)
    real, simulated, diff = fidelity.summary["average_jct"]
    assert diff == pytest.approx(real / simulated - 1) and diff > 0
    assert fidelity.mean_abs_jct_difference <= fidelity.max_abs_jct_difference
    with pytest.raises(ValueError, match="not of the same trace"):
        compare(slow, run(*write_jobs(tmp_path, JOBS[:2]), SimulatedExecutor()))


def test_a_lease_that_outlives_its_wall_budget_is_cancelled_and_fails(tmp_path):
    # no grace: a task cannot start, build its model and train within a 3 ms budget
    trace, table = write_jobs(tmp_path, JOBS[:1])
    with RayExecutor(trace.job_types, tmp_path / "ckpt", time_scale=1e-5, grace=0.0) as executor:
        result = run(trace, table, executor)
    reasons = [lease.reason for lease in executor.log]
    assert len(reasons) == MAX_FAILED_LEASES and all("did not end within" in r for r in reasons)
    assert result.summary["jobs_failed"] == 1 and result.summary["redone_gpu_seconds"] > 0


@pytest.mark.parametrize("policy", ["elasticflow", "max_min_fairness_perf"])
def test_cli_runs_a_deadline_trace_for_real_under_any_policy(tmp_path, policy):
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "m.csv").write_text("global_batch_size,1,2\n8,0.02,0.03\n")
    spec = tmp_path / "spec.csv"
    spec.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,1,2,64,256\n")
    trace = tmp_path / "trace.csv"
    trace.write_text("job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration,best_effort\n"
                     "0,0,6,m,3000,8,1,300,0\n1,0,9,m,4000,8,1,450,0\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", "--trace", str(trace), "--cluster-spec", str(spec), "--throughput-dir",
                                      str(tables), "--policy", policy, "--slot", "300", "--round", "300",
                                      "--time-scale", str(SCALE), "--out", str(out), "--compare-simulation",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == policy and summary["jobs_completed"] == 2 and summary["executor"] == "ray"
    assert summary["average_jct_difference"] <= 0.0
    assert summary["deadline_satisfactory_ratio"] == 1.0


def test_the_real_vs_simulated_benchmark_profiles_runs_and_reports_the_gap(tmp_path):
    from benchmarks.real_vs_simulated import main

    gap = main(["--out", str(tmp_path), "--device", "cpu", "--workloads", "recommendation", "--jobs", "2",
                "--work", "20:40", "--spacing", "10", "--round", "20", "--time-scale", "0.02", "--seconds", "0.2"])
    assert gap["device"] == "cpu" and gap["gpus"] == 2 and gap["failed_leases"] == 0 and gap["leases"] >= 2
    assert 0 < gap["credited_over_planned"] <= 1 and gap["measured_over_profiled"] > 0
    assert gap["makespan"] > 0 and gap["simulated_makespan"] > 0
    trace = (tmp_path / "jobs.trace").read_text().splitlines()
    assert len(trace) == 2 and all(line.startswith("Recommendation-8 (batch size 32)\t") for line in trace)
    assert {"jobs.csv", "leases.csv", "fidelity.csv", "summary.json"} <= {p.name for p in (tmp_path / "run").iterdir()}
    written = json.loads((tmp_path / "gap.json").read_text())
    assert written["average_jct_difference"] == pytest.approx(gap["average_jct_difference"])
