"""The public policy contract: a user's program policy (Model or cvxpy), behaviour by attributes,
and policies loaded by module, by file, by entry point and by register()."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers import tiny

import schedopt
from allocators import UnknownPolicyError, load, make_policy
from allocators.registry import BUILT_IN, LOADED, POLICIES

MAX_MIN = textwrap.dedent('''
    import numpy as np
    import schedopt
    from schedopt import Model, ProgramPolicy, add_shares, throughput_rows


    class MaxMin(ProgramPolicy):
        """Gavel's heterogeneity-aware max-min fairness, written against the public contract."""

        name = "user_max_min"

        def build(self, problem):
            W, T = problem.capacities, problem.throughputs
            k = problem.scale_factors / (problem.weights * (T @ W) / W.sum())
            model = Model(self.name)
            x = add_shares(model, problem)
            z = model.add_variables("z", 1, lb=-np.inf)
            rows = throughput_rows(problem, k).to_csr()
            model.add_rows("fair", {z: np.ones((problem.num_jobs, 1)), x: -rows}, hi=0.0)
            model.set_objective({z: 1.0}, sense="max")
            return model


    class CvxMaxMin(ProgramPolicy):
        """The same program in cvxpy, as Gavel's code states it."""

        name = "user_cvx_max_min"

        def build(self, problem):
            import cvxpy as cp

            W, T, s = problem.capacities, problem.throughputs, problem.scale_factors
            k = s / (problem.weights * (T @ W) / W.sum())
            x = cp.Variable(T.shape, nonneg=True, name="x")
            runs = (T > 0) & (s[:, None] <= W[None, :])
            return cp.Problem(cp.Maximize(cp.min(cp.multiply(k, cp.sum(cp.multiply(T, x), axis=1)))),
                              [cp.sum(x, axis=1) <= 1, s @ x <= W, cp.multiply(~runs, x) == 0])


    class LogUtility(ProgramPolicy):
        """Proportional fairness: a convex program with a log, solved by cvxpy's own solvers."""

        name = "user_log_utility"
        program = "convex"

        def build(self, problem):
            import cvxpy as cp

            W, T, s = problem.capacities, problem.throughputs, problem.scale_factors
            x = cp.Variable(T.shape, nonneg=True, name="x")
            runs = (T > 0) & (s[:, None] <= W[None, :])
            rate = cp.sum(cp.multiply(T / T.max(axis=1, keepdims=True), x), axis=1)
            return cp.Problem(cp.Maximize(cp.sum(cp.log(rate))),
                              [cp.sum(x, axis=1) <= 1, s @ x <= W, cp.multiply(~runs, x) == 0])


    class NamedPerf(MaxMin):
        name = "my_perf_policy"


    class NotAPolicy:
        name = "nothing"


    class Abstract(schedopt.ProgramPolicy):
        name = "abstract"


    class Nameless(MaxMin):
        name = ""


    class Clash(MaxMin):
        name = "fifo"
