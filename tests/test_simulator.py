"""The round-based simulator: fidelity to the published Gavel simulator, invariants, CLI."""

import json
import shutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from allocators import POLICIES, make_policy
from schedopt.cli import app
from simulator.cluster import parse_cluster
from simulator.engine import Engine, SimulationConfig
from simulator.example_table import example_table
from simulator.executor import MAX_FAILED_LEASES, LeaseResults, SimulatedExecutor
from simulator.generator import generate_trace
from simulator.metrics import isolated_finish
from simulator.readers.traces import Trace
from simulator.round_view import build_round_view
from simulator.simulate import simulate
from simulator.throughputs import ThroughputTable

runner = CliRunner()

#: (trace, cluster, policy, gavel_compat, average JCT, makespan or None) from the published simulator
PUBLISHED = [
    ("artifact_evaluation.trace", "v100=4,p100=4,k80=4", "max_min_fairness_perf", False, 1835.5, 3065.8),
    ("small_test.trace", "v100=4,p100=4,k80=4", "fifo", True, 281.3, None),
    ("max_min_fairness.trace", "v100=8,p100=16,k80=24", "max_min_fairness_perf", True, 14622.8, None),
]


@pytest.mark.parametrize(("trace", "cluster", "policy", "compat", "jct", "makespan"), PUBLISHED)
def test_matches_published_gavel_simulator(shared_data, trace, cluster, policy, compat, jct, makespan):
    res = simulate(shared_data / "gavel" / "traces" / trace, policy=policy, cluster=cluster,
                   throughputs=shared_data / "gavel" / "simulation_throughputs.json", gavel_compat=compat)
    assert res.summary["jobs_completed"] == res.summary["jobs"]
    assert res.summary["average_jct"] == pytest.approx(jct, rel=0.01)
    if makespan is not None:
        assert res.summary["makespan"] == pytest.approx(makespan, rel=0.01)


def one_job_trace(steps: int, scale: int = 1, model: str = "A") -> Trace:
    return Trace(job_types=(model,), commands=("cmd",), working_dirs=("",), num_steps_args=("--n",),
                 needs_data_dir=np.zeros(1, dtype=np.int64), total_steps=np.array([steps]),
                 scale_factors=np.array([scale]), weights=np.ones(1), slo=np.full(1, np.inf),
                 arrival_times=np.zeros(1))


def tiny_table() -> ThroughputTable:
    """Job type A at scale 1 and 2 on one worker type; spread over servers, scale 2 runs at half speed."""
    iso = np.array([[10.0], [16.0]])
    spread = np.array([[np.nan], [8.0]])
    return ThroughputTable(("g",), (("A", 1), ("A", 2)), iso, spread)


def run_one(steps, scale=1, **cfg):
    w = build_round_view(one_job_trace(steps, scale), parse_cluster("g=4"), tiny_table())
    return Engine(w, make_policy("max_min_fairness_perf", "clarabel"), SimulationConfig(**cfg)).run()


def test_single_job_runs_alone_at_its_rate_with_one_lease():
    res = run_one(10_000)
    assert res.summary["average_jct"] == pytest.approx(1000.0, abs=1.0)
    assert res.summary["lease_extension_rate"] == 1.0
    assert res.jobs["work_done"][0] == 10_000


def test_overhead_is_charged_once_to_a_job_that_keeps_running():
    assert run_one(10_000, overhead=30.0).summary["average_jct"] == pytest.approx(1030.0, abs=1.0)


def test_unconsolidated_rates_apply_when_a_gang_spans_servers():
    fast = run_one(16_000, scale=2, gpus_per_server=2, unconsolidated=True).summary["average_jct"]
    slow = run_one(16_000, scale=2, gpus_per_server=1, unconsolidated=True).summary["average_jct"]
    assert fast == pytest.approx(1000.0, abs=1.0)
    assert slow == pytest.approx(2000.0, abs=1.0)


