"""Experiments: the experiment file, sweeps (resume, failures, Ray), reports, and results never lost."""

from __future__ import annotations

import json
import os
import re
import stat

import pandas as pd
import pytest
from PIL import Image
from typer.testing import CliRunner

from schedopt.cli import app
from schedopt.experiments import runner as sweep_runner
from schedopt.experiments.page import write_report
from schedopt.experiments.runner import prepare, run_sweep
from schedopt.experiments.spec import ExperimentError, read_experiment
from simulator.files import ResultsExistError, write_atomically

SMALL = """
[experiment]
name = "small"
sweep = "lam"
[fixed]
generate = 8
multi-gpu = true
cluster = "v100=4,p100=4,k80=4"
[axes]
policy = [{policies}]
lam = [600.0, 3600.0]
seed = [0, 1]
"""


def experiment(tmp_path, policies=("fifo", "max_min_fairness_perf"), name="small.toml"):
    path = tmp_path / name
    path.write_text(SMALL.format(policies=", ".join(f'"{p}"' for p in policies)))
    return read_experiment(path)


def sweep(exp, out, **kw):
    prepare(exp, out, kw.pop("overwrite", False))
    return run_sweep(exp, out, **kw)


#: columns that hold times measured on this machine: they differ between any two runs
TIMED = ("wall_s", "cpu_s", "wall_seconds")


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame if c in TIMED or "seconds" in c]).sort_values("key").reset_index(
        drop=True)


def test_the_grid_is_the_product_of_the_axes_with_aliases_labels_data_and_relative_paths(tmp_path):
    (tmp_path / "exp.toml").write_text("""
[experiment]
sweep = "round"
[fixed]
trace = "traces/a.trace"
[axes]
round = [120, 360]
multi-gpu = [true, false]
[axes.throughputs]
"small" = "{data}/small.json"
"big" = "tables/big.json"
""")
    exp = read_experiment(tmp_path / "exp.toml", data=tmp_path / "d")
    cells = exp.cells()
    assert exp.name == "exp" and exp.sweep == "round_length" and len(cells) == 8
    assert [c.axes["round_length"] for c in cells[:4]] == [120] * 4
    assert {c.axes["throughputs"] for c in cells} == {"small", "big"}
    assert len({c.key for c in cells}) == 8
    first = cells[0].request(exp.base)
    assert first.round_length == 120 and first.multi_gpu is True
    assert first.trace == str(tmp_path / "traces/a.trace")
    assert first.throughputs == str((tmp_path / "d").resolve() / "small.json")
    assert cells[1].request(exp.base).throughputs == str(tmp_path / "tables/big.json")


@pytest.mark.parametrize("text, message", [
    ("[axes]\nrounds = [1]\n", "axes.rounds: not a simulate option"),
    ("[fixed]\nseed = 1\n[axes]\nseed = [1, 2]\n", "axes.seed: also in [fixed]"),
    ("[experiment]\nsweep = \"lam\"\n[axes]\nseed = [1]\n", "experiment.sweep: 'lam' is not an axis"),
    ("[axes]\nseed = []\n", "axes.seed: expected a non-empty list"),
    ("[fixed]\ntrace = \"{data}/x\"\n", "fixed.trace: uses {data}"),
    ("[axes\n", "not TOML"),
])
def test_a_bad_experiment_file_is_one_error_naming_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ExperimentError, match="bad.toml") as info:
        read_experiment(path)
    assert message in str(info.value)


def test_a_sweep_writes_one_row_per_cell_and_a_failed_cell_is_recorded_without_stopping_the_others(tmp_path):
    exp = experiment(tmp_path, ("fifo", "elasticflow"))  # elasticflow plans GPUs of one type: not on this cluster
    rows = sweep(exp, tmp_path / "out", workers=2)
    frame = pd.read_csv(tmp_path / "out" / "results.csv")
    assert len(rows) == len(frame) == 8
    failed = frame[frame.policy == "elasticflow"]
    assert (failed.status == "failed").all() and failed.error.str.startswith("WorkloadError").all()
    ok = frame[frame.policy == "fifo"]
    assert (ok.status == "ok").all() and (ok.jobs_completed == 8).all() and (ok.average_jct > 0).all()
    columns = {"lam", "seed", "solver", "run_policy", "wall_s", "cpu_s", "schedopt_version", "solver_version"}
    assert columns <= set(frame)
    assert pd.read_parquet(tmp_path / "out" / "results.parquet").shape == frame.shape
    cell = tmp_path / "out" / "cells" / ok.key.iloc[0]
    assert {"jobs.csv", "timeline.csv", "summary.json", "cell.json", "row.json"} <= {p.name for p in cell.iterdir()}


def test_an_unknown_policy_is_refused_when_the_experiment_is_read(tmp_path):
    with pytest.raises(ExperimentError, match=r"small.toml: axes.policy: unknown policy 'no-such-policy'"):
        experiment(tmp_path, ("fifo", "no-such-policy"))


def test_an_interrupted_sweep_resumes_without_running_a_finished_cell_again(tmp_path, monkeypatch):
    exp = experiment(tmp_path)
    ran = []
    real = sweep_runner.run_cell
    monkeypatch.setattr(sweep_runner, "run_cell", lambda cell, base: ran.append(cell.key) or real(cell, base))

    def interrupt(state):
        if state.done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(exp, tmp_path / "out", workers=1, on_progress=interrupt)
    assert len(pd.read_csv(tmp_path / "out" / "results.csv")) == 3
    assert not list((tmp_path / "out").rglob("*.tmp"))
    seen = []
    rows = sweep(exp, tmp_path / "out", workers=1, on_progress=lambda s: seen.append((s.done, s.skipped)))
    assert len(rows) == 8 and len(ran) == 8 and len(set(ran)) == 8
    assert seen[0] == (3, 3) and seen[-1] == (8, 3)
    again = sweep(exp, tmp_path / "out", workers=1, force=True)
    assert len(ran) == 16 and comparable(pd.DataFrame(again)).equals(comparable(pd.DataFrame(rows)))


