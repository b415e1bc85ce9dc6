"""Running training jobs for real: a lease-aware iterator for any PyTorch training loop,
reference workloads (small ResNet, Transformer LM, recommendation model) on synthetic
data, a profiler that measures their throughput table on the hardware at hand, and a
Ray executor that runs the simulator's round plans with them.

Names are imported on first use: ``LeaseIterator`` needs no PyTorch; the rest need the
``runtime`` extra (``pip install -e ".[runtime]"``).
"""

from __future__ import annotations

import importlib

_HOME = {
    "LeaseIterator": "lease", "LeaseReport": "lease",
    "CheckpointError": "checkpoint", "load_checkpoint": "checkpoint", "save_checkpoint": "checkpoint",
    "WORKLOADS": "workloads", "MODEL_SIZES": "workloads", "Workload": "workloads", "WorkloadSpec": "workloads",
    "make_workload": "workloads",
    "train_lease": "training",
    "ProfileError": "profiler", "profile": "profiler", "resolve_device": "profiler",
    "reference_workload": "job_map", "workload_spec": "job_map",
    "LeaseRecord": "ray_executor", "RayExecutor": "ray_executor",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'runtime_bridge' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
