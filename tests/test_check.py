"""schedopt check: each check fails on a policy built to break it, with a shrunk counterexample
that solve --problem replays; and holds where it should."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from schedopt.testing import CheckSettings, check_policy, equal_split, invariants, problems
from simulator.problem_files import read_problem_json

PLANTED = textwrap.dedent('''
    import numpy as np
    from schedopt import Allocation, Policy, ProgramPolicy, Model, add_shares, throughput_rows
    from formulations.rates import runnable, isolated_shares


    class _Shares(Policy):
        system = "test"
        program = "heuristic"

        def allocate(self, problem):
            return Allocation(problem, self.shares(problem), self.name)


    class OverCapacity(_Shares):
        """Every job runs all the time wherever it can run: more GPUs than a type has once two jobs share it."""
        name = "planted_over_capacity"

        def shares(self, problem):
            runs = runnable(problem)
            return runs / np.maximum(runs.sum(axis=1, keepdims=True), 1)


    class ByIndex(_Shares):
        """Jobs served in index order, each as much as fits: later jobs envy earlier ones."""
        name = "planted_by_index"

        def shares(self, problem):
            x = np.zeros(problem.throughputs.shape)
            free = problem.capacities.astype(float).copy()
            runs = runnable(problem)
            for i in range(problem.num_jobs):
                for j in np.argsort(-problem.throughputs[i]):
                    if runs[i, j] and x[i].sum() < 1:
                        take = min(1 - x[i].sum(), free[j] / problem.scale_factors[i])
                        x[i, j] += take
                        free[j] -= take * problem.scale_factors[i]
            return x


    class HalfIsolated(_Shares):
        """Half of the equal split: valid, but it leaves GPUs idle (not Pareto efficient)."""
        name = "planted_half"

        def shares(self, problem):
            return isolated_shares(problem) / 2


    class Starve(_Shares):
        """Job 0 gets nothing: below its equal split."""
        name = "planted_starve"

        def shares(self, problem):
            x = isolated_shares(problem)
            x[0] = 0
            return x


    class Fastest(_Shares):
        """All of each type to the job reporting the highest throughput on it: lying up pays."""
        name = "planted_fastest"

        def shares(self, problem):
            x = np.zeros(problem.throughputs.shape)
            T = np.where(runnable(problem), problem.throughputs, 0)
            for j in range(problem.num_types):
                i = int(np.argmax(T[:, j]))
                if T[i, j] > 0 and x[i].sum() < 1:
                    x[i, j] = min(1 - x[i].sum(), problem.capacities[j] / problem.scale_factors[i])
            return x


    class Unseeded(_Shares):
        """Shares drawn at random on every call: not deterministic."""
        name = "planted_unseeded"

        def shares(self, problem):
            return isolated_shares(problem) * np.random.default_rng().uniform(0.5, 1.0)


    class SolverDependent(ProgramPolicy):
        """Maximizes total throughput on HiGHS and half of it elsewhere: backends disagree."""
        name = "planted_solver_dependent"

        def build(self, problem):
            model = Model(self.name)
            x = add_shares(model, problem)
            weight = 1.0 if self.solver == "highs" else 0.5
            model.set_objective({x: weight * problem.throughputs}, sense="max")
            return model
''')


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    path = tmp_path_factory.mktemp("planted") / "planted.py"
    path.write_text(PLANTED)
    return path


FAST = CheckSettings(examples=15, solver="highs", backends=("highs", "clarabel"))


def _only(ref: str, check: str, cfg: CheckSettings = FAST):
    [outcome] = check_policy(ref, (check,), cfg)
    return outcome


def _jobs(outcome) -> int:
    return len(outcome.counterexample["problem"]["job_ids"])


@pytest.mark.parametrize(("cls", "check", "most_jobs"), [
    ("OverCapacity", "invariants", 2),
    ("ByIndex", "envy_freeness", 2),
    ("HalfIsolated", "pareto_efficiency", 1),
    ("Starve", "sharing_incentive", 1),
    ("Fastest", "strategy_proofness", 2),
    ("Unseeded", "determinism", 1),
    ("SolverDependent", "solver_agreement", 1),
])
def test_each_check_fails_on_a_policy_built_to_break_it_and_shrinks(planted, cls, check, most_jobs):
    outcome = _only(f"{planted}:{cls}", check)
    assert outcome.failed, outcome
    assert outcome.counterexample["check"] == check
    assert _jobs(outcome) <= most_jobs, outcome.counterexample["problem"]


def test_the_checks_hold_where_they_should(planted):
    assert _only("isolated", "invariants").status == "holds"
    assert _only("isolated", "strategy_proofness").status == "holds"
    assert _only("max_sum_throughput_perf", "pareto_efficiency").status == "holds"
    assert _only("max_min_fairness_perf", "determinism").status == "holds"
    assert _only("max_min_fairness_perf", "solver_agreement").status == "holds"
    assert _only(f"{planted}:HalfIsolated", "solver_agreement").status == "skipped"
    assert _only("max_min_fairness_water_filling_perf", "pareto_efficiency").status == "holds"


def test_slot_and_round_policies_run_on_drawn_workloads():
    cfg = CheckSettings(examples=10)
    for ref in ("elasticflow", "shockwave", "edf"):
        outcomes = check_policy(ref, ("invariants", "determinism", "envy_freeness"), cfg)
        assert [o.status for o in outcomes] == ["holds", "holds", "skipped"], outcomes


def test_a_counterexample_replays_with_solve(planted, tmp_path):
    # sharing incentive, not envy-freeness: the over-capacity policy fails both, and shrinking its envy
    # counterexample took 41 s of this test's 55
    out = tmp_path / "cx"
    args = [sys.executable, "-m", "schedopt", "check", f"{planted}:ByIndex", f"{planted}:OverCapacity",
            "--properties", "sharing_incentive", "--examples", "10", "--out", str(out), "--workers", "1"]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    assert "planted_by_index" in done.stdout and "replay: schedopt solve" in " ".join(done.stdout.split())
    path = out / "planted_by_index.sharing_incentive.json"
    problem, doc = read_problem_json(path)
    assert doc["policy"] == f"{planted}:ByIndex" and problem.num_jobs == 2
    replay = subprocess.run([sys.executable, "-m", "schedopt", "solve", "--problem", str(path)],
                            capture_output=True, text=True, check=False)
    assert replay.returncode == 1 and "check sharing_incentive: fails" in replay.stdout, replay.stdout + replay.stderr
    capacity = json.loads((out / "planted_over_capacity.invariants.json").read_text())
    assert "GPUs allocated, capacity" in capacity["message"]
    again = subprocess.run(args, capture_output=True, text=True, check=False)
    assert again.returncode == 2 and "--overwrite" in again.stderr


def test_check_takes_every_built_in_and_refuses_unknown_properties():
    done = subprocess.run([sys.executable, "-m", "schedopt", "check", "isolated", "--properties", "fairness"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "--properties 'fairness': unknown fairness" in done.stderr


def test_users_write_their_own_tests_with_the_strategies():
    from hypothesis import given, settings

    from allocators import make_policy

    @settings(max_examples=15)
    @given(problems(max_jobs=5))
    def check_isolated(problem):
        allocation = make_policy("isolated").allocate(problem)
        assert invariants(allocation) is None
        assert np.allclose(allocation.x, equal_split(problem)) or not np.allclose(problem.weights, 1)

    check_isolated()