@st.composite
def workloads(draw):
    seed = draw(st.integers(0, 10_000))
    jobs = draw(st.integers(1, 14))
    lam = draw(st.sampled_from([0.0, 600.0, 3600.0]))
    caps = draw(st.lists(st.integers(1, 6), min_size=2, max_size=2))
    return seed, jobs, lam, f"v100=8,p100={caps[0]},k80={caps[1]}"


@given(workloads(), st.sampled_from(["max_min_fairness", "max_min_fairness_perf", "max_min_fairness_packed",
                                     "finish_time_fairness_perf", "fifo_perf", "isolated"]))
def test_every_job_finishes_within_capacity_and_no_faster_than_alone(wl, policy):
    seed, jobs, lam, cluster = wl
    table = example_table()
    trace = generate_trace(table, jobs, seed=seed, lam=lam, multi_gpu=True)
    spec = parse_cluster(cluster)
    res = simulate(trace, policy=policy, cluster=spec, throughputs=table, seed=seed)
    j, t = res.jobs, res.timeline
    assert j["work_done"].tolist() == j["work"].tolist()
    w = build_round_view(trace, spec, table)
    fastest = w.trace.total_steps / w.rates.max(axis=1)
    assert (j["jct"] >= fastest - 1e-6).all()
    assert (j["start"] >= j["arrival"]).all()
    for k, name in enumerate(spec.worker_types):
        assert (t[f"busy_{name}"] <= spec.gpus[k]).all()
    assert np.isfinite(j["rho"]).all()
    span = t["end"] - t["start"]
    assert (t["cluster_efficiency"] >= 0).all()
    assert t["cluster_efficiency"] @ span / res.summary["makespan"] == pytest.approx(
        res.summary["cluster_efficiency_mean"], rel=1e-9, abs=1e-12)


def test_same_seed_same_schedule_and_seed_drives_agnostic_type_order():
    table = example_table()
    trace = generate_trace(table, 30, seed=3, lam=300.0, multi_gpu=True)
    a = simulate(trace, policy="max_min_fairness", cluster="v100=4,p100=4,k80=4", throughputs=table, seed=1)
    b = simulate(trace, policy="max_min_fairness", cluster="v100=4,p100=4,k80=4", throughputs=table, seed=1)
    assert a.jobs["finish"].tolist() == b.jobs["finish"].tolist()
    timing = {"solver_seconds_p50", "solver_seconds_p99", "solver_seconds_total",
              *(f"solver_{part}_seconds_total" for part in ("build", "translate", "solve"))}
    assert {k: v for k, v in a.summary.items() if k not in timing} == {
        k: v for k, v in b.summary.items() if k not in timing}
    c = simulate(trace, policy="max_min_fairness", cluster="v100=4,p100=4,k80=4", throughputs=table, seed=2)
    assert c.jobs["finish"].tolist() != a.jobs["finish"].tolist()


def test_window_stops_the_run_once_its_jobs_are_done():
    table = example_table()
    trace = generate_trace(table, 40, seed=0, lam=600.0)
    res = simulate(trace, cluster="v100=2,p100=2,k80=2", throughputs=table, window=(5, 15))
    assert res.summary["window_jobs_completed"] == 10
    assert res.summary["jobs_completed"] < 40


def test_the_simulation_seed_is_the_solvers_unless_options_set_one(monkeypatch):
    import simulator.simulate as simulate_module
    from optim import SolveOptions

    seen = []
    real = simulate_module.make_policy
    monkeypatch.setattr(simulate_module, "make_policy", lambda name, solver, options, **kw: seen.append(options.seed)
                        or real(name, solver, options, **kw))
    table = example_table()
    trace = generate_trace(table, 4, seed=0)
    simulate(trace, policy="max_min_fairness_perf", solver="highs", cluster="v100=2", throughputs=table, seed=3)
    simulate(trace, policy="max_min_fairness_perf", solver="highs", cluster="v100=2", throughputs=table, seed=3,
             options=SolveOptions(seed=5))
    assert seen == [3, 5]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_simulates(policy):
    table = example_table()
    trace = generate_trace(table, 8, seed=1, lam=900.0, multi_gpu=policy != "allox")
    one_type = policy == "shockwave"  # Shockwave plans rounds on one worker type
    res = simulate(trace, policy=policy, cluster="v100=8" if one_type else "v100=8,p100=4,k80=4",
                   throughputs=table, prices="v100=2.48" if one_type else "v100=2.48,p100=1.46,k80=0.9")
    assert res.summary["jobs_completed"] == 8


