"""The simulation-vs-real gap on the machine at hand, in one command.

    python -m benchmarks.real_vs_simulated --out DIR [--device cuda --model-size small]

1. **Profile**: steps/s of the reference workloads (ResNet, Transformer, Recommendation at
   each ``--batch-sizes``) at scale 1 (:func:`runtime_bridge.profiler.profile`).
2. **Trace**: ``--jobs`` jobs cycling over the profiled job types, each needing
   ``U(lo, hi)`` simulated seconds of work on one GPU at the profiled rate (``--work``),
   arriving ``--spacing`` simulated seconds apart (Gavel's 10-column format, ``jobs.trace``).
   The policy re-solves at most every ``--reset-interval`` (default: every round, so jobs
   share the GPUs round by round; Gavel's 1,920 s would leave a short trace nearly FIFO).
3. **Run** it for real under ``--policy`` (:func:`runtime_bridge.real_run.run_for_real`: every
   lease a Ray task training the job's reference model on its GPUs for the lease's length
   times ``--time-scale``) and simulate it with the same table, job by job compared.

``gap.json`` holds the figures: profile and run wall seconds, the run's ideal wall clock
(simulated makespan x time scale) and its overhead over that, steps credited over planned,
measured over profiled steps/s (per job and overall), and the JCT and makespan differences.
With the run's ``jobs.csv`` / ``leases.csv`` / ``fidelity.csv`` under ``DIR/run``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from runtime_bridge.profiler import local_cpu_cores, profile, resolve_device
from runtime_bridge.real_run import run_for_real
from runtime_bridge.workloads import WORKLOADS, WorkloadSpec
from simulator.cluster import parse_cluster
from simulator.engine import SimulationConfig
from simulator.files import write_atomically
from simulator.metrics import csv_text
from simulator.readers.traces import read_trace
from simulator.simulate import default_solver
from simulator.throughputs import ThroughputTable, write_gavel_json


def trace_text(table: ThroughputTable, jobs: int, work: tuple[float, float], spacing: float, seed: int) -> str:
    """Gavel 10-column lines: job ``i`` of type ``i mod types`` with ``U(work)`` seconds of
    one-GPU work at the table's rate (at least one step), arriving at ``i x spacing``."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(jobs):
        k = i % len(table.keys)
        job_type, rate = table.keys[k][0], float(table.isolated[k, 0])
        steps = max(1, round(rate * rng.uniform(*work)))
        lines.append(f"{job_type}\tcmd\t\t--num_steps\t0\t{steps}\t1\t1\t-1\t{i * spacing:g}\n")
    return "".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda")
    parser.add_argument("--model-size", default="tiny")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--batch-sizes", default="32")
    parser.add_argument("--gpus", type=int, help="cluster GPUs (default: all GPUs, or 2 CPU slots)")
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--work", default="120:300", help="LO:HI simulated seconds of work per job")
    parser.add_argument("--spacing", type=float, default=30.0)
    parser.add_argument("--policy", default="max_min_fairness_perf")
    parser.add_argument("--round", type=float, default=60.0)
    parser.add_argument("--reset-interval", type=float, help="seconds between re-solves at most (default: a round)")
    parser.add_argument("--time-scale", type=float, default=0.1)
    parser.add_argument("--seconds", type=float, default=3.0, help="profile: seconds per measurement")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(args.device)
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    specs = [WorkloadSpec(name, b, args.model_size, args.seed) for name in args.workloads.split(",") for b in sizes]

    started = time.perf_counter()
    table = profile(specs, [1], device, seconds=args.seconds,
                    on_measurement=lambda m: print(f"profile {m.spec.job_type}: {m.steps_per_second:.2f} steps/s",
                                                   flush=True))
    profile_seconds = time.perf_counter() - started
    write_gavel_json(table, args.out / "profile.json")
    lo, hi = (float(x) for x in args.work.split(":"))
    write_atomically(args.out / "jobs.trace", trace_text(table, args.jobs, (lo, hi), args.spacing, args.seed))
    gpus = args.gpus or (torch.cuda.device_count() if device.type == "cuda" else min(2, local_cpu_cores()))
    worker = table.worker_types[0]

    started = time.perf_counter()
    trace = read_trace(args.out / "jobs.trace")
    run = run_for_real(trace, policy=args.policy, checkpoints=args.out / "checkpoints",
                       time_scale=args.time_scale, model_size=args.model_size, address=None, slots=gpus,
                       compare_simulation=True, solver=default_solver(args.policy),
                       cluster=parse_cluster(f"{worker}={gpus}"), throughputs=table, config=SimulationConfig(
                           round_length=args.round, reset_interval=args.round if args.reset_interval is None
                           else args.reset_interval))
    run_seconds = time.perf_counter() - started
    result, leases = run.result, run.leases
    result.write(args.out / "run")
    write_atomically(args.out / "run" / "leases.csv", csv_text(leases))
    write_atomically(args.out / "run" / "fidelity.csv", csv_text(run.fidelity.jobs))

    ok = leases["reason"] == ""
    profiled = np.array([table.isolated[table.index_of(job_type, 1), 0] for job_type in trace.job_types])
    ideal = result.summary["simulated_makespan"] * args.time_scale
    gap = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "model_size": args.model_size, "gpus": gpus, "jobs": args.jobs,
        "policy": args.policy, "round_s": args.round, "time_scale": args.time_scale,
        "preemptions": int(result.summary["preemptions"]),
        "profile_wall_s": profile_seconds,
        "profiled_steps_per_s": {key[0]: float(rate) for key, rate in zip(table.keys, table.isolated[:, 0])},
        "run_wall_s": run_seconds, "ideal_wall_s": ideal, "run_overhead": run_seconds / ideal - 1,
        "leases": int(leases["round"].size), "failed_leases": int((~ok).sum()),
        "lease_budget_used": float(leases["seconds"][ok].sum() / leases["budget_seconds"][ok].sum()),
        "credited_over_planned": result.summary["lease_credited_over_planned"],
        "measured_over_profiled": float(leases["trained"][ok].sum()
                                        / (leases["seconds"][ok] * profiled[leases["job"][ok]]).sum()),
        "measured_over_profiled_per_job": np.round(result.jobs["measured_over_table"], 4).tolist(),
        **{k: result.summary[k] for k in ("average_jct", "simulated_average_jct", "average_jct_difference",
                                           "makespan", "simulated_makespan", "makespan_difference",
                                           "mean_abs_jct_difference", "max_abs_jct_difference")},
    }
    write_atomically(args.out / "gap.json", json.dumps(gap, indent=1) + "\n")
    print(json.dumps(gap, indent=1))
    return gap


if __name__ == "__main__":
    main()
