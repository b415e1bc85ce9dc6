"""Build / translate / solve time of a policy's program per backend and size.

    python -m benchmarks.solve_time --jobs 1000 10000 --out benchmarks/results/solve_time.csv

Jobs are sampled (seed 0) from the built-in table, or from ``--throughputs`` (Gavel's
JSON); the cluster has ``jobs / 4`` GPUs of each of its types (at least one). Gurobi is
left out unless ``--allow-gurobi``, and its timings are then printed but never written
(the pip license forbids publishing them).
"""

from __future__ import annotations

import argparse
import platform
import time

import pandas as pd

from formulations import max_min_fairness
from optim import Status, available_backends, solve
from simulator import (
    build_problem,
    example_table,
    parse_cluster,
    read_gavel_json,
    sample_jobs,
)
from simulator.files import write_atomically

FORMULATIONS = {
    "max_min_fairness_perf": lambda p: max_min_fairness.build(p, "perf"),
    "max_min_fairness": lambda p: max_min_fairness.build(p, "agnostic"),
}


def measure(policy: str, num_jobs: int, backends: list[str], table, seed: int = 0) -> list[dict]:
    gpus = max(1, num_jobs // 4)
    cluster = parse_cluster(",".join(f"{t}={gpus}" for t in table.worker_types))
    problem = build_problem(cluster, sample_jobs(table, num_jobs, seed), table)
    rows = []
    for backend in backends:
        t0 = time.perf_counter()
        model = FORMULATIONS[policy](problem)
        canon = model.canonical()
        result = solve(canon, backend, check=False)
        wall = time.perf_counter() - t0
        rows.append({
            "policy": policy, "jobs": num_jobs, "worker_types": len(table.worker_types),
            "gpus_per_type": gpus, "backend": backend, "status": str(result.status),
            "objective": result.objective, "build_ms": 1e3 * canon.build_seconds,
            "translate_ms": 1e3 * result.timings.translate, "solve_ms": 1e3 * result.timings.solve,
            "wall_ms": 1e3 * wall, "rows": canon.num_rows, "cols": canon.num_vars,
            "nonzeros": canon.num_nonzeros, "solver_version": result.solver_version,
            "message": "" if result.status is Status.OPTIMAL else result.message,
        })
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="max_min_fairness_perf", choices=sorted(FORMULATIONS))
    parser.add_argument("--jobs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--backends", nargs="+", default=None, help="default: every installed backend")
    parser.add_argument("--throughputs", default=None, help="Gavel JSON table (default: built-in)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", default=None, help="CSV file for the results")
    parser.add_argument("--allow-gurobi", action="store_true")
    args = parser.parse_args(argv)
    table = read_gavel_json(args.throughputs) if args.throughputs else example_table()
    backends = args.backends or [b.spec for b in available_backends()]
    if not args.allow_gurobi:
        backends = [b for b in backends if "gurobi" not in b.lower()]
    rows = []
    for num_jobs in args.jobs:
        for rep in range(args.repeat):
            for row in measure(args.policy, num_jobs, backends, table):
                row["repeat"] = rep
                rows.append(row)
                print(f"{row['jobs']:>7} {row['backend']:<16} {row['status']:<14} "
                      f"build {row['build_ms']:9.1f} ms  translate {row['translate_ms']:9.1f} ms  "
                      f"solve {row['solve_ms']:10.1f} ms  objective {row['objective']}", flush=True)
    frame = pd.DataFrame(rows)
    frame["machine"] = f"{platform.processor() or platform.machine()}, {platform.python_version()}"
    if args.out:
        publishable = frame[~frame["backend"].str.contains("gurobi", case=False)]
        write_atomically(args.out, publishable.to_csv(index=False))
        print(f"wrote {args.out} ({len(publishable)} rows; Gurobi rows are never written)")


if __name__ == "__main__":
    main()