def test_cli_simulate_example_writes_its_output_folder(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["simulate", "--example", "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "average JCT" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_completed"] == summary["jobs"] == 200
    assert (out / "jobs.csv").read_text().count("\n") == 201
    assert (out / "timeline.csv").stat().st_size > 0
    solves = (out / "solves.csv").read_text().splitlines()
    assert solves[0] == "time,jobs,seconds,build_seconds,translate_seconds,solve_seconds"
    assert len(solves) == summary["solves"] + 1


def test_every_solve_and_replan_is_logged_with_its_build_and_solve_time():
    table = example_table()
    trace = generate_trace(table, 8, seed=1, lam=900.0, multi_gpu=True)
    res = simulate(trace, policy="shockwave", cluster="v100=8", throughputs=table)
    log, summary = res.solves, res.summary
    assert log["seconds"].size == summary["solves"] > 0
    assert (np.diff(log["time"]) >= 0).all() and (log["jobs"] >= 1).all()
    for part in ("build", "translate", "solve"):
        assert (log[f"{part}_seconds"] >= 0).all()
        assert summary[f"solver_{part}_seconds_total"] == pytest.approx(log[f"{part}_seconds"].sum())
    # the split covers the solver calls; the rest of a re-plan is the policy's own work
    assert (log["build_seconds"] + log["translate_seconds"] + log["solve_seconds"] <= log["seconds"] + 1e-9).all()
    # an allocation policy's split is measured the same way (optim.tally); one that solves
    # nothing (FIFO) spends nothing in a solver
    lp = simulate(trace, policy="max_min_fairness_perf", cluster="v100=8", throughputs=table).solves
    parts = lp["build_seconds"] + lp["translate_seconds"] + lp["solve_seconds"]
    assert lp["seconds"].size > 0 and (lp["solve_seconds"] > 0).all() and (parts <= lp["seconds"] + 1e-9).all()
    fifo = simulate(trace, policy="fifo", cluster="v100=8", throughputs=table).solves
    assert fifo["seconds"].size > 0 and (fifo["build_seconds"] == 0).all() and (fifo["solve_seconds"] == 0).all()


def test_published_batch_size_rounding_completes_the_job_it_reaches_the_end_of(shared_data):
    # the published rules round progress up to whole epochs on a switch; a job rounded up to
    # its last epoch is complete (it used to be handed to the policy with negative remaining steps)
    root = shared_data / "shockwave"
    trace = next((root / "traces").glob("120_*.trace"))
    res = simulate(trace, policy="min_total_duration", cluster="v100=32", throughputs=root / "tacc_throughputs.json",
                   config=SimulationConfig.shockwave(gavel_compat=True))
    assert res.summary["jobs_completed"] == 120
    jobs = res.jobs_frame()
    assert (jobs["work_done"] > 0).all()


def test_cli_simulate_reports_a_bad_trace_line(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("ResNet-18 (batch size 64)\tcmd\tdir\t--n\t1\tmany\t1\t1\t-1\t0\n")
    result = runner.invoke(app, ["simulate", "--trace", str(bad), "--no-progress"])
    assert result.exit_code == 2
    assert f"{bad}:1: column 6 (total_steps)" in result.output
    assert "Traceback" not in result.output


def test_cli_simulate_generate_and_write_trace(tmp_path):
    trace = tmp_path / "gen.trace"
    result = runner.invoke(app, ["simulate", "--generate", "12", "--lam", "600", "--cluster", "v100=2,p100=2,k80=2",
                                 "--write-trace", str(trace), "--policy", "fifo_perf", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert trace.read_text().count("\n") == 12


def test_cli_simulate_finds_gavels_table_beside_the_trace(tmp_path, shared_data):
    """Gavel's layout: a traces folder next to simulation_throughputs.json."""
    (tmp_path / "gavel" / "traces").mkdir(parents=True)
    trace = tmp_path / "gavel" / "traces" / "small_test.trace"
    shutil.copy(shared_data / "gavel" / "traces" / "small_test.trace", trace)
    args = ["simulate", "--trace", str(trace), "--cluster", "v100=4,p100=4,k80=4", "--policy", "fifo",
            "--gavel-compat", "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "is not in <built-in example table>" in result.output
    shutil.copy(shared_data / "gavel" / "simulation_throughputs.json", tmp_path / "gavel")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "simulation_throughputs.json (found near the trace" in result.output
    assert "281.3 s" in result.output


def test_isolated_finish_integrates_the_share_over_the_recorded_intervals():
    # intervals [0, 2) with 2 jobs present and [2, 10) with 1; a = 2 steps/s on the whole
    # isolated share, b = 1: rate 2 / max(1, m)
    starts, ends, present = np.array([0.0, 2.0]), np.array([2.0, 10.0]), np.array([2, 1])
    arrival = np.array([0.0, 1.0, 0.0])
    steps = np.array([10.0, 4.0, 30.0])
    finish = isolated_finish(starts, ends, present, arrival, steps, np.full(3, 2.0), np.ones(3), now=10.0)
    # job 0: 2 steps by t=2, 8 more at 2/s -> t=6; job 1 starts at the next interval (t=2),
    # 4 steps at 2/s -> t=4; job 2: 18 steps by t=10, 12 more alone at 2/s -> t=16
    np.testing.assert_allclose(finish, [6.0, 4.0, 16.0])


class Recording(SimulatedExecutor):
    """The simulated executor, keeping every round's leases; ``fail(job, round)`` fails some."""

    def __init__(self, fail=lambda job, lease: False):
        self.leases, self.fail, self.count = [], fail, {}

    def execute(self, leases):
        self.leases.append(leases)
        failed = np.zeros(leases.jobs.size, dtype=bool)
        for i, job in enumerate(leases.jobs.tolist()):
            self.count[job] = self.count.get(job, 0) + 1
            failed[i] = self.fail(job, self.count[job])
        steps = np.where(failed, 0, leases.steps)
        return LeaseResults(steps, failed, {int(j): "injected" for j in leases.jobs[failed]})


def run_with(executor, jobs=6, seed=2):
    table = example_table()
    trace = generate_trace(table, jobs, seed=seed, lam=600.0, multi_gpu=True)
    w = build_round_view(trace, parse_cluster("v100=2,p100=2,k80=2"), table)
    return Engine(w, make_policy("max_min_fairness_perf", "clarabel"), SimulationConfig(), executor=executor).run()


def test_an_executor_that_does_the_planned_steps_changes_nothing():
    plain, recorder = run_with(None), Recording()
    recorded = run_with(recorder)
    for name, column in plain.jobs.items():
        np.testing.assert_array_equal(recorded.jobs[name], column, err_msg=name)
    for name, column in plain.timeline.items():
        np.testing.assert_array_equal(recorded.timeline[name], column, err_msg=name)
    leases = recorder.leases[0]
    assert leases.start == 0.0 and (leases.steps >= 1).all() and (leases.seconds > 0).all()
    assert (leases.seconds <= SimulationConfig().round_length).all()
    assert plain.summary["jobs_failed"] == plain.summary["failed_leases"] == 0
    assert "failed" not in set(plain.jobs["state"])


def test_failed_leases_credit_nothing_and_the_job_resumes():
    plain = run_with(None)
    res = run_with(Recording(lambda job, lease: job == 0 and lease <= 2))
    assert res.summary["jobs_completed"] == res.summary["jobs"]
    assert res.jobs["failed_leases"].tolist() == [2] + [0] * (res.summary["jobs"] - 1)
    assert res.jobs["work_done"].tolist() == res.jobs["work"].tolist()
    assert res.jobs["finish"][0] > plain.jobs["finish"][0]


def test_a_job_with_too_many_failed_leases_ends_failed_with_its_reason():
    recorder = Recording(lambda job, lease: job == 1)
    res = run_with(recorder)
    assert recorder.count[1] == MAX_FAILED_LEASES
    assert res.summary["jobs_failed"] == 1 and res.summary["jobs_completed"] == res.summary["jobs"] - 1
    assert (res.jobs["state"] == "failed").tolist() == [False, True] + [False] * (res.summary["jobs"] - 2)
    assert np.isnan(res.jobs["finish"][1]) and res.jobs["work_done"][1] == 0
    assert f"job 1 failed after {MAX_FAILED_LEASES} failed leases; last: injected" in res.summary["notes"]


class Slower(SimulatedExecutor):
    """Every lease trains at ``speed`` x its planned rate for at most its budget, and says how long
    its steps took."""

    def __init__(self, speed):
        self.speed, self.leases = speed, []

    def execute(self, leases):
        self.leases.append(leases)
        rate = leases.steps / leases.seconds * self.speed
        steps = np.minimum(leases.steps, np.floor(rate * leases.budgets())).astype(np.int64)
        return LeaseResults(steps, np.zeros(steps.size, dtype=bool), seconds=steps / rate)


def test_a_last_lease_may_take_the_rest_of_its_round_and_the_job_ends_when_its_steps_did():
    plain, slower = run_with(None), Slower(0.8)
    res = run_with(slower)
    round_length = SimulationConfig().round_length
    assert all((leases.budget == round_length).all() for leases in slower.leases)  # no overhead configured
    last = {}
    for leases in slower.leases:
        for i, job in enumerate(leases.jobs.tolist()):
            last[job] = (leases.start, leases.steps[i], leases.seconds[i])
    for job, (start, steps, seconds) in last.items():
        if seconds <= 0.8 * round_length:  # a last lease with room in its round completes there
            assert res.jobs["finish"][job] == pytest.approx(start + seconds / 0.8)
    assert res.summary["jobs_completed"] == res.summary["jobs"]
    assert (res.jobs["finish"] >= plain.jobs["finish"]).all() and (res.jobs["finish"] > plain.jobs["finish"]).any()


def test_lease_seconds_must_be_finite_and_not_negative():
    class Backwards(SimulatedExecutor):
        def execute(self, leases):
            return LeaseResults(leases.steps, np.zeros(leases.jobs.size, dtype=bool), seconds=-leases.seconds)

    with pytest.raises(ValueError, match="lease seconds"):
        run_with(Backwards())


def test_results_that_do_not_fit_the_leases_are_refused():
    class Greedy(SimulatedExecutor):
        def execute(self, leases):
            return LeaseResults(leases.steps + 1, np.zeros(leases.jobs.size, dtype=bool))

    with pytest.raises(ValueError, match="outside"):
        run_with(Greedy())


@given(st.lists(st.one_of(st.floats(-1e9, 1e9), st.just(float("nan"))), min_size=1, max_size=40),
       st.one_of(st.sampled_from([0.0, 50.0, 99.0, 99.9, 100.0]), st.floats(0.0, 100.0)))
def test_the_summary_quantiles_are_numpys_to_the_bit(values, q):
    from simulator.quantiles import median, percentile

    values = np.array(values)
    for ours, numpys in ((median(values), np.median(values)), (percentile(values, q), np.percentile(values, q))):
        assert ours == float(numpys) or (np.isnan(ours) and np.isnan(numpys))
