import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=40,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: the test files that start Ray (a local head) or a real run: one xdist worker runs them one after
#: another (``--dist loadgroup``), never beside each other
RAY_FILES = frozenset({"test_runtime_ray.py", "test_runtime_multinode.py", "test_runtime_lease.py",
                       "test_runtime_workloads.py", "test_interrupts.py", "test_experiments.py"})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in RAY_FILES:
            item.add_marker(pytest.mark.xdist_group("ray"))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"published reference data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def deadline_inputs(tmp_path):
    """A cluster spec (4 GPUs) and a folder of iteration tables for a deadline run."""
    spec = tmp_path / "n1g4.csv"
    spec.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,1,4,16,64\n")
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "bert.csv").write_text("global_batch_size,1,2,4\n64,1.0,1.8,3.2\n")
    return ["--cluster-spec", str(spec), "--throughput-dir", str(tables)]
