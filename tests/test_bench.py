"""``schedopt bench``: the sweep's rows, its files, and what it never writes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from benchmarks.bench_all import readme_table, sweeps
from optim import Status, available_backends
from schedopt.bench import Sweep, bench_policies, run, summary
from schedopt.cli import app
from simulator import example_table

HAVE_GUROBI = "gurobi" in {b.spec for b in available_backends()}


def test_rows_time_every_phase_and_agree_across_backends():
    table = example_table()
    sweep = Sweep(policies=("max_min_fairness_perf",), jobs=(16, 32), backends=("highs", "cvxpy:CLARABEL"),
                  worker_types=(tuple(table.worker_types),), repeat=2)
    rows = pd.DataFrame(list(run(sweep, table)))
    assert len(rows) == sweep.num_solves == 2 * 2 * 2
    assert (rows["status"] == str(Status.OPTIMAL)).all()
    for col in ("build_s", "translate_s", "solve_s", "solve_wall_s", "build_cpu_s", "solve_cpu_s"):
        assert (rows[col] >= 0).all(), col
    assert (rows["cols"] > 0).all() and (rows["nonzeros"] > 0).all()
    assert (rows.loc[rows["jobs"] == 16, "gpus_per_type"] == 4).all()  # jobs / 4 by default
    by_case = rows.groupby(["jobs", "repeat"])["objective"]
    assert ((by_case.max() - by_case.min()).abs() <= 1e-6).all()  # objectives agree, not allocations


def test_every_family_agrees_across_backends_and_counts_its_programs():
    table = example_table()
    families = ("max_min_fairness_water_filling_perf", "finish_time_fairness_perf",
                "finish_time_fairness_perf:bisection", "min_total_duration_perf:bisection", "max_min_fairness_packed",
                "finish_time_fairness_packed", "max_sum_throughput_normalized_by_cost_packed_SLOs")
    sweep = Sweep(policies=families, jobs=(12,), backends=("highs", "clarabel", "cvxpy:HIGHS"),
                  worker_types=(("v100", "k80"),))
    rows = pd.DataFrame(list(run(sweep, table))).set_index(["policy", "backend"])
    programs, status = rows["programs"], rows["status"]
    assert programs["max_min_fairness_water_filling_perf", "highs"] >= 2  # a level LP and a bottleneck MILP
    assert rows.loc[("max_min_fairness_water_filling_perf", "highs"), "integers"] > 0
    assert status["max_min_fairness_water_filling_perf", "clarabel"] == "CapabilityError"  # no MILP: a row
    assert programs["finish_time_fairness_perf", "clarabel"] == 1  # the conic program
    assert programs["finish_time_fairness_perf", "highs"] > 10  # no SOC: bisection LPs
    assert programs["finish_time_fairness_perf:bisection", "clarabel"] <= 4  # each LP the full one: the level search
    assert "level search" in rows.loc[("finish_time_fairness_perf:bisection", "clarabel"), "notes"]
    assert programs["min_total_duration_perf:bisection", "highs"] > 2
    assert "column generation" in rows.loc[("max_min_fairness_packed", "highs"), "notes"]
    solved = rows[status == str(Status.OPTIMAL)]
    assert set(solved.index.get_level_values("policy")) == set(families)
    for col in ("build_s", "translate_s", "solve_s", "total_wall_s", "total_cpu_s"):
        assert (solved[col] > 0).all(), col
    assert (solved["total_wall_s"] >= solved["solve_s"]).all()
    spread = solved.groupby("policy")["objective"].agg(lambda o: (o.max() - o.min()) / abs(o.max()))
    assert (spread <= 1e-6).all(), spread
    ftf = solved.loc[(["finish_time_fairness_perf", "finish_time_fairness_perf:bisection"], "clarabel"), "objective"]
    assert ftf.iloc[0] == pytest.approx(ftf.iloc[1], rel=1e-6)  # the conic program and the bisection agree


def test_worker_type_sets_are_a_dimension():
    table = example_table()
    sets = (("v100", "p100", "k80"), ("v100",), ("k80", "p100"))
    sweep = Sweep(policies=("max_min_fairness_perf",), jobs=(16,), backends=("highs",), worker_types=sets,
                  gpus_per_type=(2,))
    rows = pd.DataFrame(list(run(sweep, table)))
    assert rows["worker_types"].tolist() == ["v100+p100+k80", "v100", "k80+p100"]
    assert rows["cols"].tolist() == [16 * 3 + 1, 16 + 1, 16 * 2 + 1]  # one x column per job and type, and z
    assert rows["objective"].nunique() == 3
    assert len(summary(rows)) == 3  # the summary keeps the sets apart
    with pytest.raises(ValueError, match="worker types"):
        Sweep(policies=("max_min_fairness_perf",), jobs=(8,), backends=("highs",), worker_types=("v100",))


def test_heuristic_round_planner_or_unknown_policy_is_a_clear_error():
    for name, reason in (("fifo", "heuristic"), ("shockwave", "benchmarks.shockwave"), ("nope", "cannot be timed"),
                         ("max_min_fairness_perf:bisection", "cannot be timed")):
        with pytest.raises(ValueError, match=reason):
            Sweep(policies=(name,), jobs=(8,), backends=("highs",), worker_types=(("v100",),))
    names = bench_policies()
    assert {"max_min_fairness_perf", "max_min_fairness_water_filling_packed", "finish_time_fairness:bisection",
            "min_total_duration_packed:bisection"} <= set(names)
    assert not {"fifo", "allox", "gandiva", "shockwave"} & set(names)


def test_cli_writes_its_files_and_never_gurobi_rows(tmp_path):
    out = tmp_path / "bench"
    backends = ["--backend", "highs"] + (["--backend", "gurobi"] if HAVE_GUROBI else [])
    res = CliRunner().invoke(app, ["bench", "--repeat", "1", "--jobs", "8", "--jobs", "600", "--policy",
                                   "min_total_duration_perf",
                                   "--policy", "max_min_fairness_water_filling_perf", "--worker-types", "v100,k80",
                                   "--worker-types", "p100", *backends, "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    frame = pd.read_csv(out / "bench.csv")
    assert set(frame["backend"]) == {"highs"} and len(frame) == 2 * 2 * 2
    assert set(frame["worker_types"]) == {"v100+k80", "p100"} and (frame["status"] == "optimal").all()
    assert frame.groupby("policy")["programs"].min().to_dict() == {"max_min_fairness_water_filling_perf": 2,
                                                                   "min_total_duration_perf": 1}
    assert pd.read_parquet(out / "bench.parquet").shape == frame.shape
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    info = json.loads((out / "machine.json").read_text())
    assert info["cores"] >= 1 and "highspy" in info["libraries"]
    if HAVE_GUROBI:  # shown, not written
        assert "8 Gurobi row(s) shown above, never written" in " ".join(res.output.split())
        assert all("wall_s" not in r for r in info["warm_up"]["pairs"] if r["backend"] == "gurobi")


def test_each_policy_and_backend_is_warmed_up_untimed_before_its_cases(monkeypatch):
    import schedopt.bench as bench

    calls = []

    def fake(policy, problem, backend, options):
        calls.append((policy, backend, problem.num_jobs))
        return {"status": "optimal", "total_wall_s": float(problem.num_jobs)}

    monkeypatch.setattr(bench, "time_program", fake)
    sweep = Sweep(policies=("max_min_fairness_perf", "max_sum_throughput_perf"), jobs=(16, 32),
                  backends=("highs", "clarabel"), worker_types=(("v100", "k80"),), repeat=3)
    warmed = []
    rows = pd.DataFrame(list(run(sweep, example_table(), warmed=warmed)))
    assert len(rows) == sweep.num_solves and len(calls) == sweep.num_solves + 4
    for pair in {(p, b) for p, b, _ in calls}:
        sizes = [n for p, b, n in calls if (p, b) == pair]
        assert sizes == [bench.WARM_UP_JOBS] + [16] * 3 + [32] * 3, pair  # warmed once, first
    assert set(rows["total_wall_s"]) == {16.0, 32.0}  # the warm-up is in no row
    assert [(r["policy"], r["backend"], r["jobs"], r["worker_types"]) for r in warmed] == [
        (p, b, bench.WARM_UP_JOBS, "v100+k80") for p in sweep.policies for b in sweep.backends]


def test_repeats_give_a_median_and_a_spread_and_machine_json_lists_the_warm_ups(tmp_path):
    out = tmp_path / "bench"
    res = CliRunner().invoke(app, ["bench", "--jobs", "8", "--jobs", "16", "--backend", "highs", "--backend",
                                   "clarabel", "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert len(pd.read_csv(out / "bench.csv")) == 2 * 2 * 5  # five repetitions by default
    shown = pd.read_csv(out / "bench_summary.csv")
    assert len(shown) == 2 * 2 and (shown["runs"] == 5).all()
    assert ((shown["total_wall_min_s"] <= shown["total_wall_s"])
            & (shown["total_wall_s"] <= shown["total_wall_max_s"])).all()
    assert "min-max" in res.output
    info = json.loads((out / "machine.json").read_text())
    assert info["repeat"] == 5 and info["seeds"] == [0]
    assert [(r["policy"], r["backend"], r["jobs"], r["status"]) for r in info["warm_up"]["pairs"]] == [
        ("max_min_fairness_perf", "highs", 8, "optimal"), ("max_min_fairness_perf", "clarabel", 8, "optimal")]


@pytest.mark.skipif(not HAVE_GUROBI, reason="gurobipy not installed")
def test_a_license_refusal_is_a_row_not_a_crash():
    table = example_table()
    sweep = Sweep(policies=("max_min_fairness_perf", "max_min_fairness_water_filling_perf"), jobs=(1000,),
                  backends=("gurobi",), worker_types=(tuple(table.worker_types),))
    for row in run(sweep, table):
        assert row["status"] == str(Status.LICENSE_LIMIT) and "license" in row["message"], row["policy"]


def test_cli_bad_backend_and_worker_type_are_one_line_errors(tmp_path):
    for args in (["--backend", "nosuchsolver"], ["--worker-types", "v100", "--worker-types", "v100,h900"],
                 ["--policy", "gandiva"], ["--policy", "shockwave"]):
        res = CliRunner().invoke(app, ["bench", "--jobs", "8", *args, "--out", str(tmp_path / "b"), "--no-progress"])
        assert res.exit_code == 2
        assert res.output.strip().count("\n") == 0 and res.output.startswith("schedopt: error:")
    assert not (tmp_path / "b").exists()


def test_reference_suite_covers_every_formulation_and_tables_what_solved():
    suite = sweeps()
    assert sorted(p for sweep in suite for p in sweep.policies) == bench_policies()
    assert not any("gurobi" in b for sweep in suite for b in sweep.backends)
    table = example_table()
    sweep = Sweep(policies=("max_min_fairness_water_filling_perf", "max_min_fairness_perf"), jobs=(8, 16),
                  backends=("highs", "clarabel"), worker_types=(("v100", "k80"),))
    text = readme_table(pd.DataFrame(list(run(sweep, table))), worker_types="v100+k80")
    lines = text.splitlines()
    assert lines[0].startswith("| formulation | backend | 8 | 16 | programs |")
    assert len(lines) == 2 + 3  # no MILP on clarabel: water filling has no row there
    assert "| `max_min_fairness_water_filling_perf` | highs |" in text and "| 2 |" in text


@pytest.mark.parametrize("kind", ["table", "distinct-over"])
@pytest.mark.parametrize("policy", ["max_min_fairness_perf", "max_sum_throughput_perf", "min_total_duration_perf",
                                    "finish_time_fairness_perf"])
def test_versus_published_scores_an_allocation_with_the_programs_own_objective(policy, kind, shared_data):
    from allocators import make_policy
    from benchmarks.versus_published import instance, ours_call, score
    from simulator import read_gavel_json

    problem = instance(read_gavel_json(shared_data / "gavel" / "simulation_throughputs.json"), 24, 24, kind)
    assert problem.num_jobs == 24 and (problem.capacities == (12 if kind == "table" else 8)).all()
    _, x = ours_call(policy, "auto", problem)
    alloc = make_policy(policy, "highs").allocate(problem)
    value = score(policy, problem, x)
    assert value == pytest.approx(alloc.objective, rel=1e-6)  # clarabel's allocation, highs' objective
    assert score(policy, problem, x * 0.5) != pytest.approx(value, rel=1e-3)


def test_versus_published_distinct_kinds_have_no_two_jobs_equal(shared_data):
    from benchmarks.versus_published import _solves_every_job, instance
    from formulations.classes import merge_equal_jobs
    from simulator import read_gavel_json

    table = read_gavel_json(shared_data / "gavel" / "simulation_throughputs.json")
    base, over, under = (instance(table, 400, 7, kind) for kind in ("table", "distinct-over", "distinct-under"))
    assert (base.capacities == 200).all() and (base.weights == 1).all() and merge_equal_jobs(base).num_jobs < 100
    assert (over.capacities == 100).all() and (under.capacities == 200).all()
    for problem in (over, under):
        assert merge_equal_jobs(problem) is None
        assert set(problem.weights) == {1.0, 2.0, 4.0}
        assert np.array_equal(problem.scale_factors, base.scale_factors)
        assert np.array_equal(problem.remaining_steps, base.remaining_steps)
        ratio = problem.throughputs[base.throughputs > 0] / base.throughputs[base.throughputs > 0]
        assert ratio.min() >= 0.9 and ratio.max() <= 1.1 and (problem.throughputs[base.throughputs == 0] == 0).all()
    assert np.array_equal(over.throughputs, under.throughputs) and np.array_equal(over.weights, under.weights)
    assert _solves_every_job("max_min_fairness_perf", "highs", "distinct-over")
    assert not _solves_every_job("max_min_fairness_perf", "highs", "table")
    assert not _solves_every_job("max_min_fairness_perf", "auto", "distinct-over")


def test_versus_published_keeps_rows_of_other_kinds_and_reads_old_rows_as_table(tmp_path):
    from benchmarks.rows import write_rows
    from benchmarks.versus_published import _with_kept_rows

    path = tmp_path / "versus_published.csv"
    write_rows([{"policy": "max_min_fairness_perf", "jobs": 64, "auto_s": 1},
                {"policy": "max_min_fairness_perf", "jobs": 256, "auto_s": 2}], path)  # written before kinds
    new = [{"kind": kind, "policy": "max_min_fairness_perf", "jobs": 64, "auto_s": 3}
           for kind in ("distinct-under", "table")]
    rows = _with_kept_rows(new, path)
    assert [(r["kind"], int(r["jobs"]), str(r["auto_s"])) for r in rows] == [
        ("table", 64, "3"), ("distinct-under", 64, "3"), ("table", 256, "2")]
    assert list(rows[0])[0] == "kind"


def test_versus_published_wide_instances_keep_equal_jobs_equal(shared_data):
    from benchmarks.versus_published import wide_instance
    from formulations.classes import merge_equal_jobs
    from simulator import read_gavel_json

    table = read_gavel_json(shared_data / "gavel" / "simulation_throughputs.json")
    problem = wide_instance(table, 400, 10)
    assert problem.throughputs.shape == (400, 10) and (problem.capacities == 100).all()
    merged = merge_equal_jobs(problem)
    assert merged is not None and merged.num_jobs < 100  # the mix has fewer than 100 (type, scale) kinds


def test_allocate_steps_splits_one_call_and_times_each_lp_method(shared_data):
    from benchmarks.allocate_steps import METHODS, steps
    from benchmarks.versus_published import instance
    from simulator import read_gavel_json

    table = read_gavel_json(shared_data / "gavel" / "simulation_throughputs.json")
    problems = [instance(table, 64, seed) for seed in range(2)]
    merged = steps("max_min_fairness_perf", "highs", problems, repeat=1)
    whole = steps("max_min_fairness_perf", "clarabel", problems[:1], repeat=1)
    assert merged["merge_ms"] > 0 and whole["merge_ms"] == 0  # clarabel sees every job
    assert merged["columns"] < whole["columns"] == 64 * 3 + 1
    for row in (merged, whole):
        parts = sum(row[k + "_ms"] for k in ("merge", "build", "translate", "solve", "rest"))
        assert row["total_ms"] == pytest.approx(parts, abs=2e-3) and row["solve_ms"] > 0
    assert all(merged[m + "_iterations"] > 0 for m in METHODS) and "primal_ms" not in whole  # one method