''')


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "my_policies.py"
    path.write_text(MAX_MIN)
    return path


PROBLEM = tiny([[4.0, 2.0, 1.0], [3.0, 3.0, 0.0], [1.0, 0.5, 0.2], [2.0, 0.0, 1.0]], caps=(2, 1, 2),
               weights=np.array([1.0, 2.0, 1.0, 1.0]), scales=np.array([1, 1, 2, 1]))


def test_a_users_max_min_equals_gavels_on_every_lp_backend(user_file):
    gavel = make_policy("max_min_fairness_perf", "highs").allocate(PROBLEM).objective
    for cls in ("MaxMin", "CvxMaxMin"):
        for solver in ("highs", "clarabel", "cvxpy:SCIPY"):
            allocation = make_policy(f"{user_file}:{cls}", solver).allocate(PROBLEM)
            assert allocation.objective == pytest.approx(gavel, rel=1e-6), (cls, solver)
            assert schedopt.allocation_violations(allocation) == []


def test_a_cvxpy_program_with_a_log_is_solved_by_cvxpy(user_file):
    for solver in ("clarabel", "cvxpy:CLARABEL", "cvxpy:ECOS"):
        allocation = make_policy(f"{user_file}:LogUtility", solver).allocate(PROBLEM)
        assert allocation.result.backend.startswith("cvxpy:")
        assert schedopt.allocation_violations(allocation) == []
    policy = load(f"{user_file}:LogUtility")
    assert policy.program is schedopt.ProgramClass.CONVEX


def test_behaviour_comes_from_attributes_not_from_the_name(user_file):
    assert load(f"{user_file}:NamedPerf").fixed_type_order is False
    assert make_policy("max_min_fairness_perf").fixed_type_order is True
    with pytest.raises(ValueError, match="unknown claims"):
        type("Bad", (schedopt.ProgramPolicy,), {"name": "bad", "claims": ("fairness",), "build": lambda s, p: None})


def test_user_policies_simulate_by_module_and_by_file(user_file, monkeypatch):
    monkeypatch.syspath_prepend(str(user_file.parent))
    by_module = schedopt.simulate(generate={"num_jobs": 6, "seed": 1}, policy="my_policies:MaxMin",
                                  cluster="v100=2,p100=2,k80=2", solver="highs")
    by_file = schedopt.simulate(generate={"num_jobs": 6, "seed": 1}, policy=f"{user_file}:MaxMin",
                                cluster="v100=2,p100=2,k80=2", solver="highs")
    gavel = schedopt.simulate(generate={"num_jobs": 6, "seed": 1}, policy="max_min_fairness_perf",
                              cluster="v100=2,p100=2,k80=2", solver="highs")
    assert by_module.summary["average_jct"] == by_file.summary["average_jct"]
    assert by_module.summary["policy"] == "user_max_min"
    assert np.isfinite(gavel.summary["average_jct"])


@pytest.mark.parametrize(("ref", "message"), [
    ("no_such_module_xyz:Thing", "no module named 'no_such_module_xyz'"),
    ("/no/such/file.py:Thing", "no such file"),
    ("{file}:Missing", "has no attribute 'Missing'"),
    ("{file}:NotAPolicy", "class NotAPolicy is not a policy"),
    ("{file}:np", "a module is not a policy"),
    ("{file}:Abstract", "is abstract: it must define build"),
    ("{file}:Nameless", "has no name"),
    ("{file}:Clash", "clashes with the built-in policy"),
    ("{broken}:Thing", "loading .* failed: ZeroDivisionError"),
    ("{syntax}:Thing", r"SyntaxError: .*line 1"),
    ("no_such_policy", "unknown policy 'no_such_policy'"),
])
def test_a_bad_reference_is_one_line_naming_it(user_file, tmp_path, ref, message):
    (tmp_path / "broken.py").write_text("1 / 0\n")
    (tmp_path / "syntax.py").write_text("def (:\n")
    ref = ref.format(file=user_file, broken=tmp_path / "broken.py", syntax=tmp_path / "syntax.py")
    with pytest.raises(UnknownPolicyError, match=message):
        load(ref)
    done = subprocess.run([sys.executable, "-m", "schedopt", "simulate", "--example", "--policy", ref],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("schedopt: error: ") and "Traceback" not in done.stderr


def _install_plugin(root, name: str, value: str, package: str = "schedopt-test-plugin") -> None:
    """A distribution as pip leaves it: a .dist-info folder with entry_points.txt, on sys.path."""
    info = root / f"{package.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[schedopt.policies]\n{name} = {value}\n")


def test_installed_plugins_load_by_entry_point_name_and_are_listed(user_file, tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "plugin_policies.py").write_text(MAX_MIN)
    _install_plugin(site, "plugged_max_min", "plugin_policies:MaxMin")
    monkeypatch.syspath_prepend(str(site))
    cls = load("plugged_max_min")
    assert cls.name == "user_max_min" and LOADED["plugged_max_min"] is cls and "plugged_max_min" not in POLICIES
    assert make_policy("plugged_max_min", "highs").allocate(PROBLEM).objective == pytest.approx(
        make_policy("max_min_fairness_perf", "highs").allocate(PROBLEM).objective)
    env = {"PYTHONPATH": str(site), "COLUMNS": "250"}
    listed = subprocess.run([sys.executable, "-m", "schedopt", "policies"], capture_output=True, text=True,
                            check=False, env={**__import__("os").environ, **env})
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "plugged_max_min" in line)
    assert "schedopt-test-plugin 1.2.3" in row and "user" in row


def test_plugins_clashing_with_built_ins_or_not_policies_are_reported(user_file, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "plugin_policies.py").write_text(MAX_MIN)
    _install_plugin(site, "fifo", "plugin_policies:MaxMin", "clash-a")
    _install_plugin(site, "renamed_clash", "plugin_policies:Clash", "clash-b")
    _install_plugin(site, "not_one", "os:getcwd", "clash-c")
    env = {**__import__("os").environ, "PYTHONPATH": str(site)}
    listed = subprocess.run([sys.executable, "-m", "schedopt", "policies"], capture_output=True, text=True,
                            check=False, env=env)
    assert listed.returncode == 0, listed.stderr
    text = listed.stderr
    assert len(text.splitlines()) == 3
    assert "plugin 'fifo' clashes with the built-in policy of that name" in text
    assert "class Clash's name 'fifo' clashes with the built-in policy" in text
    assert "is not a policy" in text
    done = subprocess.run([sys.executable, "-m", "schedopt", "solve", "--example", "--policy", "renamed_clash"],
                          capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 2 and "clashes with the built-in policy" in done.stderr


def test_register_enters_a_class_by_its_name(user_file):
    cls = load(f"{user_file}:MaxMin")
    renamed = type("Registered", (cls,), {"name": "registered_max_min_test"})
    assert schedopt.register(renamed) is renamed
    assert make_policy("registered_max_min_test", "highs").name == "registered_max_min_test"
    with pytest.raises(UnknownPolicyError, match="built-in"):
        schedopt.register(type("Clashing", (cls,), {"name": "isolated"}))
    assert "isolated" in BUILT_IN


def test_bench_times_a_users_policy(user_file, tmp_path):
    done = subprocess.run([sys.executable, "-m", "schedopt", "bench", "--policy", f"{user_file}:MaxMin",
                           "--jobs", "8", "--backend", "highs", "--out", str(tmp_path / "b"), "--no-progress"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    import pandas as pd

    row = pd.read_csv(tmp_path / "b" / "bench.csv").iloc[0]
    assert row["status"] == "optimal" and row["programs"] == 1 and row["cols"] > 8


def test_a_sweep_takes_file_references_from_the_experiment_folder(user_file, tmp_path):
    from schedopt.experiments.spec import ExperimentError, read_experiment

    folder = user_file.parent
    (folder / "exp.toml").write_text('[fixed]\ngenerate = 4\ncluster = "v100=2"\n\n'
                                     '[axes]\npolicy = ["my_policies.py:MaxMin", "fifo"]\n')
    exp = read_experiment(folder / "exp.toml")
    request = exp.cells()[0].request(exp.base)
    assert request.policy == f"{folder / 'my_policies.py'}:MaxMin"
    (folder / "bad.toml").write_text('[axes]\npolicy = ["my_policies.py:Nope"]\n')
    with pytest.raises(ExperimentError, match=r"bad.toml: axes.policy: .*has no attribute 'Nope'"):
        read_experiment(folder / "bad.toml")
