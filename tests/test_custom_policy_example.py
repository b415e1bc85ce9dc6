"""examples/custom_policy: a user's policy (max-min fairness with deadline floors) as its own
package. Loaded by file reference, it passes the package's own schedopt.testing tests; its
pyproject declares the entry point schedopt lists; its experiments read."""

import importlib.util
import inspect
import tomllib
from pathlib import Path

import pytest

from allocators import load
from schedopt.experiments.spec import read_experiment
from schedopt.policy import ProgramPolicy

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_policy"
REFERENCE = "examples/custom_policy/deadline_floors/__init__.py:DeadlineFloors"


def _example_tests():
    spec = importlib.util.spec_from_file_location("custom_policy_example_tests",
                                                  EXAMPLE / "tests" / "test_deadline_floors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TESTS = _example_tests()


def test_the_policy_loads_by_file_reference():
    cls = load(REFERENCE)
    assert issubclass(cls, ProgramPolicy) and cls.name == "deadline_floors" and cls.system == "user"
    assert cls.claims == frozenset() and not cls.uses_pairs


@pytest.mark.parametrize("name", sorted(n for n, f in vars(TESTS).items() if n.startswith("test_") and callable(f)))
def test_the_example_package_passes_its_own_tests(name, monkeypatch):
    monkeypatch.setattr(TESTS, "DeadlineFloors", load(REFERENCE))
    test = getattr(TESTS, name)
    assert not inspect.signature(test).parameters  # hypothesis fills in the drawn problems
    test()


def test_the_pyproject_declares_the_entry_point_and_the_version():
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    assert project["name"] == "schedopt-deadline-floors" and "schedopt" in project["dependencies"]
    module, _, attr = project["entry-points"]["schedopt.policies"]["deadline_floors"].partition(":")
    path = EXAMPLE / module / "__init__.py"
    assert attr == "DeadlineFloors" and load(f"{path}:{attr}").name == "deadline_floors"
    assert f'__version__ = "{project["version"]}"' in path.read_text()


def test_the_gavel_experiment_reads_without_data():
    exp = read_experiment(EXAMPLE / "experiment_gavel.toml")
    cells = exp.cells()
    assert len(cells) == 24 and exp.sweep == "lam" and exp.base == EXAMPLE
    assert {c.axes["policy"] for c in cells} == {"deadline_floors", "max_min_fairness_perf",
                                                 "finish_time_fairness_perf", "fifo"}
    policies = {c.request(exp.base).policy for c in cells}
    assert f"{EXAMPLE / 'deadline_floors' / '__init__.py'}:DeadlineFloors" in policies


def test_the_elasticflow_experiment_names_files_that_exist(shared_data):
    exp = read_experiment(EXAMPLE / "experiment_elasticflow.toml", data=shared_data)
    cells = exp.cells()
    assert len(cells) == 10 and "elasticflow" in {c.axes["policy"] for c in cells}
    for cell in cells:
        req = cell.request(exp.base)
        assert all(Path(p).exists() for p in (req.trace, req.cluster_spec, req.throughput_dir))
        assert req.policy == "elasticflow" or ":" not in req.policy or Path(req.policy.rpartition(":")[0]).is_file()
