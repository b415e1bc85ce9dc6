"""schedopt: scheduling policies for shared, heterogeneous GPU clusters as mathematical programs.

The short public API; the work is done in the packages below (optim, formulations,
allocators, simulator, ...).
"""

from allocators import POLICIES, Policy, make_policy
from formulations import Allocation, AllocationProblem, allocation_violations
from optim import Model, Result, SolveOptions, Status, solve
from simulator import (
    build_problem,
    example_table,
    parse_cluster,
    read_gavel_json,
    read_jobs_csv,
    sample_jobs,
)
from simulator.simulate import simulate

__version__ = "0.1.0"

__all__ = [
    "POLICIES", "Allocation", "AllocationProblem", "Model", "Policy", "Result", "SolveOptions",
    "Status", "allocation_violations", "build_problem", "example_table", "make_policy",
    "parse_cluster", "read_gavel_json", "read_jobs_csv", "sample_jobs", "simulate", "solve",
]
