"""Size and solve time of ``max_min_fairness_packed`` (space sharing) against job count.

    python -m benchmarks.packed --throughputs ../shared/data/gavel/simulation_throughputs.json \\
        --jobs 128 256 512 1024 2048 --full-up-to 512 --out benchmarks/results/max_min_fairness_packed.csv

Single-GPU jobs sampled with seed 0, cluster with jobs/4 GPUs of each worker type, HiGHS.
Per size: the candidate pairs (equal scale factor, co-located rates not both 0) and the
time to find them; then column generation as the policy runs it
(:mod:`formulations.pair_generation`: no pair column is built until priced in), with its
master LPs, pairs generated, certificate and the LP it ends with; up to ``--full-up-to``
jobs also the full LP with every pair column, whose objective must match, and up to
``--explicit-up-to`` jobs the full model solved by column generation over its explicit
columns (exact reduced costs from the built matrix; the cross-check where the full LP is
too large to solve).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import pandas as pd

from formulations import max_min_fairness
from formulations.pair_generation import solve_packed
from optim import SolveOptions, solve
from optim.column_generation import solve_by_column_generation
from simulator import (
    build_problem,
    example_table,
    parse_cluster,
    read_gavel_json,
    sample_jobs,
)
from simulator.files import write_atomically


def measure(num_jobs: int, table, full: bool, explicit: bool, backend: str = "highs") -> dict:
    gpus = max(1, num_jobs // 4)
    cluster = parse_cluster(",".join(f"{t}={gpus}" for t in table.worker_types))
    jobs = sample_jobs(table, num_jobs, 0)
    t0 = time.perf_counter()
    problem = build_problem(cluster, jobs, table, pairs=True)
    pairs_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, model, result, info = solve_packed(problem, lambda p: max_min_fairness.build(p, "packed"), backend,
                                          SolveOptions())
    cg_wall = time.perf_counter() - t0
    final = model.canonical()
    row = {
        "jobs": num_jobs, "gpus_per_type": gpus, "pairs": len(problem.pairs),
        "pair_cells": len(problem.pairs) * problem.num_types,
        "pairs_ms": 1e3 * pairs_s, "cg_rounds": info.rounds, "cg_pairs_generated": info.generated.size,
        "cg_final_cols": final.num_vars, "rows": final.num_rows, "cg_certificate": info.max_reduced_cost,
        "cg_translate_ms": 1e3 * result.timings.translate, "cg_solve_ms": 1e3 * result.timings.solve,
        "cg_wall_ms": 1e3 * cg_wall, "objective": result.objective, "status": str(result.status),
        "full_build_ms": np.nan, "full_solve_ms": np.nan, "full_objective": np.nan,
        "explicit_cg_ms": np.nan, "explicit_objective": np.nan,
    }
    if full or explicit:
        t0 = time.perf_counter()
        model = max_min_fairness.build(problem, "packed")
        canon = model.canonical()
        row["full_build_ms"] = 1e3 * (time.perf_counter() - t0)
    if full:
        full_result = solve(canon, backend)
        row["full_solve_ms"] = 1e3 * full_result.timings.solve
        row["full_objective"] = full_result.objective
    if explicit:
        singles = np.zeros(model.blocks["x"].shape, dtype=bool)
        singles[:num_jobs] = True
        t0 = time.perf_counter()
        explicit_result = solve_by_column_generation(canon, backend, block="x", initial=singles)
        row["explicit_cg_ms"] = 1e3 * (time.perf_counter() - t0)
        row["explicit_objective"] = explicit_result.objective
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="+", default=[128, 256, 512, 1024])
    parser.add_argument("--throughputs", default=None, help="Gavel JSON table (default: built-in)")
    parser.add_argument("--full-up-to", type=int, default=512, help="also solve the full LP up to this many jobs")
    parser.add_argument("--explicit-up-to", type=int, default=0,
                        help="also build the full model up to this many jobs and price its explicit columns")
    parser.add_argument("--out", default=None, help="CSV file for the results")
    args = parser.parse_args(argv)
    table = read_gavel_json(args.throughputs) if args.throughputs else example_table()
    rows = []
    for num_jobs in args.jobs:
        row = measure(num_jobs, table, num_jobs <= args.full_up_to, num_jobs <= args.explicit_up_to)
        rows.append(row)
        print(f"{num_jobs:>6} jobs  {row['pairs']:>9} pairs  {row['pair_cells']:>9} pair cells  "
              f"pairs {row['pairs_ms']:6.0f} ms  column generation {row['cg_wall_ms']:7.0f} ms "
              f"(solve {row['cg_solve_ms']:6.0f} ms, {row['cg_rounds']} LPs, {row['cg_pairs_generated']} pairs)  "
              f"full LP build {row['full_build_ms']:6.0f} ms solve {row['full_solve_ms']:7.0f} ms  "
              f"explicit columns {row['explicit_cg_ms']:7.0f} ms  objective {row['objective']:.10f} / "
              f"{row['full_objective']:.10f} / {row['explicit_objective']:.10f}", flush=True)
    frame = pd.DataFrame(rows)
    frame["machine"] = f"{platform.processor() or platform.machine()}, {platform.python_version()}"
    if args.out:
        write_atomically(args.out, frame.to_csv(index=False))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
