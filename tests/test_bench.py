"""``schedopt bench``: the sweep's rows, its files, and what it never writes."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from benchmarks.sweep import Sweep, bench_policies, run
from optim import Status, available_backends
from schedopt.cli import app
from simulator import example_table

HAVE_GUROBI = "gurobi" in {b.spec for b in available_backends()}


def test_rows_time_every_phase_and_agree_across_backends():
    table = example_table()
    sweep = Sweep(policies=("max_min_fairness_perf",), jobs=(16, 32), backends=("highs", "cvxpy:CLARABEL"),
                  worker_types=tuple(table.worker_types), repeat=2)
    rows = pd.DataFrame(list(run(sweep, table)))
    assert len(rows) == sweep.num_solves == 2 * 2 * 2
    assert (rows["status"] == str(Status.OPTIMAL)).all()
    for col in ("build_s", "translate_s", "solve_s", "solve_wall_s", "build_cpu_s", "solve_cpu_s"):
        assert (rows[col] >= 0).all(), col
    assert (rows["cols"] > 0).all() and (rows["nonzeros"] > 0).all()
    assert (rows.loc[rows["jobs"] == 16, "gpus_per_type"] == 4).all()  # jobs / 4 by default
    by_case = rows.groupby(["jobs", "repeat"])["objective"]
    assert ((by_case.max() - by_case.min()).abs() <= 1e-6).all()  # objectives agree, not allocations


def test_unknown_or_space_sharing_policy_is_a_clear_error():
    with pytest.raises(ValueError, match="benchmarks.packed"):
        Sweep(policies=("max_min_fairness_packed",), jobs=(8,), backends=("highs",), worker_types=("v100",))
    with pytest.raises(ValueError, match="cannot be timed"):
        Sweep(policies=("fifo",), jobs=(8,), backends=("highs",), worker_types=("v100",))
    assert "max_min_fairness_perf" in bench_policies() and "min_total_duration_perf" in bench_policies()


def test_cli_writes_its_files_and_never_gurobi_rows(tmp_path):
    out = tmp_path / "bench"
    backends = ["--backend", "highs"] + (["--backend", "gurobi"] if HAVE_GUROBI else [])
    res = CliRunner().invoke(app, ["bench", "--jobs", "8", "--jobs", "600", "--policy", "min_total_duration_perf",
                                   *backends, "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    frame = pd.read_csv(out / "bench.csv")
    assert set(frame["backend"]) == {"highs"} and len(frame) == 2
    assert pd.read_parquet(out / "bench.parquet").shape == frame.shape
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    info = json.loads((out / "machine.json").read_text())
    assert info["cores"] >= 1 and "highspy" in info["libraries"]
    if HAVE_GUROBI:  # shown, not written
        assert "2 Gurobi row(s) shown above, never written" in " ".join(res.output.split())


@pytest.mark.skipif(not HAVE_GUROBI, reason="gurobipy not installed")
def test_a_license_refusal_is_a_row_not_a_crash():
    table = example_table()
    sweep = Sweep(policies=("max_min_fairness_perf",), jobs=(1000,), backends=("gurobi",),
                  worker_types=tuple(table.worker_types))
    (row,) = run(sweep, table)
    assert row["status"] == str(Status.LICENSE_LIMIT) and "license" in row["message"]


def test_cli_bad_backend_and_worker_type_are_one_line_errors(tmp_path):
    for args in (["--backend", "nosuchsolver"], ["--worker-types", "v100,h900"]):
        res = CliRunner().invoke(app, ["bench", "--jobs", "8", *args, "--out", str(tmp_path / "b"), "--no-progress"])
        assert res.exit_code == 2
        assert res.output.strip().count("\n") == 0 and res.output.startswith("schedopt: error:")
    assert not (tmp_path / "b").exists()
