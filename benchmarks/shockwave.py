"""Shockwave and its published baselines on the published dynamic-adaptation traces.

    python -m benchmarks.shockwave --data ../shared/data [--traces 120 220] [--policies shockwave]
                                   [--seeds 0 1 2]

Each trace runs on its published cluster, throughput file and configuration (120 jobs:
32 GPUs, ``tacc_throughputs.json``, ``tacc_32gpus.json``; 220 / 460 / 900 jobs: 64 / 128 /
256 GPUs, ``wisr_throughputs.json``, ``scale_{64,128,256}gpus.json``) with Shockwave's
simulator settings (120 s rounds, 20 s checkpoint/restore, completion forced at 1.5x the
isolated run time), in the default mode and with ``--gavel-compat`` (the published
simulator's batch-size rules and Gavel's defects). Shockwave is solved with HiGHS; the
baselines with the solver ``auto`` picks; AlloX in Shockwave's multi-GPU variant (alpha 0.2).

Writes ``benchmarks/results/shockwave.csv``: makespan, average JCT, worst FTF and unfair
fraction (FTF rho = JCT / (isolated BS-adapted run time x max(1, N/G)), unfair: rho > 1.05),
utilization, wall time of the whole simulation, and the re-plans' count and build /
translate / solve seconds (total, and the slowest re-plan), with the published figure
and the relative difference beside each metric we have one for. Runs one case at a time
so that wall times are not shared, and rewrites the file after each.

``--seeds``: one run per simulation seed, which is also the solver's random seed. MIP
optima are rarely unique and each re-plan's choice among them changes every later round,
so Shockwave's metrics move by about 1% from seed to seed; the median over seeds is
printed per trace, policy and mode.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from allocators.gavel.allox import SHOCKWAVE_ALLOX
from allocators.shockwave.config import read_shockwave_config
from simulator.engine import SimulationConfig, SimulationError
from simulator.simulate import default_solver, simulate

from .rows import write_rows


@dataclass(frozen=True)
class Case:
    jobs: int
    trace: str
    gpus: int
    throughputs: str
    config: str


CASES = (
    Case(120, "120_0.2_5_100_40_25_0,0.5,0.5_0.6,0.3,0.09,0.01_multigpu_dynamic.trace", 32,
         "tacc_throughputs.json", "tacc_32gpus.json"),
    Case(220, "220_0.2_5_100_25_4_0,0.5,0.5_0.6,0.3,0.09,0.01_multigpu_dynamic.trace", 64,
         "wisr_throughputs.json", "scale_64gpus.json"),
    Case(460, "460_0.2_5_100_10_1_0,0.5,0.5_0.6,0.3,0.09,0.01_multigpu_dynamic.trace", 128,
         "wisr_throughputs.json", "scale_128gpus.json"),
    Case(900, "900_0.2_5_100_5_15_0,0.5,0.5_0.6,0.3,0.09,0.01_multigpu_dynamic.trace", 256,
         "wisr_throughputs.json", "scale_256gpus.json"),
)
POLICIES = ("shockwave", "max_min_fairness", "finish_time_fairness", "min_total_duration", "allox",
            "max_sum_throughput_perf", "gandiva_fair")
#: (jobs, policy) -> published (makespan s, average JCT s, worst FTF, unfair fraction)
PUBLISHED = {
    (120, "shockwave"): (24197.0, 9958.0, 1.784, 0.050),
    (120, "max_min_fairness"): (33208.0, 11274.0, 2.947, 0.250),
}
METRICS = (("makespan", "makespan"), ("average_jct", "average_jct"), ("worst_ftf", "ftf_worst"),
           ("unfair_fraction", "ftf_unfair_fraction"))


def run_case(data: Path, case: Case, policy: str, compat: bool, seed: int = 0,
             rules: tuple[str, ...] | None = None) -> dict:
    """One run's row; ``rules``: Shockwave's published planner rules to turn on (None: as
    ``compat`` says)."""
    root = data / "shockwave"
    solver = "highs" if policy == "shockwave" else default_solver(policy)
    params = {"config": read_shockwave_config(root / "configurations" / case.config)} if policy == "shockwave" else (
        SHOCKWAVE_ALLOX if policy == "allox" else {})
    if rules is not None:
        params["published"] = rules
    row = {"jobs": case.jobs, "gpus": case.gpus, "policy": policy, "solver": solver, "gavel_compat": compat,
           "seed": seed,
           **{name: "" for name, _ in METRICS}, "utilization": "", "wall_s": "", "replans": "",
           "build_s": "", "translate_s": "", "solve_s": "", "slowest_replan_s": "", "most_jobs": "",
           **{f"published_{name}": "" for name, _ in METRICS}, **{f"{name}_diff": "" for name, _ in METRICS},
           "not_run": ""}
    tic = time.perf_counter()
    try:
        result = simulate(root / "traces" / case.trace, policy=policy, solver=solver, cluster=f"v100={case.gpus}",
                          throughputs=root / case.throughputs,
                          config=SimulationConfig.shockwave(gavel_compat=compat, seed=seed), policy_params=params)
    except SimulationError as exc:
        row["not_run"] = str(exc)
        return row
    wall = time.perf_counter() - tic
    s, solves = result.summary, result.solves
    row.update({name: round(s[key], 4) for name, key in METRICS})
    row.update(utilization=round(s["utilization"], 4), wall_s=round(wall, 2), replans=s["solves"],
               build_s=round(s["solver_build_seconds_total"], 3),
               translate_s=round(s["solver_translate_seconds_total"], 3),
               solve_s=round(s["solver_solve_seconds_total"], 3),
               slowest_replan_s=round(float(solves["seconds"].max(initial=0.0)), 3),
               most_jobs=int(solves["jobs"].max(initial=0)))
    published = PUBLISHED.get((case.jobs, policy))
    if published:
        for (name, key), value in zip(METRICS, published):
            row[f"published_{name}"] = value
            row[f"{name}_diff"] = f"{s[key] / value - 1:+.2%}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/shockwave.csv"))
    parser.add_argument("--traces", type=int, nargs="+", default=[c.jobs for c in CASES],
                        choices=[c.jobs for c in CASES], help="job counts of the traces to run")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--modes", nargs="+", default=["default", "compat"], choices=["default", "compat"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="simulation and solver seeds")
    args = parser.parse_args()
    rows = []
    for case in (c for c in CASES if c.jobs in args.traces):
        for policy in args.policies:
            for mode in args.modes:
                group = []
                for seed in args.seeds:
                    row = run_case(args.data, case, policy, mode == "compat", seed)
                    print({k: v for k, v in row.items() if v != ""}, flush=True)
                    group.append(row)
                    rows.append(row)
                    write_rows(rows, args.out)  # after every case: a long sweep keeps what it has
                if len(group) > 1:
                    print(median_line(group), flush=True)


def median_line(group: list[dict]) -> str:
    """Median and range over seeds of each metric of one trace, policy and mode."""
    done = [r for r in group if not r["not_run"]]
    head = f"{group[0]['jobs']} jobs, {group[0]['policy']}, compat={group[0]['gavel_compat']}: "
    if not done:
        return head + "not run"
    parts = []
    for name, _ in METRICS:
        values = [r[name] for r in done]
        fmt = "{:,.0f}" if min(values) >= 100 else "{:.4g}"
        low, mid, high = (fmt.format(v) for v in (min(values), statistics.median(values), max(values)))
        parts.append(f"{name} median {mid} [{low}, {high}]")
    return head + f"{len(done)} seeds, " + "; ".join(parts)


if __name__ == "__main__":
    main()
