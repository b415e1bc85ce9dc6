"""Where one ``allocate`` spends its time: finding classes, building, translating, the solver, the rest.

    python -m benchmarks.allocate_steps --data ../shared/data --jobs 256 1024 [--solver highs]

Instances are :mod:`benchmarks.versus_published`'s (m jobs of Gavel's multi-GPU mix on m / 2 GPUs of
each type of ``simulation_throughputs.json``), seeds 0 .. ``--instances`` - 1, each allocated
``--repeat`` times by a fresh ``make_policy(policy, solver)``. Per policy and size, the medians of:

- ``total_ms``: ``allocate`` end to end;
- ``merge_ms``: ``Policy._merged`` alone, the classes of equal jobs (0 where the policy does not merge
  on this solver);
- ``build_ms``, ``translate_ms``, ``solve_ms``: the models' builds, the backend's translations and
  the solver's own runs, summed over every program the call solved (:func:`optim.tally`: the
  makespan's regroupings, FTF's bisection steps);
- ``rest_ms``: total less those four (reading the results, decode, expansion, checks; the canonical
  form is part of the build).

Then, on a vertex backend (HiGHS, Gurobi: they have more than one LP method), the program the
allocation solved goes to the solver alone under each LP method (``primal``, ``simplex``, ``ipm``):
``<method>_ms`` (translation and run) and ``<method>_iterations``, medians over the instances.
Writes ``benchmarks/results/allocate_steps.csv``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from allocators import make_policy
from optim import Capability, SolveOptions, get_backend, solve, tally
from schedopt.bench import machine
from simulator import read_gavel_json

from .rows import write_rows
from .versus_published import RESULTS, instance

METHODS = ("primal", "simplex", "ipm")


def steps(policy: str, solver: str, problems: list, repeat: int) -> dict:
    """The medians described in the module docstring, over ``problems`` × ``repeat`` calls."""
    parts: dict[str, list[float]] = {k: [] for k in ("total", "merge", "build", "translate", "solve")}
    programs = []
    for problem in problems:
        for _ in range(repeat):
            pol = make_policy(policy, solver)
            tic = time.perf_counter()
            with tally() as spent:
                allocation = pol.allocate(problem)
            parts["total"].append(time.perf_counter() - tic)
            for name in ("build", "translate", "solve"):
                parts[name].append(getattr(spent, name))
            merge = 0.0
            if pol.merges:
                tic = time.perf_counter()
                pol._merged(problem)
                merge = time.perf_counter() - tic
            parts["merge"].append(merge)
        programs.append(allocation.program)
    row = {k + "_ms": round(statistics.median(v) * 1e3, 3) for k, v in parts.items()}
    row["rest_ms"] = round(row["total_ms"] - sum(row[k + "_ms"] for k in ("merge", "build", "translate", "solve")), 3)
    row["columns"] = programs[0].num_vars
    row["rows"] = programs[0].num_rows
    methods = METHODS if Capability.VERTEX in get_backend(solver).capabilities() else ()
    for method in methods:
        runs = []
        for program in programs:
            for _ in range(repeat):
                result = solve(program, solver, SolveOptions(method=method))
                runs.append((result.timings.translate + result.timings.solve, result.iterations))
        row[method + "_ms"] = round(statistics.median(t for t, _ in runs) * 1e3, 3)
        row[method + "_iterations"] = statistics.median(i for _, i in runs)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--jobs", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--policies", nargs="+", default=["max_min_fairness_perf", "max_sum_throughput_perf"])
    parser.add_argument("--solver", default="highs")
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "allocate_steps.csv")
    args = parser.parse_args()
    table = read_gavel_json(args.data / "gavel" / "simulation_throughputs.json")
    print(f"machine: {machine()}", flush=True)
    rows = []
    for policy in args.policies:
        for jobs in args.jobs:
            problems = [instance(table, jobs, seed) for seed in range(args.instances)]
            row = {"policy": policy, "jobs": jobs, "solver": args.solver,
                   **steps(policy, args.solver, problems, args.repeat)}
            print(row, flush=True)
            rows.append(row)
    write_rows(rows, args.out)


if __name__ == "__main__":
    main()
