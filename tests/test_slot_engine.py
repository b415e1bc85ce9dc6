"""The slot clock, EDF and ElasticFlow on hand-made and published traces."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from allocators.elasticflow.edf import EDF
from schedopt.cli import app
from simulator.buddy import RankSetCache, place
from simulator.executor import LeaseResults, SimulatedExecutor
from simulator.overheads import OverheadModel
from simulator.simulate import simulate_deadlines

# iterations/s on 1, 2, 4, 8 GPUs: sub-linear, so elasticity trades GPU time for speed
CURVE = "10,18,32,48"


def write_inputs(tmp_path, jobs: list[tuple], nodes: int = 1, gpus_per_node: int = 8):
    """``jobs``: (submit, iterations, deadline, num_gpu[, best_effort]) rows of model ``m``."""
    tables = tmp_path / "tables"
    tables.mkdir(exist_ok=True)
    (tables / "m.csv").write_text(f"global_batch_size,1,2,4,8\n64,{CURVE}\n")
    spec = tmp_path / "spec.csv"
    spec.write_text(f"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,{nodes},"
                    f"{gpus_per_node},64,256\n")
    trace = tmp_path / "trace.csv"
    lines = ["job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration,best_effort"]
    for k, (submit, iters, ddl, n, *be) in enumerate(jobs):
        lines.append(f"{k},{submit},{iters},m,{ddl},64,{n},{max(1, iters // 10)},{be[0] if be else 0}")
    trace.write_text("\n".join(lines) + "\n")
    return trace, spec, tables


def run(tmp_path, jobs, policy, **kw):
    trace, spec, tables = write_inputs(tmp_path, jobs, **{k: kw.pop(k) for k in ("nodes", "gpus_per_node")
                                                          if k in kw})
    kw.setdefault("overhead", OverheadModel.none())
    return simulate_deadlines(trace, spec, tables, policy=policy, slot=kw.pop("slot", 60.0), **kw)


def test_a_job_alone_runs_on_its_fastest_count_and_finishes_inside_the_slot(tmp_path):
    result = run(tmp_path, [(0, 4800, 1000, 1)], "edf")
    assert result.jobs["finish"][0] == pytest.approx(100.0)  # 4800 / 48 on 8 GPUs
    assert result.summary["deadline_satisfactory_ratio"] == 1.0


def test_a_job_ends_when_its_last_lease_really_did_within_the_rest_of_its_slot(tmp_path):
    class HalfSpeed(SimulatedExecutor):
        """Every lease at half its planned rate, for at most its budget."""

        def __init__(self):
            self.budgets = []

        def execute(self, leases):
            self.budgets.append(leases.budgets().tolist())
            steps = np.minimum(leases.steps, np.floor(leases.steps / leases.seconds / 2 * leases.budgets()))
            return LeaseResults(steps.astype(np.int64), np.zeros(steps.size, dtype=bool), seconds=2 * leases.seconds)

    executor = HalfSpeed()
    result = run(tmp_path, [(0, 1200, 1000, 1)], "edf", executor=executor)  # 25 s of a 60 s slot on 8 GPUs
    assert executor.budgets == [[60.0]]
    assert result.jobs["finish"][0] == pytest.approx(50.0)  # its lease took twice the planned 25 s


def test_the_published_edf_accessctrl_ends_jobs_on_whole_seconds(tmp_path):
    exact = run(tmp_path, [(0, 4801, 1000, 1)], "edf")
    whole = run(tmp_path, [(0, 4801, 1000, 1)], "edf-accessctrl")
    assert exact.jobs["finish"][0] == pytest.approx(4801 / 48)  # 100.02 s on 8 GPUs
    assert whole.jobs["finish"][0] == 101.0


def test_edf_serves_the_earlier_deadline_first(tmp_path):
    result = run(tmp_path, [(0, 4800, 5000, 1), (0, 4800, 200, 1)], "edf")
    finish = result.jobs["finish"]
    assert finish[1] == pytest.approx(100.0)
    assert finish[0] > finish[1]


def test_overhead_delays_completion_by_the_published_amount(tmp_path):
    plain = run(tmp_path, [(0, 4800, 1000, 1)], "elasticflow")
    charged = run(tmp_path, [(0, 4800, 1000, 1)], "elasticflow", overhead=OverheadModel())
    # a fresh 8-GPU set: 2 + 2 (log2 8 + 1) = 10 s at the first decision; the next decision is
    # at its completion (110 s > one slot), so nothing more is charged
    assert charged.jobs["finish"][0] - plain.jobs["finish"][0] == pytest.approx(10.0)
    assert charged.summary["overhead_seconds_total"] == pytest.approx(10.0)
    assert charged.summary["decisions"] == 2


def test_admission_declines_the_job_that_cannot_fit(tmp_path):
    # the first job needs all 8 GPUs for 100 s; the second arrives with it and needs the same
    result = run(tmp_path, [(0, 4800, 100, 8), (0, 4800, 100, 8), (0, 600, 5000, 1)], "elasticflow")
    s = result.summary
    assert (s["accepted"], s["declined"]) == (2, 1)
    assert s["finished_late"] == 0
    assert result.summary["deadline_satisfactory_ratio"] == pytest.approx(2 / 3)


def test_the_published_planner_declines_all_arrivals_of_a_decision_together(tmp_path):
    # two jobs need all 8 GPUs for 100 s by 130 s: the published ef-accessctrl plans the three
    # arrivals at once and declines all
    result = run(tmp_path, [(0, 4800, 130, 8), (0, 4800, 130, 8), (0, 600, 5000, 1)], "elasticflow-greedy")
    assert (result.summary["accepted"], result.summary["declined"]) == (0, 3)
    # arriving at different decisions, only the one that cannot fit is declined: job 0 holds the
    # GPUs to its slot-aligned end, 120 s, so job 1 would end at 220 s, past its 150 s
    result = run(tmp_path, [(0, 4800, 130, 8), (60, 4800, 150, 8), (200, 600, 5000, 1)], "elasticflow-greedy")
    assert result.jobs["state"].tolist() == ["finished", "declined", "finished"]


def test_a_job_past_its_deadline_runs_first_under_the_published_planner(tmp_path):
    # job 0 cannot make its 60 s deadline (2000 s on all 8 GPUs); job 1 can (300 s by 1200 s).
    # The published planner keeps job 0 in the plan and, once late, runs it first at its cap,
    # so job 1 misses too; the exact policy declines job 0 and meets job 1's deadline. Each job
    # holds its GPUs to its planned end, aligned to the 60 s slot (2040 s, then 2040 + 300 s),
    # and finishes there, as the published simulator counts it.
    rows = [(0, 48 * 2000, 60, 8), (0, 48 * 300, 1200, 8)]
    published = run(tmp_path, rows, "ef")
    assert published.summary["finished_late"] == 2
    assert published.jobs["finish"].tolist() == pytest.approx([2040.0, 2340.0])
    exact = run(tmp_path, rows, "elasticflow")
    assert (exact.summary["declined"], exact.summary["finished_on_time"]) == (1, 1)


def test_best_effort_jobs_are_never_declined_and_use_leftover_gpus(tmp_path):
    result = run(tmp_path, [(0, 4800, 100, 8), (0, 480, 0, 1, 1)], "elasticflow")
    assert result.summary["declined"] == 0
    assert result.summary["best_effort_jobs"] == 1
    assert result.summary["best_effort_average_jct"] is not None


def test_no_admission_ef_runs_everything(tmp_path):
    result = run(tmp_path, [(0, 4800, 100, 8), (0, 4800, 100, 8)], "ef")
    assert result.summary["declined"] == 0
    # the first job's work is done at 100 s, its deadline, but it holds the GPUs to its planned
    # end aligned to the 60 s slot (120 s) and is judged there, as the published simulator does
    assert result.summary["finished_late"] == 2
    assert result.jobs["finish"].tolist() == pytest.approx([120.0, 240.0])


def test_the_published_ef_credits_no_run_time_after_the_planned_completion(tmp_path):
    # job 0: 100 s of work on 8 GPUs, planned to complete at 100 s and held to 120 s (the 60 s
    # slot) + 10 s (the fresh 8-GPU set). Job 1 arrives at 110 s: the published ef credits job 0
    # only up to 100 s (90 s of run), so it is re-planned there with 10 s of work left.
    rows = [(0, 4800, 1000, 1), (110, 480, 5000, 1)]
    result = run(tmp_path, rows, "ef", overhead=OverheadModel())
    assert result.jobs["finish"][0] == pytest.approx(178.0)  # not at 110 s, as with its whole run
    # alone, it finishes at its end event, 130 s, though the cut left it 10 s of work
    alone = run(tmp_path, rows[:1], "ef", overhead=OverheadModel())
    assert alone.jobs["finish"][0] == pytest.approx(130.0)
    assert alone.summary["decisions"] == 2
    # the published ef-accessctrl ends it at the same event but judges it on its planned 100 s
    judged = run(tmp_path, rows[:1], "elasticflow-greedy", overhead=OverheadModel())
    assert judged.jobs["finish"][0] == pytest.approx(100.0)
    assert judged.summary["decisions"] == 2


def test_the_published_ef_places_whole_node_jobs_in_start_order():
    from allocators.elasticflow.published import EFReplay

    policy = EFReplay()
    policy._started = np.array([30.0, 10.0, 20.0, 10.0, 0.0])
    view = type("View", (), {"gpus_per_node": 8, "submit": np.array([5.0, 1.0, 2.0, 0.0, 0.0])})()
    gpus = np.array([8, 16, 4, 2, 4])
    # whole-node jobs by start (16 before 8), then the smaller by size, ties by start
    assert policy.placement_order(view, gpus).tolist() == [1, 0, 4, 2, 3]


def test_the_published_ef_running_list_takes_plan_starts_before_leftover_starts():
    from allocators.elasticflow.published import EFReplay

    policy = EFReplay()
    view = type("View", (), {"submit": np.array([5.0, 1.0, 2.0, 0.0])})()
    jobs = np.array([2, 0, 3, 1])  # planning (deadline) order
    planned = np.array([0, 2, 0, 1])  # the plan starts jobs 0 and 1; the leftover starts 2, 3
    policy._record_starts(view, jobs, planned, np.array([2, 1, 4, 1]))
    # plan starts in arrival order (1 before 0), then leftover starts in planning order (2, 3)
    assert np.argsort(policy._started).tolist() == [1, 0, 2, 3]
    policy._record_starts(view, jobs, planned, np.array([2, 1, 4, 1]))
    assert np.argsort(policy._started).tolist() == [1, 0, 2, 3]  # numbered once


jobs_strategy = st.lists(
    st.tuples(st.integers(0, 600), st.integers(100, 20_000), st.integers(60, 3000), st.sampled_from([1, 2, 4, 8])),
    min_size=1, max_size=6)


@given(jobs=jobs_strategy)
def test_admitted_jobs_meet_their_deadlines_without_overhead(tmp_path_factory, jobs):
    """With no overhead, every job the exact program admits finishes by its deadline, and the
    cluster is never over-allocated."""
    tmp = tmp_path_factory.mktemp("adm")
    rows = [(s, it, s + slack, n) for s, it, slack, n in jobs]
    result = run(tmp, rows, "elasticflow")
    s = result.summary
    assert s["finished_late"] == 0
    assert s["finished_on_time"] + s["declined"] == s["deadline_jobs"]
    assert (result.timeline["busy_gpus"] <= 8).all()


@given(jobs=jobs_strategy)
def test_the_published_planner_admits_a_batch_whole_or_not_at_all(tmp_path_factory, jobs):
    """Arrivals of one decision: the published ef-accessctrl admits all of them or none."""
    tmp = tmp_path_factory.mktemp("batch")
    states = run(tmp, [(0, it, slack, n) for _, it, slack, n in jobs], "elasticflow-greedy").jobs["state"]
    assert (states == "declined").all() or not (states == "declined").any()


def test_buddy_placement_packs_powers_of_two_and_takes_whole_nodes():
    gpus = np.array([1, 8, 2, 4, 1, 0])
    order = EDF().placement_order(None, gpus)
    assert order.tolist() == [1, 3, 2, 0, 4]  # largest first, ties in trace order
    first, placed = place(gpus, order, gpus_per_node=4, total_gpus=16)
    assert placed[:5].all() and not placed[5]
    assert first.tolist() == [14, 0, 12, 8, 15, -1]  # 8 GPUs: two whole nodes first
    first, placed = place(np.array([8, 8, 8]), np.arange(3), gpus_per_node=8, total_gpus=16)
    assert placed.tolist() == [True, True, False]
    with pytest.raises(ValueError, match="node's size"):
        place(np.array([2, 4]), np.arange(2), gpus_per_node=4, total_gpus=8)


def test_rank_set_cache_remembers_sets_until_cleared():
    cache = RankSetCache()
    assert not cache.lookup_and_add(np.array([0, 8]), np.array([8, 4]), 8).any()
    assert cache.lookup_and_add(np.array([0, 8]), np.array([8, 8]), 8).tolist() == [True, False]
    cache.clear()
    assert not cache.lookup_and_add(np.array([0]), np.array([8]), 8).any()


def test_overhead_model_matches_the_published_formula():
    model = OverheadModel.published(total_gpus=64, slot=60)
    assert model.seconds(np.array([1, 8, 0]), np.array([False, False, False]), restart=False).tolist() == [4, 10, 0]
    assert model.seconds(np.array([8]), np.array([True]), restart=True).tolist() == [2]
    assert model.seconds(np.array([8]), np.array([False]), restart=True).tolist() == [37]
    big = OverheadModel.published(total_gpus=256, slot=60)
    assert (big.base, big.restart) == (7, 47)
    assert model.is_restart(60) and not model.is_restart(59) and not model.is_restart(0)


def test_cli_runs_a_deadline_trace_and_writes_its_files(tmp_path):
    trace, spec, tables = write_inputs(tmp_path, [(0, 4800, 1000, 1), (30, 480, 2000, 2)])
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["simulate", "--policy", "elasticflow", "--trace", str(trace), "--cluster-spec",
                                   str(spec), "--throughput-dir", str(tables), "--slot", "60", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "deadline satisfactory ratio" in res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["deadline_satisfactory_ratio"] == 1.0
    assert (out / "jobs.csv").read_text().count("\n") == 3


def test_cli_reports_a_bad_trace_line_in_one_line(tmp_path):
    trace, spec, tables = write_inputs(tmp_path, [(0, 4800, 1000, 1)])
    trace.write_text(trace.read_text().replace(",4800,", ",many,"))
    res = CliRunner().invoke(app, ["simulate", "--policy", "edf", "--trace", str(trace), "--cluster-spec", str(spec),
                                   "--throughput-dir", str(tables)])
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "trace.csv:2" in lines[0] and "iteration" in lines[0]


def test_cli_runs_the_policy_named_on_any_trace(tmp_path):
    trace, spec, tables = write_inputs(tmp_path, [(0, 4800, 1000, 1)])
    inputs = ["--trace", str(trace), "--cluster-spec", str(spec), "--throughput-dir", str(tables), "--no-progress"]
    res = CliRunner().invoke(app, ["simulate", "--policy", "max_min_fairness_perf", *inputs])
    assert res.exit_code == 0 and res.output.startswith("max_min_fairness_perf with"), res.output
    assert "deadline satisfactory ratio" in res.output and "1 / 0 of 1" in res.output
    res = CliRunner().invoke(app, ["simulate", "--policy", "no_such_policy", *inputs])
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1
    assert "no_such_policy" in lines[0] and "elasticflow" in lines[0] and "max_min_fairness_perf" in lines[0]
    res = CliRunner().invoke(app, ["simulate", *inputs])
    assert res.exit_code == 0 and res.output.startswith("elasticflow on"), res.output


def test_a_slot_policy_on_a_gavel_workload_says_what_it_lacks_or_runs():
    base = ["simulate", "--policy", "edf", "--example", "--no-progress"]
    for extra, needs in (([], "--cluster v100="), (["--cluster", "v100=8"], "--deadlines uniform:")):
        res = CliRunner().invoke(app, [*base, *extra])
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert res.exit_code == 2 and len(lines) == 1 and needs in lines[0], res.output
    res = CliRunner().invoke(app, [*base, "--cluster", "v100=8", "--deadlines", "uniform:0.5:1.5"])
    assert res.exit_code == 0 and res.output.startswith("edf on 8 nodes x 1 GPUs"), res.output
    assert "deadlines drawn: uniform:0.5:1.5 (seed 0)" in res.output


def test_cli_needs_all_three_deadline_inputs(tmp_path):
    trace, spec, tables = write_inputs(tmp_path, [(0, 4800, 1000, 1)])
    res = CliRunner().invoke(app, ["simulate", "--policy", "edf", "--trace", str(trace), "--cluster-spec", str(spec)])
    assert res.exit_code == 2 and "--throughput-dir" in res.output


def test_published_edf_ratio_on_the_elastic_vs_pollux_trace(shared_data):
    ef = shared_data / "elasticflow"
    result = simulate_deadlines(ef / "traces/elasticVpollux_e.csv", ef / "cluster_specs/n16g4.csv",
                                ef / "throughputs_T4", policy="edf", slot=60)
    assert abs(result.summary["deadline_satisfactory_ratio"] - 0.118) <= 0.02