def test_a_sweep_on_a_local_ray_head_gives_the_same_results_as_local_processes(tmp_path):
    ray = pytest.importorskip("ray")
    exp = experiment(tmp_path)
    local = sweep(exp, tmp_path / "local", workers=2)
    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = sweep(exp, tmp_path / "ray", address="local")
    finally:
        ray.shutdown()
    assert comparable(pd.DataFrame(on_ray)).equals(comparable(pd.DataFrame(local)))


def test_a_report_of_a_sweep_and_a_run_has_its_figures_and_one_self_contained_page(tmp_path):
    exp = experiment(tmp_path)
    sweep(exp, tmp_path / "sweep", workers=2)
    res = CliRunner().invoke(app, ["simulate", "--generate", "8", "--cluster", "v100=4,p100=4,k80=4", "--policy",
                                   "fifo", "--out", str(tmp_path / "run"), "--no-progress"])
    assert res.exit_code == 0, res.output
    paths = write_report([tmp_path / "sweep", tmp_path / "run"], tmp_path / "report")
    names = {p.name for p in paths}
    assert {"jct_cdf.png", "queueing_cdf.png", "fairness_cdf.png", "utilization.png", "solver_cdf.png",
            "small_average_jct.png", "small_utilization.png", "report.html"} <= names
    assert "deadlines.png" not in names
    with Image.open(tmp_path / "report" / "jct_cdf.png") as png:
        assert png.size == (680, 500)
    page = (tmp_path / "report" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == len(paths) - 1
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]*", "", page)  # base64 can spell "http" by chance
    assert "http" not in text.replace("http-equiv", "") and "<table>" in page and "max_min_fairness_perf" in page
    with pytest.raises(ResultsExistError, match=r"holds results of an earlier run \(report.html\)"):
        write_report([tmp_path / "sweep"], tmp_path / "report")


def test_no_command_replaces_earlier_results_without_overwrite(tmp_path):
    args = ["simulate", "--generate", "6", "--cluster", "v100=2", "--policy", "fifo", "--out", str(tmp_path / "run"),
            "--no-progress"]
    cli = CliRunner()
    assert cli.invoke(app, args).exit_code == 0
    before = (tmp_path / "run" / "summary.json").stat().st_mtime_ns
    refused = cli.invoke(app, args)
    assert refused.exit_code == 2 and "holds results of an earlier run" in refused.output
    assert (tmp_path / "run" / "summary.json").stat().st_mtime_ns == before
    assert cli.invoke(app, [*args, "--overwrite"]).exit_code == 0
    exp = experiment(tmp_path)
    sweep(exp, tmp_path / "sweep", workers=1)
    other = experiment(tmp_path, ("fifo",), name="other.toml")
    with pytest.raises(ResultsExistError, match="another experiment"):
        prepare(other, tmp_path / "sweep", overwrite=False)
    with pytest.raises(ResultsExistError, match="earlier run"):
        prepare(other, tmp_path / "run", overwrite=False)
    assert len(sweep(other, tmp_path / "sweep", workers=1, overwrite=True)) == 4
    assert json.loads((tmp_path / "sweep" / "experiment.json").read_text())["key"] == other.key


def test_result_files_get_the_umask_and_an_interrupted_write_leaves_nothing(tmp_path, monkeypatch):
    old = os.umask(0o002)
    try:
        write_atomically(tmp_path / "a.csv", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.csv").stat().st_mode) == 0o664

    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(tmp_path / "b.csv", "y\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


def test_a_deadline_sweep_of_published_files_reports_its_deadline_ratios(tmp_path, shared_data):
    (tmp_path / "ef.toml").write_text("""
[experiment]
name = "ef"
sweep = "cluster-spec"
[fixed]
trace = "{data}/elasticflow/generated/gen10_seed1.csv"
throughput-dir = "{data}/elasticflow/throughputs_A100"
[axes]
policy = ["elasticflow", "edf"]
[axes.cluster-spec]
"4" = "{data}/elasticflow/cluster_specs/n1g4.csv"
"8" = "{data}/elasticflow/cluster_specs/n1g8.csv"
""")
    exp = read_experiment(tmp_path / "ef.toml", data=shared_data)
    rows = sweep(exp, tmp_path / "out", workers=2)
    assert [r["status"] for r in rows] == ["ok"] * 4
    assert all(0 <= r["deadline_satisfactory_ratio"] <= 1 and r["deadline_jobs"] == 10 for r in rows)
    names = {p.name for p in write_report([tmp_path / "out"], tmp_path / "report")}
    assert {"deadlines.png", "ef_deadline_satisfactory_ratio.png"} <= names


@pytest.mark.parametrize("name", ["gavel_jct_vs_load", "shockwave_policies", "elasticflow_deadlines_vs_cluster",
                                  "pollux_jct_vs_load", "lucid_philly"])
def test_every_example_reads_and_names_files_that_exist(name, shared_data):
    from pathlib import Path

    exp = read_experiment(Path(__file__).parents[1] / "examples" / f"{name}.toml", data=shared_data)
    cells = exp.cells()
    assert cells and len({c.key for c in cells}) == len(cells)
    for cell in cells:
        req = cell.request(exp.base)
        for path in (req.trace, req.throughputs, req.cluster_spec, req.throughput_dir, req.vc_config, req.lucid_data):
            assert path is None or Path(path).exists(), path
