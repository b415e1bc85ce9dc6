"""Size and solve time of ``max_min_fairness_packed`` (space sharing) against job count.

    python -m benchmarks.packed --throughputs ../shared/data/gavel/simulation_throughputs.json \\
        --jobs 128 256 512 1024 --full-up-to 512 --out benchmarks/results/max_min_fairness_packed.csv

Single-GPU jobs sampled with seed 0, cluster with jobs/4 GPUs of each worker type, HiGHS.
Per size: the candidate pairs (equal scale factor, co-located rates not both 0), the LP
size, the time to find the pairs and build the model, and the solve time by column
generation (what the policy runs); up to ``--full-up-to`` jobs also the full LP with
every pair column, whose objective must match.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import pandas as pd

from formulations import max_min_fairness
from optim import solve
from optim.column_generation import solve_by_column_generation
from simulator import (
    build_problem,
    example_table,
    parse_cluster,
    read_gavel_json,
    sample_jobs,
)
from simulator.files import write_atomically


def measure(num_jobs: int, table, full: bool, backend: str = "highs") -> dict:
    gpus = max(1, num_jobs // 4)
    cluster = parse_cluster(",".join(f"{t}={gpus}" for t in table.worker_types))
    jobs = sample_jobs(table, num_jobs, 0)
    t0 = time.perf_counter()
    problem = build_problem(cluster, jobs, table, pairs=True)
    pairs_s = time.perf_counter() - t0
    model = max_min_fairness.build(problem, "packed")
    canon = model.canonical()
    initial = np.zeros(model.blocks["x"].shape, dtype=bool)
    initial[:num_jobs] = True
    t0 = time.perf_counter()
    result = solve_by_column_generation(model, backend, block="x", initial=initial)
    row = {
        "jobs": num_jobs, "gpus_per_type": gpus, "pairs": len(problem.pairs), "cols": canon.num_vars,
        "rows": canon.num_rows, "nonzeros": canon.num_nonzeros, "pairs_ms": 1e3 * pairs_s,
        "build_ms": 1e3 * canon.build_seconds, "cg_translate_ms": 1e3 * result.timings.translate,
        "cg_solve_ms": 1e3 * result.timings.solve, "cg_wall_ms": 1e3 * (time.perf_counter() - t0),
        "cg_note": result.notes[-1], "objective": result.objective, "status": str(result.status),
        "full_solve_ms": np.nan, "full_objective": np.nan,
    }
    if full:
        full_result = solve(canon, backend)
        row["full_solve_ms"] = 1e3 * full_result.timings.solve
        row["full_objective"] = full_result.objective
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="+", default=[128, 256, 512, 1024])
    parser.add_argument("--throughputs", default=None, help="Gavel JSON table (default: built-in)")
    parser.add_argument("--full-up-to", type=int, default=512, help="also solve the full LP up to this many jobs")
    parser.add_argument("--out", default=None, help="CSV file for the results")
    args = parser.parse_args(argv)
    table = read_gavel_json(args.throughputs) if args.throughputs else example_table()
    rows = []
    for num_jobs in args.jobs:
        row = measure(num_jobs, table, num_jobs <= args.full_up_to)
        rows.append(row)
        print(f"{num_jobs:>6} jobs  {row['pairs']:>8} pairs  {row['cols']:>9} cols  {row['rows']:>6} rows  "
              f"{row['nonzeros']:>9} nnz  pairs {row['pairs_ms']:7.0f} ms  build {row['build_ms']:7.0f} ms  "
              f"column generation {row['cg_wall_ms']:8.0f} ms  full LP {row['full_solve_ms']:8.0f} ms  "
              f"objective {row['objective']:.9f} / {row['full_objective']:.9f}", flush=True)
    frame = pd.DataFrame(rows)
    frame["machine"] = f"{platform.processor() or platform.machine()}, {platform.python_version()}"
    if args.out:
        write_atomically(args.out, frame.to_csv(index=False))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
