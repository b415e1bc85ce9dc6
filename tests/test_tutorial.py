"""The tutorial's code runs as written: docs/tutorial/max_min_pareto.py (included verbatim in
docs/tutorial.md) is loaded by its file reference, checked, simulated and swept."""

from pathlib import Path

import pytest

import schedopt
from allocators import load, make_policy
from schedopt.testing import CheckSettings, check_policy

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial"
POLICY = f"{TUTORIAL / 'max_min_pareto.py'}:MaxMinPareto"


def test_the_policy_is_at_most_40_lines_and_included_verbatim():
    assert len((TUTORIAL / "max_min_pareto.py").read_text().splitlines()) <= 40
    page = (TUTORIAL.parent / "tutorial.md").read_text()
    assert '--8<-- "docs/tutorial/max_min_pareto.py"' in page
    assert '--8<-- "docs/tutorial/experiment.toml"' in page


def test_it_reaches_gavels_max_min_level_and_claims_pareto_efficiency():
    cls = load(POLICY)
    assert cls.claims == frozenset({"pareto_efficiency"})
    problem = schedopt.build_problem(schedopt.parse_cluster("v100=2,p100=2,k80=2"),
                                     schedopt.sample_jobs(schedopt.example_table(), 8, 0),
                                     schedopt.example_table())
    ours = make_policy(POLICY, "highs").allocate(problem)
    gavel = make_policy("max_min_fairness_perf", "highs").allocate(problem)
    level = ours.result.value("z")[0]
    assert level == pytest.approx(gavel.objective, rel=1e-2)
    assert schedopt.allocation_violations(ours) == []


def test_check_confirms_its_claim():
    outcomes = check_policy(POLICY, None, CheckSettings(examples=15, solver="highs", backends=("highs", "clarabel")))
    assert {o.check: o.status for o in outcomes} == {
        "invariants": "holds", "determinism": "holds", "solver_agreement": "holds", "pareto_efficiency": "holds"}


def test_it_simulates_and_its_experiment_reads():
    from schedopt.experiments.spec import read_experiment

    result = schedopt.simulate(generate={"num_jobs": 8, "seed": 0, "multi_gpu": True}, policy=POLICY,
                               cluster="v100=4,p100=4,k80=4", solver="highs")
    assert result.summary["policy"] == "max_min_pareto" and result.summary["jobs_completed"] == 8
    exp = read_experiment(TUTORIAL / "experiment.toml")
    policies = {cell.request(exp.base).policy for cell in exp.cells()}
    assert POLICY in policies and "max_min_fairness_perf" in policies
