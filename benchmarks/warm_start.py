"""Warm re-solves against cold solves of a policy's LP after a small change of the job set.

    python -m benchmarks.warm_start --jobs 1000 10000 --repeat 3 --out benchmarks/results/warm_start.csv

For each size N: N+1 single-GPU jobs are sampled (seed 0) from the built-in table (or
``--throughputs``), on N/4 GPUs of each worker type. A HiGHS session (:class:`optim.Session`)
is loaded with the LP of the first N jobs (cold, not timed); then one scenario is applied:
``arrival`` (job N joins), ``departure`` (job N/2 leaves) or ``arrival+departure``, and the
warm re-solve (delta, update and simplex from the held basis) is timed against a cold solve
of the same LP by :func:`optim.solve` (HiGHS, interior point and crossover above 500
columns). Both exclude building the model, reported apart; the objectives must agree.
"""

from __future__ import annotations

import argparse
import os
import platform

import numpy as np
import pandas as pd

from formulations import AllocationProblem, max_min_fairness
from optim import Session, solve
from simulator import build_problem, example_table, parse_cluster, read_gavel_json, sample_jobs
from simulator.files import write_atomically

SCENARIOS = ("arrival", "departure", "arrival+departure")


def jobs_after(scenario: str, n: int) -> np.ndarray:
    """Rows (of the N+1 sampled jobs) active after ``scenario`` on the first N."""
    rows = np.arange(n + 1) if "arrival" in scenario else np.arange(n)
    return np.delete(rows, n // 2) if "departure" in scenario else rows


def subset(problem: AllocationProblem, rows: np.ndarray) -> AllocationProblem:
    """The jobs ``rows`` of ``problem`` on the same cluster."""
    return AllocationProblem(
        worker_types=problem.worker_types, capacities=problem.capacities, job_ids=problem.job_ids[rows],
        job_types=tuple(problem.job_types[i] for i in rows), scale_factors=problem.scale_factors[rows],
        weights=problem.weights[rows], throughputs=problem.throughputs[rows],
    )


def measure(num_jobs: int, scenario: str, table, variant: str = "perf") -> dict:
    gpus = max(1, num_jobs // 4)
    cluster = parse_cluster(",".join(f"{t}={gpus}" for t in table.worker_types))
    pool = build_problem(cluster, sample_jobs(table, num_jobs + 1, 0), table)
    session = Session("highs")
    session.solve(max_min_fairness.build(subset(pool, np.arange(num_jobs)), variant))
    after = subset(pool, jobs_after(scenario, num_jobs))
    model = max_min_fairness.build(after, variant).canonical()
    warm = session.solve(model)
    cold = solve(model, "highs")
    warm_ms = 1e3 * (warm.timings.translate + warm.timings.solve)
    cold_ms = 1e3 * (cold.timings.translate + cold.timings.solve)
    return {
        "jobs": num_jobs, "gpus_per_type": gpus, "scenario": scenario, "variant": variant, "rows": model.num_rows,
        "cols": model.num_vars, "build_ms": 1e3 * model.build_seconds, "cold_ms": cold_ms, "warm_ms": warm_ms,
        "speedup": cold_ms / warm_ms, "warm_delta_update_ms": 1e3 * warm.timings.translate,
        "warm_simplex_ms": 1e3 * warm.timings.solve, "warm_iterations": warm.iterations, "warm": session.warm,
        "cold_objective": cold.objective, "warm_objective": warm.objective,
        "relative_difference": abs(warm.objective - cold.objective) / max(1.0, abs(cold.objective)),
        "load_average_1m": os.getloadavg()[0],
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--variant", default="perf", choices=("perf", "agnostic"),
                        help="max_min_fairness variant (perf = max_min_fairness_perf)")
    parser.add_argument("--throughputs", default=None, help="Gavel JSON table (default: built-in)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None, help=(
        "CSV file for every run (its rows of other sizes, scenarios and variants are kept)"))
    args = parser.parse_args(argv)
    table = read_gavel_json(args.throughputs) if args.throughputs else example_table()
    rows = []
    for num_jobs in args.jobs:
        for scenario in args.scenarios:
            for rep in range(args.repeat):
                row = measure(num_jobs, scenario, table, args.variant) | {"repeat": rep}
                rows.append(row)
                print(f"{num_jobs:>7} {scenario:<18} cold {row['cold_ms']:9.1f} ms  warm {row['warm_ms']:8.1f} ms "
                      f"({row['speedup']:5.1f}x, {row['warm_iterations']} iterations)  objectives differ by "
                      f"{row['relative_difference']:.1e}  load {row['load_average_1m']:.2f}", flush=True)
    frame = pd.DataFrame(rows)
    frame["machine"] = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, " \
                       f"Python {platform.python_version()}"
    medians = frame.groupby(["jobs", "scenario"], sort=False)[["build_ms", "cold_ms", "warm_ms", "speedup"]].median()
    print(medians.round(1).to_string())
    if args.out:
        if os.path.exists(args.out):
            kept = pd.read_csv(args.out)
            key = ["jobs", "scenario", "variant"]
            rerun = kept[key].apply(tuple, axis=1).isin(set(frame[key].apply(tuple, axis=1)))
            frame = pd.concat([kept[~rerun], frame], ignore_index=True)
        write_atomically(args.out, frame.to_csv(index=False))
        print(f"wrote {args.out} ({len(frame)} rows)")


if __name__ == "__main__":
    main()
