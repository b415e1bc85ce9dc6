"""schedopt: scheduling policies for shared, heterogeneous GPU clusters as mathematical programs.

The short public API; the work is done in the packages below (optim, formulations,
allocators, simulator, ...). Names are imported on first use, so ``import schedopt``
and the command line start fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_CONTRACT = ("PROPERTIES", "Charge", "JobPairs", "JobState", "JobsView", "Plans", "ProgramClass", "ProgramPolicy",
             "RoundPlan", "RoundPlanner", "RoundState", "SchedulingPolicy", "SlotPolicy", "add_shares", "register",
             "throughput_rows")

_HOME = {
    "POLICIES": "allocators", "Policy": "schedopt.policy", "make_policy": "allocators",
    "load_policy": "allocators",
    "Allocation": "formulations", "AllocationProblem": "formulations", "allocation_violations": "formulations",
    "Model": "optim", "Result": "optim", "SolveOptions": "optim", "Status": "optim", "solve": "optim",
    "build_problem": "simulator", "example_table": "simulator", "parse_cluster": "simulator",
    "read_gavel_json": "simulator", "read_jobs_csv": "simulator", "sample_jobs": "simulator",
    "simulate": "simulator.simulate",
    **{name: "schedopt.policy" for name in _CONTRACT},
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'schedopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), "load" if name == "load_policy" else name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
