"""schedopt: scheduling policies for shared, heterogeneous GPU clusters as mathematical programs.

The short public API; the work is done in the packages below (optim, formulations,
allocators, simulator, ...). Names are imported on first use, so ``import schedopt``
and the command line start fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_HOME = {
    "POLICIES": "allocators", "Policy": "allocators", "make_policy": "allocators",
    "Allocation": "formulations", "AllocationProblem": "formulations", "allocation_violations": "formulations",
    "Model": "optim", "Result": "optim", "SolveOptions": "optim", "Status": "optim", "solve": "optim",
    "build_problem": "simulator", "example_table": "simulator", "parse_cluster": "simulator",
    "read_gavel_json": "simulator", "read_jobs_csv": "simulator", "sample_jobs": "simulator",
    "simulate": "simulator.simulate",
}

__all__ = [
    "POLICIES", "Allocation", "AllocationProblem", "Model", "Policy", "Result", "SolveOptions",
    "Status", "allocation_violations", "build_problem", "example_table", "make_policy",
    "parse_cluster", "read_gavel_json", "read_jobs_csv", "sample_jobs", "simulate", "solve",
]


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'schedopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
